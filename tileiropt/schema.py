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
from typing import Protocol

SCHEMA_VERSION = 2  # 2: one status vocabulary (1 had "ok", "failed", "skipped", "no_kernels" in places)

PASS = "pass"
FAIL = "fail"
ERROR = "error"
NOT_RUN = "not-run"
STATUSES = (PASS, FAIL, ERROR, NOT_RUN)

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
SAME_ON_PTX_EARLIER = "not run on PTX: once the TileIR hints PTX drops are dropped, the same config as"  # older records

# What schema-1 records said, read as today's status (so an earlier run's records still render).
_EARLIER = {"ok": PASS, "failed": FAIL, "skipped": NOT_RUN, "no_kernels": NOT_RUN}


def read_status(value: object) -> str:
    """A record's status as read from JSON: one of `STATUSES` (earlier spellings mapped); ValueError otherwise."""
    if isinstance(value, str):
        value = _EARLIER.get(value, value)
        if value in STATUSES:
            return value
    raise ValueError(f"status {value!r} is not one of {', '.join(STATUSES)}")


class HasStatus(Protocol):
    """A record with a status (a validation record, a bench row, a phase)."""

    @property
    def status(self) -> str: ...


def count_statuses(items: Iterable[HasStatus]) -> dict[str, int]:
    """How many of `items` have each `.status` (every status present, zero or not)."""
    counts = dict.fromkeys(STATUSES, 0)
    for item in items:
        counts[item.status] = counts.get(item.status, 0) + 1
    return counts

# Config labels of validation records that are not one autotune config (validate.records has the others).
LAUNCH = "(launch)"  # the kernel has no autotuner: one plain launch
AUTOTUNED = "(autotuned)"  # --best-config: the autotuner chose (the record's label names the choice)

GATE_MARKER = "tileiropt gate"  # in the comment above the gate: a file tileiropt wrote
