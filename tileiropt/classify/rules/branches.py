"""Kernels whose name a module-level block binds to something else on another branch.

`if HAS_TRITON:` a Triton kernel, `else:` a plain-Python fallback of the same name; or two Triton kernels of
one name under `if`/`elif`. Only one branch runs at import, and which one is not known from the source: the
analysis and `apply` take the (first) Triton kernel, so the other branch runs without TileIR code. A note of
performance scope (`TIR2xx`): nothing is wrong with either definition.
"""

from __future__ import annotations

from collections.abc import Iterable

from tileiropt.classify.blocks import Definition, alternatives_of
from tileiropt.classify.rules.base import Finding, KernelContext, Rule

_KINDS = {"function": "a plain-Python function", "class": "a class", "value": "a value", "import": "an import"}
FALLBACK_HINT = "a fallback for machines without Triton needs no change: `# noqa: TIR203` on the `def` line silences it"
TWO_KERNELS_HINT = "give each kernel its own name and bind the shared name to one of them after the block"


class BranchAlternative(Rule):
    code = "TIR203"
    name = "branch-alternative-definition"
    severity = "perf"
    message = "the kernel's name is bound to something else on another branch of a module-level block"
    hint = FALLBACK_HINT
    detects = ("a kernel defined inside a module-level block (`if HAS_TRITON:`, `try:`, `with ...:`) whose name "
        "another branch binds too: a plain-Python fallback under `else:`, or a second Triton kernel")
    why = ("Only one branch of the block runs at import, and which one is not known from the source: the analysis "
        "and `apply` take the (first) Triton kernel, so whatever the other branch binds runs without TileIR code, and "
        "a second Triton kernel of the same name is neither classified nor rewritten. Where the test reads only the "
        "environment (`os.environ.get(...)`), or asks whether the GPU is a Blackwell one (`IS_NVIDIA_BLACKWELL`: "
        "true where TileIR runs), the branch taken is known: it is the one analysed, and the other is not reported.")
    VALID = ["try:\n    import numpy\nexcept ImportError:\n    numpy = None\n\n"
             "if True:\n    @triton.jit\n    def k(x_ptr):\n        tl.store(x_ptr, 1.0)\n\n"
             "    def run(x):\n        k[(1,)](x)\n",
             "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n"
             "def k_reference(x):\n    x.fill_(1.0)\n"]
    INVALID = ["HAS_TRITON = True\nif HAS_TRITON:\n    @triton.jit\n    def k(x_ptr):\n        tl.store(x_ptr, 1.0)\n"
               "else:\n    def k(x):\n        x.fill_(1.0)\n",
               "import os\nif os.environ.get('WIDE'):\n    @triton.jit\n    def k(x_ptr):\n"
               "        tl.store(x_ptr, 2.0)\n"
               "elif os.environ.get('NARROW'):\n    @triton.jit\n    def k(x_ptr):\n        tl.store(x_ptr, 1.0)\n",
               "try:\n    @triton.jit\n    def k(x_ptr):\n        tl.store(x_ptr, 1.0)\nexcept NameError:\n"
               "    k = None\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        kernel = ctx.kernel
        others = alternatives_of(ctx.scan.module.definitions, kernel.name, kernel.line)
        if not others:
            return
        hint = TWO_KERNELS_HINT if any(d.kind == "kernel" for d in others) else FALLBACK_HINT
        yield self.finding(kernel.line, branch_message(kernel.name, kernel.line, kernel.condition, others), hint)


def branch_message(name: str, line: int, condition: str | None, others: list[Definition]) -> str:
    """One sentence: what each branch binds the name to, which definition the tool uses."""
    described = [f"a Triton kernel under `{condition}` (line {line})"]
    for other in others:
        what = "a different Triton kernel" if other.kind == "kernel" else _KINDS[other.kind]
        described.append(f"{what} under `{other.condition}` (line {other.line})")
    used = "the Triton kernel" if all(d.kind != "kernel" for d in others) else f"the kernel at line {line}"
    return (f"{name} is {' and '.join(described)}: classify and apply use {used}; "
            f"the other branch runs without TileIR code")


RULES: list[Rule] = [BranchAlternative()]
