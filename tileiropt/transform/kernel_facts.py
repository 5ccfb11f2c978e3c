"""Small facts about a kernel body that decide how it may be autotuned: which pointer
arguments it writes in place, whether it uses atomics, which arguments are runtime sizes."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_SIZE_NAME = re.compile(
    r"^(n|m|k|b|h|l|t|d|s|z|v|bs|numel)$|^n_|_n$|^num_|size|len|cols|rows|elem|dim|ctx|seq|batch|token|vocab"
    r"|hidden|width|height|count|^[mnk]_|_[mnk]$",
    re.IGNORECASE,
)
_NOT_SIZE = re.compile(r"ptr|stride|eps|scale|seed|offset|^p_|prob|alpha|beta|temp|value|block|tile|group|warps|stages"
                       r"|^(has|have|use|is|enable)_", re.IGNORECASE)
_ATOMICS = {"atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and",
            "atomic_or", "atomic_xor"}


@dataclass
class KernelFacts:
    loaded: set[str] = field(default_factory=set)  # pointer params read through tl.load
    stored: set[str] = field(default_factory=set)  # pointer params written through tl.store
    atomics: list[int] = field(default_factory=list)  # lines of atomic operations

    @property
    def in_place(self) -> list[str]:
        return sorted(self.loaded & self.stored)


def _base_name(expr: ast.expr) -> str | None:
    """The leftmost name of a pointer expression: `x_ptr + offs` -> x_ptr."""
    while True:
        if isinstance(expr, ast.BinOp):
            expr = expr.left
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Name):
            return expr.id
        else:
            return None


def kernel_facts(function_source: str, params: list[str]) -> KernelFacts:
    """Facts from the source of one kernel function (decorators included or not)."""
    facts = KernelFacts()
    tree = ast.parse(function_source)
    aliases: dict[str, str] = {}  # local pointer variables: ptrs = x_ptr + offs
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            base = _base_name(node.value)
            if base in params:
                aliases[node.targets[0].id] = base
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        if name in _ATOMICS:
            facts.atomics.append(node.lineno)
            continue
        if name not in ("load", "store") or not node.args:
            continue
        base = _base_name(node.args[0])
        base = aliases.get(base, base) if base else None
        if base in params:
            (facts.loaded if name == "load" else facts.stored).add(base)
    return facts


def size_arguments(params: list[str]) -> list[str]:
    """Parameters that look like problem sizes (`n_cols`, `M`, `H_dim`; not pointers, strides,
    block sizes or flags), to key an autotuner on. Constexpr sizes count: they are launch values."""
    return [name for name in params if _SIZE_NAME.search(name) and not _NOT_SIZE.search(name)]
