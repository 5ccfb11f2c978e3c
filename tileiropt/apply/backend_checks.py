"""Host code that tells Triton's backends apart by name, widened to take in TileIR.

Under nvtriton with `ENABLE_TILE=1` the active target's backend is "tileir", not "cuda": a file that tests
`get_current_target().backend == "cuda"` (the tutorials' `is_cuda()`) takes its non-NVIDIA branch there -- AMD's
autotune configs in the matmul tutorial, no TMA in the grouped GEMM, no FP8 path. NVIDIA's port of the tutorials
widens every such check at its call sites (`is_cuda() or is_tileir()`); apply widens the comparison itself, once,
where it is written: `backend in ("cuda", "tileir")`. On every backend but "tileir" the two comparisons agree, so
the PTX path is untouched. A file that names the "tileir" backend itself has chosen where TileIR goes: it is left
as its author wrote it.
"""

from __future__ import annotations

import ast

import libcst as cst

from tileiropt.contract.phase_records import Change

CUDA, TILEIR = "cuda", "tileir"
_WHY = ('under nvtriton the active backend is "tileir": this test was False there, so the file took its '
        'non-NVIDIA branch')


def _is_backend(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "backend"


def _is_string(node: ast.expr, value: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


def _names_tileir(tree: ast.Module) -> bool:
    """The file compares a backend with "tileir" itself (an `is_tileir()` of its own, as NVIDIA's port has)."""
    return any(isinstance(node, ast.Compare) and any(_is_string(n, TILEIR) for n in (node.left, *node.comparators))
               and any(_is_backend(n) for n in (node.left, *node.comparators)) for node in ast.walk(tree))


def _host_nodes(tree: ast.Module, kernels: set[str]) -> list[ast.AST]:
    """The file's nodes outside its JIT functions (`kernels`, as discovery found them: a kernel's comparisons are
    Triton's, which has no `in`)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in kernels:
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def cuda_checks(tree: ast.Module, source: str, kernels: set[str]) -> list[Change]:
    """Each `<target>.backend == "cuda"` (or `!=`, either way round) of the file's host code, as the change apply
    makes to it; none where the file never asks for the current target or names the "tileir" backend itself."""
    if "get_current_target" not in source or _names_tileir(tree):
        return []
    changes = []
    for node in _host_nodes(tree, kernels):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.Eq, ast.NotEq))):
            continue
        left, right = node.left, node.comparators[0]
        if (_is_backend(left) and _is_string(right, CUDA)) or (_is_string(left, CUDA) and _is_backend(right)):
            target = ast.unparse(left if _is_backend(left) else right)
            operator = "in" if isinstance(node.ops[0], ast.Eq) else "not in"
            changes.append(Change(line=node.lineno, what=f'`{target} {operator} ("{CUDA}", "{TILEIR}")`', why=_WHY))
    return sorted(changes, key=lambda change: change.line)


def _cst_string(node: cst.BaseExpression, value: str) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) and node.evaluated_value == value


def _cst_backend(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "backend"


class WidenCudaChecks(cst.CSTTransformer):
    """`x.backend == "cuda"` -> `x.backend in ("cuda", "tileir")`; `!=` -> `not in`, outside the JIT functions
    `kernels`. Run only on a file `cuda_checks` found checks in (the same test, on the concrete tree)."""

    def __init__(self, kernels: set[str]):
        super().__init__()
        self.kernels = kernels

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node.name.value not in self.kernels

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression:
        if len(updated.comparisons) != 1:
            return updated
        target = updated.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return updated
        left, right = updated.left, target.comparator
        if _cst_string(left, CUDA) and _cst_backend(right):
            left, right = right, left
        elif not (_cst_backend(left) and _cst_string(right, CUDA)):
            return updated
        quote = "'" if isinstance(right, cst.SimpleString) and right.value.startswith("'") else '"'
        widened = cst.parse_expression(f"({quote}{CUDA}{quote}, {quote}{TILEIR}{quote})")
        operator = cst.In() if isinstance(target.operator, cst.Equal) else cst.NotIn()
        return updated.with_changes(left=left, comparisons=[target.with_changes(operator=operator,
                                                                                comparator=widened)])


def widen(module: cst.Module, kernels: set[str]) -> cst.Module:
    """`module` with each backend test for "cuda" outside the JIT functions `kernels` widened to take in "tileir"."""
    return module.visit(WidenCudaChecks(kernels))
