"""A test hook: a failure injected into tileiropt's own call of a kernel, so the tests can show how a failure in the
tool's own code is told (`harness.blame`: TOOL, never the kernel's). Inert unless the variable names the kernel."""

from __future__ import annotations

import os

FAULT_ENV = "TILEIROPT_INJECT_FAULT"  # comma-separated kernel names (a project's [[kernel]] names)


class InjectedFault(RuntimeError):
    """The failure the hook raises."""


def before_call(kernel: str) -> None:
    """Raise `InjectedFault` here, in tileiropt's own frame, when FAULT_ENV names `kernel`."""
    wanted = os.environ.get(FAULT_ENV, "")
    if wanted and kernel in wanted.split(","):
        raise InjectedFault(f"a fault injected into tileiropt's own call of {kernel} ({FAULT_ENV})")
