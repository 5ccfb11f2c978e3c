"""The one vocabulary of every record and `--json` output: a schema version and four statuses.

Every JSON object the tool writes or prints carries ``schema_version`` (this module's `SCHEMA_VERSION`),
and every ``status`` field in it takes one of `STATUSES`, whatever the phase:

- ``pass``: done, and the result is right (validated, measured, parsed, the phase finished).
- ``fail``: done, and the result is wrong (wrong values; a phase that found kernels failing).
- ``error``: it could not be done (exception, compile error, timeout, crash, unparsable file).
- ``not-run``: not attempted here; the record says why (no GPU, TileIR not ready, nothing to do).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Protocol

SCHEMA_VERSION = 2  # 2: one status vocabulary (1 had "ok", "failed", "skipped", "no_kernels" in places)



class StrEnum(str, Enum):
    """An enum whose members are their JSON strings (`enum.StrEnum` of Python 3.11, here for 3.10 too)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Status(StrEnum):
    """A record's status: equal to its JSON string, so records written before this type read the same."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    NOT_RUN = "not-run"


PASS = Status.PASS
FAIL = Status.FAIL
ERROR = Status.ERROR
NOT_RUN = Status.NOT_RUN
STATUSES = (PASS, FAIL, ERROR, NOT_RUN)


class Cause(StrEnum):
    """Whose failure a record is, set where the failure was observed (`tileiropt.harness.blame`): by the
    exception's type, by the frames of its traceback, or by the engine when it lost a worker. Never guessed
    later from a record's text; a failure whose cause could not be told is UNKNOWN, never the kernel's."""

    KERNEL = "kernel"  # its own code raised (in its file or its package), or its output is wrong
    REFERENCE = "reference"  # the project's reference computation raised
    COMPILER = "compiler"  # Triton's compiler or the TileIR compiler rejected it
    ENVIRONMENT = "environment"  # a module, driver, device or limit of this machine
    TOOL = "tool"  # tileiropt's own frames: its replay, pinning or harness
    NONDETERMINISM = "nondeterminism"  # the original disagrees with itself on the same inputs
    TIMEOUT = "timeout"  # it did not finish in the time allowed
    OUT_OF_MEMORY = "out-of-memory"  # an allocation failed (device or host)
    UNKNOWN = "unknown"  # the evidence does not tell whose failure it is


class Repeat(StrEnum):
    """Why a config's record did not run: an earlier config of the case computes (or compiles) the same."""

    INTERPRETER = "interpreter"  # the same meta-parameters and pre-hook: the interpreter computes the same
    PTX = "ptx"  # with its TileIR hints as PTX compiles them, the same config: the same code


def read_cause(value: object) -> Cause | None:
    """A record's cause as read from JSON: None where it has none (a pass, or a record written before causes)."""
    if value is None or value == "":
        return None
    try:
        return Cause(str(value))
    except ValueError as exc:
        raise ValueError(f"cause {value!r} is not one of {', '.join(c.value for c in Cause)}") from exc

# The start of an error record's reason where the TileIR compiler (tileiras) refused the kernel: the verdict says
# "the TileIR compiler rejects it", not "wrong results".
REJECTED_BY_TILEIR = "rejected by the TileIR compiler"
# The start of a not-run record's reason where the interpreter would compute what an earlier config computed (the
# same meta-parameters and pre-hook, other hints): counted apart from what could not run.
SAME_ON_INTERPRETER = "not run on the interpreter: the same meta-parameters and pre-hook as"
# Likewise on PTX with the TileIR code forced on: a config whose TileIR hints PTX drops (occupancy, 2-CTA mode) or
# sets as it compiles them (num_warps, at least what the tile needs) is, so compiled, the very config an earlier item
# ran, and compiles to the same code.
SAME_ON_PTX = "not run on PTX: with its TileIR hints as PTX compiles them, the same config as"
REFERENCE_RAISED = "the reference raised"  # a record's reason where the project's own reference failed
BF16_WRONG = "the interpreter's bfloat16 products are wrong"  # the start of a pass's note where that was probed

# What schema-1 records said, read as today's status (so an earlier run's records still render).
_EARLIER = {"ok": PASS, "failed": FAIL, "skipped": NOT_RUN, "no_kernels": NOT_RUN}


def read_status(value: object) -> str:
    """A record's status as read from JSON: one of `STATUSES` (earlier spellings mapped); ValueError otherwise."""
    if isinstance(value, str):
        value = _EARLIER.get(value, value)
        if value in STATUSES:
            return Status(value)
    raise ValueError(f"status {value!r} is not one of {', '.join(STATUSES)}")


class HasStatus(Protocol):
    """A record with a status (a validation record, a bench row, a phase)."""

    @property
    def status(self) -> str: ...


def count_statuses(items: Iterable[HasStatus]) -> dict[str, int]:
    """How many of `items` have each `.status` (every status present, zero or not)."""
    counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
    for item in items:
        counts[item.status] = counts.get(item.status, 0) + 1
    return counts

# Config labels of validation records that are not one autotune config (validate.records has the others).
LAUNCH = "(launch)"  # the kernel has no autotuner: one plain launch
AUTOTUNED = "(autotuned)"  # --best-config: the autotuner chose (the record's label names the choice)

GATE_MARKER = "tileiropt gate"  # in the comment above the gate: a file tileiropt wrote
