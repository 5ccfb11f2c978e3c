"""Kernel-body rewrites for TileIR twins (seed 002):

- `tl.exp(x)` -> `tl.exp2(x * 1.4426950408889634)`: TileIR's compiler (CUDA 13.1) does not turn
  exp into ex2 + mul by itself, so the PTX backend's fast path has to be spelt out.
- `tl.sigmoid(x)` -> `1.0 / (1.0 + tl.exp2(-x * 1.4426950408889634))`: the explicit form, which
  every nvtriton build has, with the same exp2 rewrite.

Both keep the operand's dtype rules: `exp`, `exp2` and `sigmoid` take the same types.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

LOG2E = "1.4426950408889634"  # log2(e)

# operands that bind at least as tightly as `*` and need no parentheses in `x * LOG2E`
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.UnaryOperation)


@dataclass
class Rewrite:
    line: int  # line in the original kernel
    what: str


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _times_log2e(expr: cst.BaseExpression) -> cst.BaseExpression:
    return cst.BinaryOperation(left=_paren(expr), operator=cst.Multiply(), right=cst.Float(LOG2E))


class _MathRewriter(cst.CSTTransformer):
    def __init__(self, tl_names: set[str]):
        super().__init__()
        self.tl_names = tl_names
        self.rewrites: list[tuple[cst.Call, str]] = []  # (original call, what)

    def _tl_function(self, func: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
        """('exp', <the `tl` / `tl.math` object expression>) for tl.exp / tl.math.exp."""
        if not isinstance(func, cst.Attribute):
            return None
        base = func.value
        if isinstance(base, cst.Name) and base.value in self.tl_names:
            return func.attr.value, base
        if (isinstance(base, cst.Attribute) and base.attr.value == "math"
                and isinstance(base.value, cst.Name) and base.value.value in self.tl_names):
            return func.attr.value, base
        return None

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        found = self._tl_function(original.func)
        if not found or len(updated.args) != 1 or updated.args[0].keyword is not None:
            return updated
        name, base = found
        arg = updated.args[0].value
        exp2 = cst.Attribute(value=base, attr=cst.Name("exp2"))
        if name == "exp":
            self.rewrites.append((original, "tl.exp(x) -> tl.exp2(x * log2(e))"))
            return updated.with_changes(func=exp2, args=[cst.Arg(_times_log2e(arg))])
        if name == "sigmoid":
            self.rewrites.append((original, "tl.sigmoid(x) -> 1 / (1 + tl.exp2(-x * log2(e)))"))
            negated = cst.UnaryOperation(operator=cst.Minus(), expression=_paren(arg))
            denominator = cst.BinaryOperation(
                left=cst.Float("1.0"), operator=cst.Add(),
                right=cst.Call(func=exp2, args=[cst.Arg(_times_log2e(negated))]),
                lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            # parenthesised, so it stays one operand wherever the call stood
            return cst.BinaryOperation(left=cst.Float("1.0"), operator=cst.Divide(), right=denominator,
                                       lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated


def rewrite_math(function: cst.FunctionDef, tl_names: set[str], source: str | None = None,
                 first_line: int = 1) -> tuple[cst.FunctionDef, list[Rewrite]]:
    """The function with exp/sigmoid rewritten, and what changed.

    `source` is the function's text as it stands in its file, starting at `first_line`; each
    rewrite's line is found by locating the call's text in it (no position metadata, which
    costs more than the whole rewrite). Without `source`, lines count from the function itself.
    """
    rewriter = _MathRewriter(tl_names)
    new_function = function.visit(rewriter)
    assert isinstance(new_function, cst.FunctionDef)
    if not rewriter.rewrites:
        return new_function, []
    if source is None:
        source = cst.Module(body=[function.with_changes(leading_lines=[])]).code
    empty = cst.Module(body=[])
    rewrites, searched_from = [], {}
    for call, what in rewriter.rewrites:
        text = empty.code_for_node(call)
        offset = source.find(text, searched_from.get(text, 0))
        searched_from[text] = offset + 1 if offset >= 0 else 0
        line = first_line + source.count("\n", 0, offset) if offset >= 0 else first_line
        rewrites.append(Rewrite(line, what))
    return new_function, rewrites
