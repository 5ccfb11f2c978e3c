"""`tileiropt check`: this machine's Triton, GPU, backend, tileiras and CUDA Tile IR release, and whether TileIR is
ready; with `--require-tileir`, exit 1 unless it is."""

from __future__ import annotations

from rich.markup import escape

from tileiropt.check.environment import check_environment, print_check
from tileiropt.errors import ExitCode
from tileiropt.output import console, err_console, print_json


def check_command(*, as_json: bool = False, require_tileir: bool = False,
                  tileir_version: str | None = None) -> ExitCode:
    """Everything behind the command; returns the exit code."""
    report = check_environment(release=tileir_version)
    if as_json:
        print_json(report)
    else:
        print_check(report, console)
    if require_tileir and not report.tileir_ready:
        reasons = escape("; ".join(report.reasons))
        err_console.print(f"[bold red]error[/]: TileIR is not ready: {reasons}", soft_wrap=True)
        return ExitCode.FAILED
    return ExitCode.OK
