"""Dropping the pointer arithmetic a TMA twin no longer reads.

Once its tile loads and stores go through descriptors, a twin keeps assignments nothing reads
(`a_ptrs = a_ptr + ...`, `a_ptrs += BLOCK_K * stride_ak`). An assignment is dropped when its name is read
nowhere in the twin and its value calls only pure functions (index arithmetic, `tl.arange`, `tl.where`, ...),
until none is left; names the original kernel already left unread stay as they were. This looks at the
rewritten code, which the kernel model never saw, so it reads libcst's tree.
"""

from __future__ import annotations

from collections import Counter

import libcst as cst

from tileiropt.classify.names import TL, callee

PURE_CALLS = frozenset({TL + "arange", TL + "program_id", TL + "num_programs", TL + "cdiv", "triton.cdiv", "cdiv",
                        "min", "max", TL + "multiple_of", TL + "max_contiguous", TL + "max_constancy", TL + "where",
                        TL + "minimum", TL + "maximum", TL + "zeros", TL + "full", TL + "broadcast_to", "int"})


class _NameCounter(cst.CSTVisitor):
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] += 1

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `a.b` reads `a`; `b` is not a name
        return False


def name_counts(node: cst.CSTNode) -> Counter[str]:
    """How often each name occurs in `node` (attributes of `a.b` are not names)."""
    counter = _NameCounter()
    node.visit(counter)
    return counter.counts


class _Usage(cst.CSTVisitor):
    """Reads of each name, and the single-target assignments of each (pure or not)."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.reads: Counter[str] = Counter()
        self.assigned: dict[str, list[cst.SimpleStatementLine]] = {}
        self.impure: set[str] = set()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        target, value = _single_assignment(node)
        if target is None or value is None:
            return True
        self.assigned.setdefault(target, []).append(node)
        if not _pure(value, self.aliases):
            self.impure.add(target)
        for name, count in name_counts(value).items():
            if name != target:
                self.reads[name] += count
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.reads[node.value] += 1

    def dead(self) -> set[str]:
        """Names assigned only purely and read nowhere."""
        return {n for n in self.assigned if self.reads[n] == 0 and n not in self.impure}


def _single_assignment(line: cst.SimpleStatementLine) -> tuple[str | None, cst.BaseExpression | None]:
    if len(line.body) != 1:
        return None, None
    small = line.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value, small.value
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return small.target.value, small.value
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
        return small.target.value, small.value
    return None, None


class _Impure(cst.CSTVisitor):
    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        is_cast = isinstance(node.func, cst.Attribute) and node.func.attr.value == "to"
        if callee(node, self.aliases) not in PURE_CALLS and not is_cast:
            self.found = True


def _pure(value: cst.BaseExpression, aliases: dict[str, str]) -> bool:
    visitor = _Impure(aliases)
    value.visit(visitor)
    return not visitor.found


def dead_names(function: cst.FunctionDef, aliases: dict[str, str]) -> set[str]:
    """The names `function` assigns purely and never reads."""
    usage = _Usage(aliases)
    function.visit(usage)
    return usage.dead()


class _Remove(cst.CSTTransformer):
    def __init__(self, statements: set[int]):
        super().__init__()
        self.statements = statements

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        kept = [s for s, o in zip(updated.body, original.body) if id(o) not in self.statements]
        if len(kept) == len(updated.body):
            return updated
        return updated.with_changes(body=kept or [cst.SimpleStatementLine([cst.Pass()])])


def prune(function: cst.FunctionDef, aliases: dict[str, str], dead_before: set[str]) -> cst.FunctionDef:
    """Drop the pointer arithmetic the descriptors made dead (names dead in the original stay)."""
    for _ in range(16):
        usage = _Usage(aliases)
        function.visit(usage)
        dead = usage.dead() - dead_before
        if not dead:
            break
        statements = {id(s) for n in dead for s in usage.assigned[n]}
        pruned = function.visit(_Remove(statements))
        assert isinstance(pruned, cst.FunctionDef)  # `_Remove` rewrites the blocks inside, never the def itself
        function = pruned
    return function
