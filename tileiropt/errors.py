"""Errors the user can act on, and the exit codes every command shares.

A `UserError` is printed as one line -- ``file:line: message (fix: hint)`` -- and turns into
a non-zero exit; it never becomes a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes scripts can trust (documented in the README)."""

    OK = 0
    FAILED = 1  # the command ran and the answer is "no": a check failed, a finding, a mismatch
    BAD_INPUT = 2  # unreadable file, wrong TOML, bad flags: nothing was done
    NOT_RUN = 3  # nothing could run here (no GPU for bench, nothing to validate)
    COMPILER = 4  # a kernel's check failed: Triton's or the TileIR compiler rejected it
    ENVIRONMENT = 5  # ... a module, driver, device or limit of this machine
    TOOL = 6  # ... an error of tileiropt itself (its replay, its pinning), not of the kernel
    NONDETERMINISM = 7  # ... the original disagrees with itself on the same inputs beyond any comparison
    TIMEOUT = 8  # ... it did not finish in the time allowed
    OUT_OF_MEMORY = 9  # ... it ran out of memory
    UNKNOWN = 10  # ... and whose failure it is could not be told (the report shows the evidence)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: every worker ended, the records that finished were saved


# The exit code of a failed check, by whose failure it is: the kernel's own (1), the project's reference (2, a bad
# input), and one code for each cause that is not the kernel's. The first of a run's failed kernels in this order
# decides its code: what the user's code did first, then what the machine or the tool did.
_CAUSE_CODES = {"kernel": ExitCode.FAILED, "reference": ExitCode.BAD_INPUT, "compiler": ExitCode.COMPILER,
                "nondeterminism": ExitCode.NONDETERMINISM, "out-of-memory": ExitCode.OUT_OF_MEMORY,
                "timeout": ExitCode.TIMEOUT, "environment": ExitCode.ENVIRONMENT, "tool": ExitCode.TOOL,
                "unknown": ExitCode.UNKNOWN}
CAUSE_PRECEDENCE = tuple(_CAUSE_CODES)


def cause_exit_code(cause: str | None) -> ExitCode:
    """The exit code of a kernel that needs attention because of `cause` (a `schema.Cause`); a verdict with no
    cause (slower on PTX, set aside, an error finding, a fallback) is a plain no: 1."""
    return _CAUSE_CODES.get(str(cause), ExitCode.FAILED) if cause is not None else ExitCode.FAILED


def verdicts_exit_code(causes: list[str | None]) -> ExitCode:
    """The exit code of the kernels that need attention (each its cause, None for one without): the first by
    `CAUSE_PRECEDENCE`; 0 when there are none."""
    if not causes:
        return ExitCode.OK
    if None in causes:
        return ExitCode.FAILED
    return cause_exit_code(min(causes, key=lambda c: CAUSE_PRECEDENCE.index(str(c))
                               if str(c) in CAUSE_PRECEDENCE else len(CAUSE_PRECEDENCE)))


def run_exit_code(*, interrupted: bool, failed: bool, not_run_here: bool) -> ExitCode:
    """The exit code of a run: 130 interrupted, else 1 when something failed (a kernel stopped, a file set aside, a
    benchmark errored, the program failed), else 3 when what was asked cannot run on this machine, else 0."""
    if interrupted:
        return ExitCode.INTERRUPTED
    if failed:
        return ExitCode.FAILED
    return ExitCode.NOT_RUN if not_run_here else ExitCode.OK


@dataclass
class UserError(Exception):
    message: str
    file: str | None = None
    line: int | None = None
    hint: str | None = None
    code: ExitCode = ExitCode.BAD_INPUT

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        fix = f" (fix: {self.hint})" if self.hint else ""
        return f"{where}{self.message}{fix}"


MAX_SECONDS = 7 * 24 * 3600.0  # a week: anything longer is a typo, and a wait on it would never return


def check_seconds(name: str, value: float, limit: float = MAX_SECONDS, unit: str = "seconds") -> float:
    """`value` when it is a finite duration in (0, limit]; else a one-line UserError naming `name` (nan, inf
    and huge values are refused: a worker's wait on them hangs or overflows)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= limit:
        raise UserError(f"{name} must be a number of {unit} in (0, {limit:g}], got {value!r}")
    return float(value)


# The start of the reason of a record whose original could not run because the tool's own replay of a launch failed
# before the kernel ran (replay.PinningError): the verdict says it is the tool's error, never "the original fails".
PINNING_ERROR = "an error of tileiropt, not of the kernel: it could not replay"
