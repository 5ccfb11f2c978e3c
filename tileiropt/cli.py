"""The `tileiropt` command line: one thin function per subcommand, no logic here.

Each command parses flags, calls its phase module, prints a Rich table (or JSON with --json)
and exits with a code from `tileiropt.errors.ExitCode`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from tileiropt import __version__
from tileiropt.errors import ExitCode, UserError
from tileiropt.output import err_console

app = typer.Typer(
    name="tileiropt",
    help="Prepare existing Triton kernels for NVIDIA's CUDA Tile IR backend (ENABLE_TILE=1, Blackwell), "
    "keeping the PTX path unchanged.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn a UserError into one line on stderr and its exit code -- never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            err_console.print(f"[bold red]error[/]: {exc}", soft_wrap=True)
            raise typer.Exit(int(exc.code)) from None
        except KeyboardInterrupt:
            err_console.print("[bold red]error[/]: interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tileiropt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Phases: check -> classify -> apply -> validate -> bench -> report; `run` does them all."""


def main() -> None:
    try:
        app()
    except SystemExit as exc:  # typer's standalone mode exits through here
        sys.exit(exc.code)


__all__ = ["app", "main", "user_errors", "JsonFlag", "ExitCode"]
