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

from tileiropt.classify.names import TL, callee

LOG2E = "1.4426950408889634"  # log2(e)
_EXP = frozenset({TL + "exp", TL + "math.exp"})
_SIGMOID = frozenset({TL + "sigmoid", TL + "math.sigmoid"})

# operands that bind at least as tightly as `*` and need no parentheses in `x * LOG2E`
_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.UnaryOperation)


@dataclass
class Rewrite:
    call: cst.Call  # the call rewritten, as it stands in the function given
    what: str


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _times_log2e(expr: cst.BaseExpression) -> cst.BaseExpression:
    return cst.BinaryOperation(left=_paren(expr), operator=cst.Multiply(), right=cst.Float(LOG2E))


class _MathRewriter(cst.CSTTransformer):
    def __init__(self, aliases: dict[str, str]):
        super().__init__()
        self.aliases = aliases
        self.rewrites: list[Rewrite] = []

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = callee(original, self.aliases)
        func = original.func
        if name not in _EXP | _SIGMOID or not isinstance(func, cst.Attribute) or len(updated.args) != 1 \
                or updated.args[0].keyword is not None:
            return updated
        arg = updated.args[0].value
        exp2 = cst.Attribute(value=func.value, attr=cst.Name("exp2"))  # beside exp: `tl.exp2`, `tl.math.exp2`
        if name in _EXP:
            self.rewrites.append(Rewrite(original, "tl.exp(x) -> tl.exp2(x * log2(e))"))
            return updated.with_changes(func=exp2, args=[cst.Arg(_times_log2e(arg))])
        self.rewrites.append(Rewrite(original, "tl.sigmoid(x) -> 1 / (1 + tl.exp2(-x * log2(e)))"))
        negated = cst.UnaryOperation(operator=cst.Minus(), expression=_paren(arg))
        denominator = cst.BinaryOperation(
            left=cst.Float("1.0"), operator=cst.Add(),
            right=cst.Call(func=exp2, args=[cst.Arg(_times_log2e(negated))]),
            lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        # parenthesised, so it stays one operand wherever the call stood
        return cst.BinaryOperation(left=cst.Float("1.0"), operator=cst.Divide(), right=denominator,
                                   lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def rewrite_math(function: cst.FunctionDef, aliases: dict[str, str]) -> tuple[cst.FunctionDef, list[Rewrite]]:
    """The function with exp/sigmoid rewritten (names resolved through the file's imports, `aliases`), and
    the calls rewritten (the caller finds their lines in the kernel model: `tileiropt.apply.locate`)."""
    rewriter = _MathRewriter(aliases)
    new_function = function.visit(rewriter)
    assert isinstance(new_function, cst.FunctionDef)
    return new_function, rewriter.rewrites
