"""Read the literal values of a kernel's autotune configs without running anything from its file.

The `configs=` expression (a list literal, a comprehension, a module-level name, or a call to a
module-level config-building function whose body is `return <list>`) is evaluated by a small
interpreter over the syntax tree -- never by Python's `eval` -- that knows literals, containers,
comprehensions, arithmetic, comparisons, a stand-in for `triton.Config`, literal module-level
constants and a few pure builtins (`range`, `len`, `min`, ...), within bounds on steps, integer
size and container length. Anything else (a call to torch, an attribute of an unknown object, a
branch on the device) makes the configs unresolvable: `apply` then lets the generated gate derive
the TileIR configs from the autotuner's own list when the module is imported.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Iterable, Sized
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tileiropt.classify.blocks import flatten

V = TypeVar("V")
S = TypeVar("S", bound=Sized)

_MAX_STEPS = 200_000  # syntax-tree nodes evaluated per configs expression
_MAX_ITEMS = 10_000  # elements of any list, range or comprehension
_MAX_INT_BITS = 256  # |int| < 2**256: configs hold block sizes, not big numbers
_SAFE_BUILTINS = {"range": range, "len": len, "list": list, "tuple": tuple, "zip": zip, "dict": dict,
                  "int": int, "min": min, "max": max, "enumerate": enumerate, "sorted": sorted,
                  "reversed": reversed, "bool": bool, "float": float, "abs": abs}
_CONSTANTS = {"True": True, "False": False, "None": None}


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
    def __init__(self, kwargs: object = None, num_warps: object = 4, num_stages: object = 3, num_ctas: object = 1,
                 *rest: object, **options: object):
        if not isinstance(kwargs, dict):
            raise Unresolvable("triton.Config meta-parameters are not a dict literal")
        for name, value in kwargs.items():
            if not isinstance(value, (int, float, bool, str, type(None))):
                raise Unresolvable(f"meta-parameter {name!r} has no literal value ({value!r})")
            if isinstance(value, float) and not math.isfinite(value):
                raise Unresolvable(f"meta-parameter {name!r} is {value!r}, which no literal writes back")
        self.value = ConfigValue(dict(kwargs), _literal_int("num_warps", num_warps),
                                 _literal_int("num_stages", num_stages), _literal_int("num_ctas", num_ctas), options)


def _literal_int(name: str, value: object) -> int | None:
    if value is not None and (type(value) is not int):
        raise Unresolvable(f"{name} has no literal integer value ({value!r})")
    return value


class _FakeTriton:
    Config = _FakeConfig


class _Opaque:
    """A value the evaluator may pass around but not look into (e.g. a `pre_hook` function)."""

    def __init__(self, name: str = "?"):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level `NAME = <literal>` assignments (inside module-level `if`/`try`/`with` blocks too)."""
    constants: dict[str, Any] = {}
    for node, _ in flatten(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return constants


def _evaluate(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    """Evaluate with unknown names bound to opaque stand-ins: passing one along (a `pre_hook=hook`)
    is fine, looking into it (`torch.cuda.device_count()`) makes the configs unresolvable."""
    try:
        return _Interpreter(namespace).value(expr, {})
    except RecursionError:
        raise Unresolvable("configs are nested too deeply to evaluate") from None


class _Interpreter:
    """Evaluates the expressions config lists are written with, and nothing else."""

    def __init__(self, namespace: dict[str, Any]):
        self.namespace = namespace
        self.steps = 0

    def value(self, node: ast.AST, local: dict[str, Any]) -> Any:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise Unresolvable(f"configs take more than {_MAX_STEPS} steps to evaluate")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise Unresolvable(f"configs use `{type(node).__name__}`, which is not evaluated statically")
        return method(node, local)

    # leaves ------------------------------------------------------------------
    def _Constant(self, node: ast.Constant, local: dict[str, Any]) -> Any:
        return _checked(node.value)

    def _Name(self, node: ast.Name, local: dict[str, Any]) -> Any:
        for scope in (local, self.namespace, _CONSTANTS, _SAFE_BUILTINS):
            if node.id in scope:
                return scope[node.id]
        return _Opaque(node.id)

    def _Attribute(self, node: ast.Attribute, local: dict[str, Any]) -> Any:
        owner = self.value(node.value, local)
        if owner is _FakeTriton and node.attr == "Config":
            return _FakeConfig
        if isinstance(owner, _Opaque):
            raise Unresolvable(f"configs depend on {owner.name!r}, only known at run time")
        raise Unresolvable(f"configs read `.{node.attr}`, which is not evaluated statically")

    # containers --------------------------------------------------------------
    def _List(self, node: ast.List, local: dict[str, Any]) -> list:
        return _bounded(self._items(node.elts, local))

    def _Tuple(self, node: ast.Tuple, local: dict[str, Any]) -> tuple:
        return tuple(_bounded(self._items(node.elts, local)))

    def _Set(self, node: ast.Set, local: dict[str, Any]) -> list:
        return _bounded(self._items(node.elts, local))

    def _items(self, elements: list[ast.expr], local: dict[str, Any]) -> list:
        items: list = []
        for element in elements:
            if isinstance(element, ast.Starred):
                items.extend(_iterable(self.value(element.value, local)))
            else:
                items.append(self.value(element, local))
        return items

    def _Dict(self, node: ast.Dict, local: dict[str, Any]) -> dict:
        result: dict = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # {**other}
                other = self.value(value, local)
                if not isinstance(other, dict):
                    raise Unresolvable("configs unpack something that is not a dict")
                result.update(other)
            else:
                result[_hashable(self.value(key, local))] = self.value(value, local)
        return result

    def _ListComp(self, node: ast.ListComp, local: dict[str, Any]) -> list:
        return [self.value(node.elt, scope) for scope in self._generators(node.generators, 0, dict(local))]

    _GeneratorExp = _ListComp
    _SetComp = _ListComp

    def _DictComp(self, node: ast.DictComp, local: dict[str, Any]) -> dict:
        return {_hashable(self.value(node.key, scope)): self.value(node.value, scope)
                for scope in self._generators(node.generators, 0, dict(local))}

    def _generators(self, generators: list[ast.comprehension], index: int, local: dict[str, Any]) -> list:
        if index == len(generators):
            return [dict(local)]
        generator = generators[index]
        scopes: list = []
        for item in _iterable(self.value(generator.iter, local)):
            inner = dict(local)
            _bind_target(generator.target, item, inner)
            if all(self.value(condition, inner) for condition in generator.ifs):
                scopes.extend(self._generators(generators, index + 1, inner))
                _bounded(scopes)
        return scopes

    def _Subscript(self, node: ast.Subscript, local: dict[str, Any]) -> Any:
        owner = self.value(node.value, local)
        if isinstance(node.slice, ast.Slice):
            parts = [None if p is None else self.value(p, local) for p in (node.slice.lower, node.slice.upper,
                                                                            node.slice.step)]
            index: Any = slice(*parts)
        else:
            index = self.value(node.slice, local)
        if not isinstance(owner, (list, tuple, dict, str)):
            raise Unresolvable("configs index something that is not a literal container")
        try:
            return owner[index]
        except (IndexError, KeyError, TypeError) as exc:
            raise Unresolvable(f"configs index out of range ({exc})") from None

    # operators ---------------------------------------------------------------
    def _BinOp(self, node: ast.BinOp, local: dict[str, Any]) -> Any:
        left, right = self.value(node.left, local), self.value(node.right, local)
        _plain(left), _plain(right)
        op = type(node.op)
        if op is ast.Pow and (not isinstance(right, int) or right > _MAX_INT_BITS or abs(left) > 2 ** 16):
            raise Unresolvable("configs raise to a power too large to evaluate")
        sequence, count = (left, right) if isinstance(left, (list, tuple, str)) else (right, left)
        if op is ast.Mult and isinstance(sequence, (list, tuple, str)) and isinstance(count, int) \
                and len(sequence) * count > _MAX_ITEMS:
            raise Unresolvable(f"configs build a sequence of more than {_MAX_ITEMS} items")
        if op is ast.LShift and (not isinstance(right, int) or right > _MAX_INT_BITS):
            raise Unresolvable("configs shift by too much to evaluate")
        operation = _BINARY.get(op)
        if operation is None:
            raise Unresolvable(f"configs use the operator {op.__name__}")
        try:
            return _checked(operation(left, right))
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise Unresolvable(f"configs could not be evaluated statically ({type(exc).__name__}: {exc})") from None

    def _UnaryOp(self, node: ast.UnaryOp, local: dict[str, Any]) -> Any:
        operand = _plain(self.value(node.operand, local))
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        return ~operand

    def _BoolOp(self, node: ast.BoolOp, local: dict[str, Any]) -> Any:
        result: Any = isinstance(node.op, ast.And)
        for operand in node.values:
            result = _plain(self.value(operand, local))
            if isinstance(node.op, ast.And) and not result or isinstance(node.op, ast.Or) and result:
                return result
        return result

    def _Compare(self, node: ast.Compare, local: dict[str, Any]) -> bool:
        left = _plain(self.value(node.left, local))
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _plain(self.value(comparator, local))
            operation = _COMPARE.get(type(op))
            if operation is None:
                raise Unresolvable(f"configs use the comparison {type(op).__name__}")
            try:
                if not operation(left, right):
                    return False
            except TypeError as exc:
                raise Unresolvable(f"configs compare values of different kinds ({exc})") from None
            left = right
        return True

    def _IfExp(self, node: ast.IfExp, local: dict[str, Any]) -> Any:
        return self.value(node.body if _plain(self.value(node.test, local)) else node.orelse, local)

    # calls -------------------------------------------------------------------
    def _Call(self, node: ast.Call, local: dict[str, Any]) -> Any:
        func = self.value(node.func, local)
        args = self._items(node.args, local)
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self.value(keyword.value, local)
            if keyword.arg is None:
                if not isinstance(value, dict):
                    raise Unresolvable("configs unpack something that is not a dict into a call")
                kwargs.update(value)
            else:
                kwargs[keyword.arg] = value
        if func is _FakeConfig:
            return _FakeConfig(*args, **kwargs)
        if isinstance(func, _Opaque):
            raise Unresolvable(f"configs depend on {func.name!r}, only known at run time")
        if func not in _SAFE_BUILTINS.values():
            raise Unresolvable("configs call something other than triton.Config and pure builtins")
        if func is range and any(not isinstance(a, int) for a in args):
            raise Unresolvable("configs call range() with something other than integers")
        try:
            result = func(*args, **kwargs)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise Unresolvable(f"configs could not be evaluated statically ({type(exc).__name__}: {exc})") from None
        if isinstance(result, range):
            if len(result) > _MAX_ITEMS:
                raise Unresolvable(f"configs build a range of more than {_MAX_ITEMS} items")
            return result
        if not isinstance(result, (int, float, str, bool, list, tuple, dict)) and result is not None:
            result = _bounded(list(_iterable(result)))  # zip, enumerate, reversed
        return _checked(result)


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not}


def _plain(value: V) -> V:
    """Operands of arithmetic and tests must be known values, not run-time objects."""
    if isinstance(value, _Opaque):
        raise Unresolvable(f"configs depend on {value.name!r}, only known at run time")
    if isinstance(value, _FakeConfig):
        raise Unresolvable("configs compute with a triton.Config")
    return value


def _checked(value: V) -> V:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _MAX_INT_BITS:
        raise Unresolvable("configs compute an integer too large for a config value")
    if isinstance(value, (str, bytes)) and len(value) > _MAX_ITEMS:
        raise Unresolvable(f"configs build a string of more than {_MAX_ITEMS} characters")
    if isinstance(value, (list, tuple, dict)):
        _bounded(value)
    return value


def _bounded(items: S) -> S:
    if len(items) > _MAX_ITEMS:
        raise Unresolvable(f"configs build a collection of more than {_MAX_ITEMS} items")
    return items


def _iterable(value: object) -> Iterable[Any]:
    if isinstance(value, (list, tuple, range, dict, str)):
        return value
    if isinstance(value, (zip, enumerate, reversed)):
        return value
    raise Unresolvable("configs iterate over something that is not a literal container")


def _hashable(value: V) -> V:
    try:
        hash(value)
    except TypeError:
        raise Unresolvable("configs use an unhashable key") from None
    return value


def _bind_target(target: ast.expr, item: object, scope: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = item
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = list(_iterable(item)) if not isinstance(item, (list, tuple)) else list(item)
        if len(values) != len(target.elts):
            raise Unresolvable("configs unpack the wrong number of values")
        for sub, value in zip(target.elts, values, strict=True):
            _bind_target(sub, value, scope)
    else:
        raise Unresolvable("configs bind a loop variable the evaluator does not follow")


def _function_return(tree: ast.Module, name: str) -> tuple[ast.FunctionDef, ast.expr]:
    defs = [(node, depth) for node, depth in flatten(tree) if isinstance(node, ast.FunctionDef) and node.name == name]
    _single(name, [depth for _, depth in defs], "defined")
    for node, _ in defs:
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            return node, body[0].value
        raise Unresolvable(f"{name}() does more than return a config list")
    raise Unresolvable(f"{name}() is not defined at module level in this file")


def _single(name: str, depths: list[int], what: str) -> None:
    """A name bound more than once where one binding is inside a module-level block: which one the kernel
    gets depends on the branch taken at import, so the configs are derived then."""
    if len(depths) > 1 and any(depths):
        raise Unresolvable(f"{name} is {what} more than once, inside module-level blocks: which one applies "
                           "depends on the branch taken at import")


def _bind_call(func: ast.FunctionDef, call: ast.Call, namespace: dict[str, Any]) -> dict[str, Any]:
    """Parameters of a config-building function bound from the call's literal arguments/defaults."""
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    defaults = func.args.defaults
    bound: dict[str, Any] = {}
    for param, default in zip(params[len(params) - len(defaults):], defaults):
        bound[param] = _literal_or_opaque(default, namespace)
    for arg in func.args.kwonlyargs:
        bound[arg.arg] = _Opaque()
    for kwarg, kw_default in zip(func.args.kwonlyargs, func.args.kw_defaults):
        if kw_default is not None:
            bound[kwarg.arg] = _literal_or_opaque(kw_default, namespace)
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


def resolve_configs(tree: ast.Module, configs: ast.expr | None, triton_names: set[str]) -> list[ConfigValue]:
    """The literal configs an autotune decorator's `configs=` expression (`configs`, a node of the module
    `tree`) produces.

    Raises Unresolvable with the reason when they cannot be known without running the module.
    """
    if configs is None:
        raise Unresolvable("the autotuner is given no configs")
    expr = configs
    namespace: dict[str, Any] = {**_module_constants(tree)}
    for name in triton_names:
        namespace[name] = _FakeTriton
    namespace.setdefault("Config", _FakeConfig)  # `from triton import Config`

    if isinstance(expr, ast.Name) and expr.id not in namespace:
        assigned = [(node, depth) for node, depth in flatten(tree)
                    if isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == expr.id]
        if not assigned:
            raise Unresolvable(f"{expr.id} is not assigned at module level in this file")
        _single(expr.id, [depth for _, depth in assigned], "assigned")
        expr = assigned[0][0].value
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id not in namespace:
        func, returned = _function_return(tree, expr.func.id)
        namespace = {**namespace, **_bind_call(func, expr, namespace)}
        expr = returned
    value = _evaluate(expr, namespace)
    if not isinstance(value, (list, tuple)):
        raise Unresolvable("configs are not a list")
    values = []
    for item in value:
        if not isinstance(item, _FakeConfig):
            raise Unresolvable("configs hold something other than triton.Config")
        values.append(item.value)
    if not values:
        raise Unresolvable("the config list is empty")
    return values
