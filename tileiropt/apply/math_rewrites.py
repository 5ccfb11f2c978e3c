"""Kernel-body rewrites for TileIR (seed 002), made in place behind the gate:

- `tl.exp(x)` -> `tl.exp2(x * 1.4426950408889634)`: TileIR's compiler (CUDA 13.1) does not turn
  exp into ex2 + mul by itself, so the PTX backend's fast path has to be spelt out.
- `tl.sigmoid(x)` -> `1.0 / (1.0 + tl.exp2(-x * 1.4426950408889634))`: the explicit form, which
  every nvtriton build has, with the same exp2 rewrite.

Both keep the operand's dtype rules: `exp`, `exp2` and `sigmoid` take the same types.

Each rewritten call becomes `(<TileIR form> if TILEIR else <the call as written>)`, where `TILEIR` is the gate as a
module-level `tl.constexpr` (`Gated`): Triton resolves a constexpr condition while compiling and compiles only the
branch taken, so with the gate off the kernel compiles to what it did before, and no kernel is copied for a rewrite.
The constant log2(e) is a named module-level constexpr too.
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


@dataclass(frozen=True)
class Gated:
    """The module-level names in-place rewrites read: the gate as a constexpr, and log2(e)."""

    flag: str | None  # `TILEIR`; None in a body that is TileIR's alone (a descriptor twin): no branch
    log2e: str  # `LOG2E`


@dataclass
class Rewrite:
    call: cst.Call  # the call rewritten, as it stands in the function given
    what: str


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, _ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


class _MathRewriter(cst.CSTTransformer):
    def __init__(self, aliases: dict[str, str], gated: Gated | None):
        super().__init__()
        self.aliases = aliases
        self.gated = gated
        self.rewrites: list[Rewrite] = []

    def _times_log2e(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        constant = cst.Name(self.gated.log2e) if self.gated else cst.Float(LOG2E)
        return cst.BinaryOperation(left=_paren(expr), operator=cst.Multiply(), right=constant)

    def _gate(self, tileir: cst.BaseExpression, original: cst.Call) -> cst.BaseExpression:
        """`(tileir if TILEIR else original)`, or the TileIR form alone for a body that is TileIR's only."""
        if self.gated is None or self.gated.flag is None:
            return tileir
        return cst.IfExp(test=cst.Name(self.gated.flag), body=tileir.with_changes(lpar=[], rpar=[]),
                         orelse=original, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

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
            return self._gate(updated.with_changes(func=exp2, args=[cst.Arg(self._times_log2e(arg))]), updated)
        self.rewrites.append(Rewrite(original, "tl.sigmoid(x) -> 1 / (1 + tl.exp2(-x * log2(e)))"))
        negated = cst.UnaryOperation(operator=cst.Minus(), expression=_paren(arg))
        denominator = cst.BinaryOperation(
            left=cst.Float("1.0"), operator=cst.Add(),
            right=cst.Call(func=exp2, args=[cst.Arg(self._times_log2e(negated))]),
            lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        # parenthesised, so it stays one operand wherever the call stood
        return self._gate(cst.BinaryOperation(left=cst.Float("1.0"), operator=cst.Divide(), right=denominator,
                                              lpar=[cst.LeftParen()], rpar=[cst.RightParen()]), updated)


class _Unparenthesized(cst.CSTTransformer):
    """A gated rewrite standing alone (an assignment's value, a return's, an argument) needs no parentheses."""

    @staticmethod
    def _bare(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
        if isinstance(value, cst.IfExp) and len(value.lpar) == 1:
            return value.with_changes(lpar=[], rpar=[])
        return value

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        return updated.with_changes(value=self._bare(updated.value))

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> cst.AugAssign:
        return updated.with_changes(value=self._bare(updated.value))

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        return updated.with_changes(value=self._bare(updated.value))

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(value=self._bare(updated.value))


def rewrite_math(function: cst.FunctionDef, aliases: dict[str, str], gated: Gated | None = None
                 ) -> tuple[cst.FunctionDef, list[Rewrite]]:
    """The function with exp/sigmoid rewritten (names resolved through the file's imports, `aliases`), each behind
    the gate's constexpr where `gated` names it, and the calls rewritten (the caller finds their lines in the
    kernel model: `tileiropt.apply.locate`)."""
    rewriter = _MathRewriter(aliases, gated)
    new_function = function.visit(rewriter)
    assert isinstance(new_function, cst.FunctionDef)
    if gated is not None and gated.flag is not None and rewriter.rewrites:
        new_function = new_function.visit(_Unparenthesized())
        assert isinstance(new_function, cst.FunctionDef)
    return new_function, rewriter.rewrites
