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
from libcst.metadata import MetadataWrapper, PositionProvider

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
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, tl_names: set[str]):
        super().__init__()
        self.tl_names = tl_names
        self.rewrites: list[Rewrite] = []

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
        line = self.get_metadata(PositionProvider, original).start.line
        arg = updated.args[0].value
        exp2 = cst.Attribute(value=base, attr=cst.Name("exp2"))
        if name == "exp":
            self.rewrites.append(Rewrite(line, "tl.exp(x) -> tl.exp2(x * log2(e))"))
            return updated.with_changes(func=exp2, args=[cst.Arg(_times_log2e(arg))])
        if name == "sigmoid":
            self.rewrites.append(Rewrite(line, "tl.sigmoid(x) -> 1 / (1 + tl.exp2(-x * log2(e)))"))
            negated = cst.UnaryOperation(operator=cst.Minus(), expression=_paren(arg))
            denominator = cst.BinaryOperation(
                left=cst.Float("1.0"), operator=cst.Add(),
                right=cst.Call(func=exp2, args=[cst.Arg(_times_log2e(negated))]),
                lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            # parenthesised, so it stays one operand wherever the call stood
            return cst.BinaryOperation(left=cst.Float("1.0"), operator=cst.Divide(), right=denominator,
                                       lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated


def rewrite_math(function: cst.FunctionDef, tl_names: set[str], first_line: int = 1
                 ) -> tuple[cst.FunctionDef, list[Rewrite]]:
    """The function with exp/sigmoid rewritten, and what changed (lines of the original file).

    `first_line` is the line of `function` in its file; positions are computed on the function
    alone, so they are shifted by it.
    """
    wrapper = MetadataWrapper(cst.Module(body=[function]), unsafe_skip_copy=True)
    rewriter = _MathRewriter(tl_names)
    new_module = wrapper.visit(rewriter)
    offset = first_line - 1 - _leading_lines(function)
    rewrites = [Rewrite(r.line + offset, r.what) for r in rewriter.rewrites]
    new_function = new_module.body[0]
    assert isinstance(new_function, cst.FunctionDef)
    return new_function, rewrites


def _leading_lines(function: cst.FunctionDef) -> int:
    """Blank/comment lines libcst keeps in front of the function's first decorator."""
    return len(function.leading_lines)
