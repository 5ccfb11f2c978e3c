"""The IR check lowers kernels with Triton's front end, never through Triton's interpreter.

Triton reads `TRITON_INTERPRET` when a function is decorated: `triton.jit` then makes an `InterpretedFunction`, not a
`JITFunction`, and Triton's own library (`tl.cdiv`, `tl.sigmoid`, ...) is decorated when `triton` is imported. A
kernel lowered in a process that imported Triton with the variable on calls those library functions through the
interpreter from inside the code generator: the lowering fails (an interpreter builder where an IR builder was
expected) and the interpreter patches `triton.language` for the rest of the process, so the next kernels fail too,
and the screen of the sandbox sees patched names. The interpreter is how the tool validates kernels on a CPU, not
how it checks them: the IR check's findings must not depend on the shell the tool was started from.

So where the variable is on in the tool's process (`on`), classify sends the files whose kernels it lowers to worker
processes that drop it before anything imports Triton there (`drop`, the workers' first act). The tool's own process
and everything that runs the user's code (capture, validate, bench) keep the variable as the user set it. `unusable`
says why a process cannot lower at all (its Triton is, or would be, built by the interpreter); the IR check then
says so for each kernel rather than report what the interpreter broke.

Nothing here imports Triton: a worker must drop the variable before Triton's first import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

ENV = "TRITON_INTERPRET"
_ON = frozenset({"1", "true", "on", "yes", "y"})  # the values Triton reads as on (any case)


def on(environ: Mapping[str, str] | None = None) -> bool:
    """Would Triton run kernels in its interpreter under `environ` (default: this process's environment)?"""
    value = (os.environ if environ is None else environ).get(ENV)
    return value is not None and value.strip().lower() in _ON


def drop() -> None:
    """Remove the variable from this process's environment (a worker of the IR check, before Triton is imported)."""
    os.environ.pop(ENV, None)


def unusable() -> str | None:
    """Why this process cannot lower kernels with Triton's front end (None when it can): the variable is on here
    (a module Triton imports while lowering would be decorated by the interpreter), or this process's
    `triton.language` was built with it on."""
    standard = sys.modules.get("triton.language.standard")
    built = standard is not None and any(type(v).__name__ == "InterpretedFunction" for v in vars(standard).values())
    if on() or built:
        return (f"Triton in this process runs kernels in its interpreter ({ENV}); the IR check lowers kernels "
                f"in processes started without it")
    return None
