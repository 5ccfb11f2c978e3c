"""The phases of a run, in the order `tileiropt run` takes them: the one list the pipeline, its summary and
the report read.

`check` probes the machine; `capture` records a program's launches (only when the project asks for it);
`compatibility` validates the original file; `classify`, `apply`, `validate`, `bench` and `report` are the
commands of the same names.
"""

from __future__ import annotations

PHASES = ("check", "capture", "compatibility", "classify", "apply", "validate", "bench", "report")
OPTIONAL_PHASES = ("capture",)  # run only when the project asks for it


def comes_after(phase: str, other: str) -> bool:
    """`phase` runs after `other`; False when either is not a phase."""
    return phase in PHASES and other in PHASES and PHASES.index(phase) > PHASES.index(other)
