"""Kernels made by assignment at module level, with no decorator: a plain `def`, then `k = triton.jit(k)`.

Some libraries never decorate their kernels. They write the `def`, then apply Triton's decorators (and their own
wrappers) by assignments at module level, one per line or nested in one call:

    def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...
    _add_kernel = triton.jit(_add_kernel)
    _add_kernel = triton.heuristics({"BLOCK": ...})(_add_kernel)
    _add_kernel = triton.autotune(configs=[...], key=["n"])(_add_kernel)
    _mul_kernel = triton.autotune(configs=[...], key=["n"])(triton.jit(_mul_kernel))
    _sub_kernel = libentry()(my_autotune(configs)(triton.jit(_sub_kernel)))
    add = triton.jit(_add_py)  # the kernel is bound to a name of its own; `_add_py` stays plain Python

Each application is a *layer*: the expression a decorator list would hold (`triton.autotune(configs=..., key=...)`,
`triton.jit(do_not_specialize=...)`, `libentry()`; for `triton.jit(fn, debug=True)` the call itself). A kernel's
layers read outermost first, as its decorators would: discovery collects the autotune configs, the heuristics and
the wrappers from them exactly as from decorators. Every name an assignment binds to the kernel (or to one of its
wrappers) is one its launches may use (`name[grid](...)`).

A later assignment extends the kernel's *chain* when it wraps the name bound last and either rebinds it (`k =
...(k)`) or adds no second autotuner (`tuned = triton.autotune(...)(k)` over a kernel without one): the kernel's
outermost object is then under the name it binds. Any other makes a second object beside the chain (`side`: a
second autotuner `small = triton.autotune(...)(k)` over an autotuned `k`, a wrapper over an earlier name): its
launches are the kernel's too, but apply gives it no TileIR code, and says so. A plain one-argument call is a
layer only where it rebinds the name it wraps (`k = wrap(k)`) or wraps a jit call (`k = wrap(triton.jit(k))`):
`sig = inspect.signature(k)` is not one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from tileiropt.classify.names import AUTOTUNE, JIT, call_name


@dataclass
class Made:
    """A kernel made by assignments: its `def` and what the assignments apply over it."""

    node: ast.FunctionDef
    layers: list[ast.expr]  # outermost first, as a decorator list reads; the jit layer last
    top: str  # the name the last assignment of its chain binds: where its outermost object lives
    statement: ast.stmt  # that assignment
    names: list[str] = field(default_factory=list)  # every module-level name bound to it or a wrapper of it
    side: list[tuple[str, int]] = field(default_factory=list)  # (name, line) of objects made beside its chain

    @property
    def jit(self) -> ast.expr:
        return self.layers[-1]


def assigned_kernels(statements: Iterable[ast.stmt], aliases: dict[str, str]) -> list[Made]:
    """The kernels module-level assignments make of module-level defs (`statements`: every module-level statement,
    through module-level blocks, in source order), in the order their jit is applied."""
    defs: dict[str, ast.FunctionDef] = {}
    holding: dict[str, Made] = {}  # name -> the kernel whose object (or a wrapper of it) the name holds
    made: list[Made] = []
    for statement in statements:
        if isinstance(statement, ast.FunctionDef):
            defs[statement.name] = statement
            holding.pop(statement.name, None)
            continue
        targets, value = _assignment(statement)
        unwrapped = _unwrap(value, aliases) if value is not None and targets else None
        if unwrapped is None:
            continue
        base, layers, plain = unwrapped
        kernel = holding.get(base)
        if kernel is not None:
            _extend(kernel, statement, targets, base, layers, plain, aliases)
        elif base in defs and call_name(layers[-1], aliases) in JIT and not _decorated(defs[base], aliases):
            kernel = Made(defs[base], layers, targets[-1], statement, names=list(targets))
            made.append(kernel)
        else:
            continue
        for target in targets:
            holding[target] = kernel
    return made


def _extend(kernel: Made, statement: ast.stmt, targets: list[str], base: str, layers: list[ast.expr], plain: bool,
            aliases: dict[str, str]) -> None:
    """A further assignment over a name of `kernel`: its chain grows where it wraps the name bound last (a plain
    call only where it rebinds that name); else it makes an object beside the chain."""
    if any(call_name(layer, aliases) in JIT for layer in layers):
        return  # a second jit over a kernel: not a form Triton accepts, left to fail as it will
    if plain and base not in targets:
        return
    kernel.names.extend(t for t in targets if t not in kernel.names)
    if base == kernel.top and (base in targets or not (_tunes(layers, aliases) and _tunes(kernel.layers, aliases))):
        kernel.layers = [*layers, *kernel.layers]
        kernel.top, kernel.statement = targets[-1], statement
    else:
        kernel.side.extend((target, statement.lineno) for target in targets)


def _tunes(layers: list[ast.expr], aliases: dict[str, str]) -> bool:
    """An autotuner among `layers`: Triton's, or a package's own (called with `configs=`, as discovery reads it)."""
    return any(call_name(layer, aliases) in AUTOTUNE or (
        isinstance(layer, ast.Call) and any(k.arg == "configs" for k in layer.keywords)) for layer in layers)


def _assignment(statement: ast.stmt) -> tuple[list[str], ast.expr | None]:
    """The names a module-level assignment binds (plain names only) and its value."""
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)], statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id], statement.value
    return [], None


def _unwrap(value: ast.expr, aliases: dict[str, str]) -> tuple[str, list[ast.expr], bool] | None:
    """`W1(...)(W2(...)(triton.jit(fn)))` -> ("fn", [W1(...), W2(...), triton.jit(fn)], plain): the name wrapped and
    the layers over it, outermost first; `plain`: a layer is a plain call of one argument (`wrap(fn)`). None for
    any other value."""
    layers: list[ast.expr] = []
    plain = False
    node = value
    while isinstance(node, ast.Call):
        if call_name(node, aliases) in JIT:  # `triton.jit(fn, debug=...)`: the call itself is the layer
            inner = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "fn"), None)
            if inner is None:
                return None  # `triton.jit(debug=True)` alone: a decorator made, not applied
            layers.append(node)
            node = inner
        elif len(node.args) == 1 and not node.keywords and isinstance(node.args[0], (ast.Name, ast.Call)):
            if isinstance(node.func, ast.Call):  # `triton.autotune(...)(fn)`, `libentry()(fn)`
                layers.append(node.func)
            elif isinstance(node.func, (ast.Name, ast.Attribute)):  # `wrap(fn)`
                layers.append(node.func)
                plain = True
            else:
                return None
            node = node.args[0]
        else:
            return None
    if not isinstance(node, ast.Name) or not layers:
        return None
    if plain and call_name(layers[-1], aliases) in JIT:
        plain = False  # `wrap(triton.jit(fn))`: a wrapper over a jit call is one
    return node.id, layers, plain


def _decorated(node: ast.FunctionDef, aliases: dict[str, str]) -> bool:
    """A def already made a kernel by its decorator (`triton.jit` over it): the decorator form, not this one."""
    return any(call_name(decorator, aliases) in JIT for decorator in node.decorator_list)
