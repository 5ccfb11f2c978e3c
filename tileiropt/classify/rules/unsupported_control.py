"""Control flow a CUDA Tile IR release cannot structure (TIR014): an early return."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.classify.rules.base import Finding, KernelContext, Rule, compile_fails, on


def _tail_return(body: list[ast.stmt], node: ast.Return) -> bool:
    """A return that ends the function on every path it is on (the last statement, or the last of a branch
    of a final `if`)."""
    if not body:
        return False
    last = body[-1]
    if last is node:
        return True
    if isinstance(last, ast.If):
        return _tail_return(last.body, node) or _tail_return(last.orelse, node)
    return False


class UnstructuredControlFlow(Rule):
    feature = "unstructured_control_flow"
    code = "TIR014"
    name = "unstructured-control-flow"
    severity = "error"
    message = "a `return` before the end of a kernel becomes unstructured control flow (cf.cond_br)"
    hint = "wrap the rest of the kernel in `if not <condition>:` instead of returning early, or mask the work"
    detects = "an early `return` (cf.cond_br) where the release cannot structure it (13.1)"
    why = compile_fails("An early return becomes cf.cond_br, a branch between blocks; 13.4 turns the common forms "
        "back into structured control flow.")
    VALID = ["@triton.jit\ndef k(x_ptr, n):\n    pid = tl.program_id(0)\n    if pid < n:\n"
             "        tl.store(x_ptr + pid, 1.0)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, n):\n    pid = tl.program_id(0)\n    if pid >= n:\n        return\n"
               "    tl.store(x_ptr + pid, 1.0)\n"]

    def applies(self, ctx: KernelContext) -> bool:  # "partial" (structurable) is the common early return: fine
        return ctx.release.status(self.feature) == "unsupported"

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        last = ctx.node.body[-1] if ctx.node.body else None
        for node in ast.walk(ctx.node):
            if isinstance(node, ast.Return) and node is not last and not _tail_return(ctx.node.body, node):
                yield self.finding(node.lineno, f"an early `return` becomes cf.cond_br: unstructured control flow "
                                                f"is {on(ctx)}")


RULES: list[Rule] = [UnstructuredControlFlow()]
