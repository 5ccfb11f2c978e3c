"""What each parameter of a kernel is: an address, a runtime integer size, a constexpr, and which
addresses the kernel reads, writes or updates atomically. Derived from the same dataflow as the
classification (`facts.py`), following the arguments passed to JIT helpers, so that classify, the
lint rules and apply agree on one model of the kernel.

A parameter is a *pointer* when an address the kernel (or a helper it passes the parameter to)
loads, stores, updates atomically, or builds a block pointer or tensor descriptor from, is based on
it (`x_ptr + offs`, `X += row * stride`, `tl.make_block_ptr(base=X, ...)`). A *size* is an integer
parameter that is never an address and is named like a problem size (`n_cols`, `M`, `seq_len`); an
autotuner may be keyed on sizes only: Triton keys on the value of each key argument, and a tensor's
value is the tensor itself (every new tensor would tune again and stay referenced).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from tileiropt.classify.facts import MAKE_DESCRIPTOR, FactsBuilder, FunctionFacts, Value

_SIZE_NAME = re.compile(
    r"^(n|m|k|b|h|l|t|d|s|z|v|bs|numel)$|^n_|_n$|^num_|size|len|cols|rows|elem|dim|ctx|seq|batch|token|vocab"
    r"|hidden|width|height|count|^[mnk]_|_[mnk]$",
    re.IGNORECASE,
)
_NOT_SIZE = re.compile(r"ptr|stride|eps|scale|seed|offset|^p_|prob|alpha|beta|temp|value|block|tile|group|warps|stages"
                       r"|^(has|have|use|is|enable)_", re.IGNORECASE)
_INTEGER_ANNOTATIONS = {"int", "tl.int32", "tl.int64", "tl.constexpr", "triton.language.constexpr", "constexpr",
                        "tl.uint32", "tl.uint64"}


@dataclass
class ParamUse:
    """How a JIT function uses its parameters (helpers it passes them to included)."""

    pointers: set[str] = field(default_factory=set)  # used as (the base of) an address
    loaded: set[str] = field(default_factory=set)  # read through a load
    stored: set[str] = field(default_factory=set)  # written through a store
    atomic_lines: list[int] = field(default_factory=list)  # lines of atomic updates (helpers' included)

    @property
    def in_place(self) -> list[str]:
        """Pointers read and written: an autotuner re-running the kernel must restore them."""
        return sorted(self.loaded & self.stored)


class ParamAnalysis:
    """`ParamUse` per JIT function of one module, memoised, helpers followed through their arguments."""

    def __init__(self, builder: FactsBuilder):
        self.builder = builder
        self._done: dict[str, ParamUse] = {}
        self._active: set[str] = set()

    def use(self, node: ast.FunctionDef) -> ParamUse:
        if node.name in self._done:
            return self._done[node.name]
        if node.name in self._active:  # recursion: what is known so far
            return ParamUse()
        self._active.add(node.name)
        result = self._compute(node, self.builder.facts(node))
        self._active.discard(node.name)
        self._done[node.name] = result
        return result

    def _compute(self, node: ast.FunctionDef, facts: FunctionFacts) -> ParamUse:
        use = ParamUse()
        for access in facts.accesses:
            use.pointers |= access.bases
            if access.kind == "load":
                use.loaded |= access.bases
            elif access.kind in ("store", "atomic"):
                use.stored |= access.bases
            if access.kind == "atomic":
                use.atomic_lines.append(access.line)
        for call in facts.calls:
            if call.name in MAKE_DESCRIPTOR and call.args:
                use.pointers |= call.args[0].bases
            callee = self._helper(call.node)
            if callee is None:
                continue
            inner = self.use(callee)
            for param, value in _bind(callee, call.node, call.args, call.keywords):
                if param in inner.pointers:
                    use.pointers |= value.bases
                if param in inner.loaded:
                    use.loaded |= value.bases
                if param in inner.stored:
                    use.stored |= value.bases
            if inner.atomic_lines:
                use.atomic_lines.append(call.line)
        params = _param_names(node)
        use.pointers &= params
        use.loaded &= params
        use.stored &= params
        use.atomic_lines = sorted(set(use.atomic_lines))
        return use

    def _helper(self, call: ast.Call) -> ast.FunctionDef | None:
        func = call.func
        if isinstance(func, ast.Name):
            return self.builder.functions.get(func.id)
        return None


def _param_names(node: ast.FunctionDef) -> set[str]:
    args = node.args
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _bind(callee: ast.FunctionDef, call: ast.Call, args: list[Value], keywords: dict[str, Value]
          ) -> list[tuple[str, Value]]:
    """(callee parameter, argument value) pairs of a helper call."""
    names = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
    pairs = [(name, value) for name, value in zip(names, args, strict=False)]
    pairs += [(name, value) for name, value in keywords.items() if name != "**"]
    return pairs


def is_size_param(name: str, annotation: str | None, default: str | None, pointers: set[str]) -> bool:
    """An integer problem size: never an address, not annotated or defaulted as anything but an integer,
    and named like a size (not a stride, block size, flag or scale)."""
    if name in pointers or not _SIZE_NAME.search(name) or _NOT_SIZE.search(name):
        return False
    if annotation is not None and annotation.replace(" ", "") not in _INTEGER_ANNOTATIONS:
        return False
    if default is not None:
        try:
            value = ast.literal_eval(default)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return True
        return type(value) is int
    return True
