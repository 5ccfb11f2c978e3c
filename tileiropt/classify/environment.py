"""Module-level `if` tests decided by the environment, as the module decides them at import.

A package may choose between two definitions of one helper by an environment variable:

    if os.environ.get("FLA_USE_FAST_OPS", "0") == "1":
        @triton.jit
        def log(x): return libdevice.fast_logf(x)
    else:
        @triton.jit
        def log(x): return tl.log(x)

Which one runs is known without running the module: the test reads only the environment. `decide` evaluates
such a test against this process's environment (the shell tileiropt runs from; a variable given to the program
alone, or set by its own code, is not seen), with the variables tileiropt itself sets read as the TileIR backend
runs: `ENABLE_TILE` as "1" (what the lint is for), `TRITON_INTERPRET` undecided (set per process, the interpreter
on a machine without a GPU). It understands `os.environ.get(NAME[, DEFAULT])`,
`os.getenv`, `os.environ[NAME]`, `NAME in os.environ`, string and integer constants, `==`, `!=`, `in`, `not in`,
`not`, `and`, `or`, `.lower()`, `.upper()`, `.strip()`, `int()`, `bool()`. Any other test is undecided (None).
`names_read` lists the variables a source names that way, for the lint cache's key.

A test that asks whether the GPU is a Blackwell one is read as TileIR runs too, true (the Triton-to-tile-IR
backend is enabled on Blackwell GPUs): a name, attribute or argument-less call named `blackwell`, `is_blackwell`,
`has_blackwell`, `IS_NVIDIA_BLACKWELL` and the like (any case) standing as the test itself, under `not`, `and` or
`or`; never inside a comparison or as an argument. Other names (`IS_PRE_BLACKWELL`, `BLACKWELL_UNSUPPORTED`) and
calls with arguments (`check_shared_mem("hopper")`) stay undecided.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

_UNDECIDED = object()
AS_TILEIR_RUNS = {"ENABLE_TILE": "1"}  # variables tileiropt sets, as the TileIR backend runs
SET_PER_PROCESS = frozenset({"TRITON_INTERPRET"})  # variables tileiropt sets differently in each of its processes
_STRING_METHODS = ("lower", "upper", "strip")
_TILEIR_GPU = re.compile(r"(is_|has_)?(nvidia_|cuda_|gpu_)?blackwell(_gpu|_device)?", re.IGNORECASE)  # TileIR's GPUs
_READ = re.compile(r"""(?:environ\.get|getenv|environ)\s*[\(\[]\s*['"]([A-Za-z_]\w*)['"]"""
                   r"""|['"]([A-Za-z_]\w*)['"]\s+(?:not\s+)?in\s+(?:os\.)?environ\b""")


def decide(test: ast.expr, environ: Mapping[str, str] | None = None) -> bool | None:
    """The truth of a module-level `if` test that reads only the environment; None when it reads anything else."""
    view = {**(os.environ if environ is None else environ), **AS_TILEIR_RUNS}
    value = _truth(test, {k: v for k, v in view.items() if k not in SET_PER_PROCESS})
    return None if value is _UNDECIDED else bool(value)


def _truth(node: ast.expr, environ: Mapping[str, str]) -> Any:
    """A test's value where it stands as a truth test: a device test naming Blackwell is true here alone."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = _truth(node.operand, environ)
        return _UNDECIDED if operand is _UNDECIDED else not operand
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, environ, _truth)
    if _names_tileir_gpu(node):
        return True
    return _value(node, environ)


def names_read(source: str) -> list[str]:
    """Environment variables `source` reads by a literal name (sorted, once each)."""
    if "environ" not in source and "getenv" not in source:  # most files: no scan
        return []
    return sorted({a or b for a, b in _READ.findall(source)})


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _is_environ(node: ast.expr) -> bool:
    return _dotted(node) in ("os.environ", "environ")


def _value(node: ast.expr, environ: Mapping[str, str]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, bool, type(None))):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_value(item, environ) for item in node.elts]
        return _UNDECIDED if any(item is _UNDECIDED for item in items) else tuple(items)
    if isinstance(node, ast.Subscript) and _is_environ(node.value):
        key = _value(node.slice, environ)
        if key in SET_PER_PROCESS:
            return _UNDECIDED
        return environ[key] if isinstance(key, str) and key in environ else _UNDECIDED  # KeyError: undecided
    if isinstance(node, ast.Call) and not any(k.arg is None for k in node.keywords):
        return _call(node, environ)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = _value(node.operand, environ)
        return _UNDECIDED if operand is _UNDECIDED else not operand
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, environ)
    if isinstance(node, ast.Compare):
        return _compare(node, environ)
    return _UNDECIDED


def _names_tileir_gpu(node: ast.expr) -> bool:
    """`IS_NVIDIA_BLACKWELL`, `utils.is_blackwell`, `is_blackwell()`: the last name of a dotted name (or of an
    argument-less call's function) asks whether the GPU is a Blackwell one."""
    if isinstance(node, ast.Call):
        if node.args or node.keywords:
            return False
        node = node.func
    name = _dotted(node)
    return name is not None and bool(_TILEIR_GPU.fullmatch(name.rsplit(".", 1)[-1]))


def _call(node: ast.Call, environ: Mapping[str, str]) -> Any:
    args = [_value(a, environ) for a in node.args]
    if any(a is _UNDECIDED for a in args) or node.keywords:
        return _UNDECIDED
    name = _dotted(node.func)
    if name in ("os.environ.get", "environ.get", "os.getenv", "getenv") and 1 <= len(args) <= 2 \
            and isinstance(args[0], str):
        return _UNDECIDED if args[0] in SET_PER_PROCESS else environ.get(args[0], args[1] if len(args) == 2 else None)
    if name in ("int", "bool") and len(args) == 1:
        try:
            return int(args[0]) if name == "int" else bool(args[0])
        except (TypeError, ValueError):
            return _UNDECIDED  # the module would raise at import: not a branch to choose
    if isinstance(node.func, ast.Attribute) and node.func.attr in _STRING_METHODS and not args:
        target = _value(node.func.value, environ)
        return getattr(target, node.func.attr)() if isinstance(target, str) else _UNDECIDED
    return _UNDECIDED


def _bool_op(node: ast.BoolOp, environ: Mapping[str, str], value: Callable[..., Any] | None = None) -> Any:
    result: Any = None
    for operand in node.values:  # Python's short-circuit: an undecided operand decides nothing
        result = (value or _value)(operand, environ)
        if result is _UNDECIDED:
            return _UNDECIDED
        if isinstance(node.op, ast.And) and not result or isinstance(node.op, ast.Or) and result:
            return result
    return result


def _compare(node: ast.Compare, environ: Mapping[str, str]) -> Any:
    if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) and _is_environ(node.comparators[0]):
        key = _value(node.left, environ)
        if not isinstance(key, str) or key in SET_PER_PROCESS:
            return _UNDECIDED
        return (key in environ) == isinstance(node.ops[0], ast.In)
    left = _value(node.left, environ)
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _value(right_node, environ)
        if left is _UNDECIDED or right is _UNDECIDED:
            return _UNDECIDED
        if isinstance(op, ast.Eq):
            holds = left == right
        elif isinstance(op, ast.NotEq):
            holds = left != right
        elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (tuple, str)):
            if isinstance(right, str) and not isinstance(left, str):
                return _UNDECIDED
            holds = (left in right) == isinstance(op, ast.In)
        else:
            return _UNDECIDED
        if not holds:
            return False
        left = right
    return True
