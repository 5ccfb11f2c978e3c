"""How much a command prints: `-q/--quiet` (errors and the findings or final result only), the default, or
`-v/--verbose` (more detail). Set once per invocation by the command line; read by the commands."""

from __future__ import annotations

from tileiropt.errors import UserError
from tileiropt.output import console

QUIET, NORMAL, VERBOSE = "quiet", "normal", "verbose"
_state = {"level": NORMAL}


def set_verbosity(quiet: bool = False, verbose: bool = False, *, reset: bool = False) -> str:
    """Set the level from the flags (`reset`: start from the default, as each invocation does); both flags
    at once are bad input. Quiet also silences the Rich console on stdout (errors go to stderr; JSON, SARIF
    and annotations are written to stdout directly)."""
    if quiet and verbose:
        raise UserError("-q/--quiet and -v/--verbose exclude each other", hint="give one of them")
    if reset:
        _state["level"] = NORMAL
    if quiet or verbose:
        _state["level"] = QUIET if quiet else VERBOSE
    console.quiet = _state["level"] == QUIET
    return _state["level"]


def verbosity() -> str:
    return _state["level"]
