"""Read the literal values of a kernel's autotune configs without running its module.

The `configs=` expression (a list literal, a comprehension, a module-level name, or a call to a
module-level config-building function whose body ends in `return <list>`) is evaluated with a
stand-in for `triton.Config` and nothing else in scope but literal module-level constants and a
few pure builtins. Anything else (a call to torch, a branch on the device) makes the configs
unresolvable, and `apply` says so instead of guessing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

_SAFE_BUILTINS = {"range": range, "len": len, "list": list, "tuple": tuple, "zip": zip, "dict": dict,
                  "int": int, "min": min, "max": max, "True": True, "False": False, "None": None,
                  "enumerate": enumerate, "sorted": sorted, "reversed": reversed}


@dataclass
class ConfigValue:
    """A triton.Config's literal content."""

    kwargs: dict[str, Any]
    num_warps: int | None = 4
    num_stages: int | None = 3
    num_ctas: int | None = 1
    options: dict[str, Any] = field(default_factory=dict)


class Unresolvable(Exception):
    """The configs depend on something only known at run time."""


class _FakeConfig:
    def __init__(self, kwargs: Any = None, num_warps: Any = 4, num_stages: Any = 3, num_ctas: Any = 1,
                 **options: Any):
        if not isinstance(kwargs, dict):
            raise Unresolvable("triton.Config meta-parameters are not a dict literal")
        for name, value in kwargs.items():
            if not isinstance(value, (int, float, bool, str, type(None))):
                raise Unresolvable(f"meta-parameter {name!r} has no literal value ({value!r})")
        self.value = ConfigValue(dict(kwargs), num_warps, num_stages, num_ctas, options)


class _FakeTriton:
    Config = _FakeConfig


class _Opaque:
    """A value the evaluator may pass around but not look into (e.g. a `pre_hook` function)."""

    def __init__(self, name: str = "?"):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level `NAME = <literal>` assignments."""
    constants: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return constants


def _evaluate(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    """Evaluate with unknown names bound to opaque stand-ins: passing one along (a `pre_hook=hook`)
    is fine, looking into it (`torch.cuda.device_count()`) makes the configs unresolvable."""
    free = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    unknown = [n for n in dict.fromkeys(free) if n not in namespace and n not in _SAFE_BUILTINS]
    scope = {"__builtins__": dict(_SAFE_BUILTINS), **{n: _Opaque(n) for n in unknown}, **namespace}
    code = compile(ast.Expression(body=expr), "<configs>", "eval")
    try:
        return eval(code, scope)  # noqa: S307 - restricted namespace, no builtins beyond pure ones
    except Unresolvable:
        raise
    except Exception as exc:  # any failure means: not statically resolvable
        if unknown:
            raise Unresolvable(f"configs depend on {unknown[0]!r}, only known at run time") from None
        raise Unresolvable(f"configs could not be evaluated statically ({type(exc).__name__}: {exc})") from None


def _function_return(tree: ast.Module, name: str) -> tuple[ast.FunctionDef, ast.expr]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                return node, body[0].value
            raise Unresolvable(f"{name}() does more than return a config list")
    raise Unresolvable(f"{name}() is not defined at module level in this file")


def _bind_call(func: ast.FunctionDef, call: ast.Call, namespace: dict[str, Any]) -> dict[str, Any]:
    """Parameters of a config-building function bound from the call's literal arguments/defaults."""
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    defaults = func.args.defaults
    bound: dict[str, Any] = {}
    for param, default in zip(params[len(params) - len(defaults):], defaults):
        bound[param] = _literal_or_opaque(default, namespace)
    for arg in func.args.kwonlyargs:
        bound[arg.arg] = _Opaque()
    for param, kw_default in zip(func.args.kwonlyargs, func.args.kw_defaults):
        if kw_default is not None:
            bound[param.arg] = _literal_or_opaque(kw_default, namespace)
    for param, value in zip(params, call.args):
        bound[param] = _literal_or_opaque(value, namespace)
    for keyword in call.keywords:
        if keyword.arg is not None:
            bound[keyword.arg] = _literal_or_opaque(keyword.value, namespace)
    for param in params:
        bound.setdefault(param, _Opaque())
    return bound


def _literal_or_opaque(node: ast.expr, namespace: dict[str, Any]) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        if isinstance(node, ast.Name) and node.id in namespace:
            return namespace[node.id]
        return _Opaque()


def resolve_configs(module_source: str, configs_source: str, triton_names: set[str]) -> list[ConfigValue]:
    """The literal configs an autotune decorator's `configs=` expression produces.

    Raises Unresolvable with the reason when they cannot be known without running the module.
    """
    tree = ast.parse(module_source)
    expr = ast.parse(configs_source.strip(), mode="eval").body
    namespace: dict[str, Any] = {**_module_constants(tree)}
    for name in triton_names:
        namespace[name] = _FakeTriton
    namespace.setdefault("Config", _FakeConfig)  # `from triton import Config`

    if isinstance(expr, ast.Name) and expr.id not in namespace:
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == expr.id):
                expr = node.value
                break
        else:
            raise Unresolvable(f"{expr.id} is not assigned at module level in this file")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id not in namespace:
        func, returned = _function_return(tree, expr.func.id)
        namespace = {**namespace, **_bind_call(func, expr, namespace)}
        expr = returned
    value = _evaluate(expr, namespace)
    if not isinstance(value, (list, tuple)):
        raise Unresolvable("configs are not a list")
    configs = []
    for item in value:
        if not isinstance(item, _FakeConfig):
            raise Unresolvable("configs hold something other than triton.Config")
        configs.append(item.value)
    if not configs:
        raise Unresolvable("the config list is empty")
    return configs
