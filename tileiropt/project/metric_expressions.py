"""A project's `flops` / `bytes` expressions, evaluated over dims and shapes without Python's `eval`.

`2 * M * N * K`, `4 * prod(x) + 2 * N`, `x[0] * x[1] * 2`: numbers, the dims (by name), the input
shapes (lists, by input name), `+ - * / // % **`, unary minus, indexing a shape, and the functions
`prod`, `math.prod`, `min`, `max`, `len`, `sum`, `abs`. Anything else is an error naming what is not
allowed. The cost is bounded: at most `MAX_NODES` syntax nodes, exponents up to `MAX_EXPONENT` and
values below `MAX_VALUE` (a FLOP count is never 1e30), so `9**9**9` is refused at once.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

MAX_NODES = 200
MAX_EXPONENT = 64
MAX_VALUE = 1e30
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCTIONS = {"prod": math.prod, "min": min, "max": max, "len": len, "sum": sum, "abs": abs}


class ExpressionError(ValueError):
    """The expression uses something not allowed, or its value is out of bounds."""


def parse_expression(text: str) -> ast.expr:
    """The expression's tree; ExpressionError when it is not a small arithmetic expression."""
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExpressionError(f"not a Python expression ({type(exc).__name__})") from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        raise ExpressionError(f"{nodes} syntax nodes; at most {MAX_NODES}")
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Call, ast.List,
                                 ast.Tuple, ast.Attribute, ast.Load, ast.USub, ast.UAdd, *_BINARY)):
            raise ExpressionError(f"`{type(node).__name__}` is not allowed (arithmetic over dims and shapes only)")
    if not any(isinstance(node, ast.Name) and node.id not in _FUNCTIONS for node in ast.walk(tree)):
        _value(tree, {})  # constants only: out-of-bounds values (9**9**9) are refused when the project loads
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and not any(isinstance(n, ast.Name) for n in ast.walk(node)):
                _value(node, {})
    return tree


def evaluate(text: str, dims: dict[str, int], shapes: dict[str, list[int]]) -> float:
    """The value of a `flops`/`bytes` expression; ExpressionError names what is wrong."""
    scope: dict[str, Any] = {name: list(shape) for name, shape in shapes.items()}
    scope.update(dims)
    value = _value(parse_expression(text), scope)
    if isinstance(value, list) or not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ExpressionError(f"the value is not a number ({type(value).__name__})")
    return float(value)


def _bounded(value: object) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_VALUE:
        raise ExpressionError(f"a value beyond {MAX_VALUE:g}")
    return value


def _value(node: ast.AST, scope: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"the constant {node.value!r} is not a number")
        return _bounded(node.value)
    if isinstance(node, ast.Name):
        if node.id in scope:
            return scope[node.id]
        if node.id in _FUNCTIONS:
            return _FUNCTIONS[node.id]
        raise ExpressionError(f"unknown name {node.id!r} (use the dims and input names)")
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr == "prod":
            return math.prod
        raise ExpressionError("only math.prod is allowed as an attribute")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(element, scope) for element in node.elts]
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, scope)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, scope), _value(node.right, scope)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise ExpressionError("arithmetic on something that is not a number (index a shape: x[0])")
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ExpressionError(f"an exponent beyond {MAX_EXPONENT}")
        try:
            return _bounded(_BINARY[type(node.op)](left, right))
        except (ZeroDivisionError, OverflowError) as exc:
            raise ExpressionError(str(exc)) from None
    if isinstance(node, ast.Subscript):
        container, index = _value(node.value, scope), _value(node.slice, scope)
        if not isinstance(container, list) or not isinstance(index, int):
            raise ExpressionError("only a shape can be indexed, with an integer")
        try:
            return container[index]
        except IndexError:
            raise ExpressionError(f"index {index} is out of the shape {container}") from None
    if isinstance(node, ast.Call):
        function = _value(node.func, scope)
        if function not in _FUNCTIONS.values() or node.keywords:
            raise ExpressionError("only prod, math.prod, min, max, len, sum and abs can be called")
        arguments = [_value(a, scope) for a in node.args]
        try:
            return _bounded(function(*arguments))
        except (TypeError, ValueError) as exc:
            raise ExpressionError(f"{getattr(function, '__name__', 'call')}: {exc}") from None
    raise ExpressionError(f"`{type(node).__name__}` is not allowed")
