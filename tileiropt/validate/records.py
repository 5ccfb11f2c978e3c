"""Validation records: one per (kernel, variant, shapes, dtypes, backend, config), saved for `report`.

`ValidateRun` is what `tileiropt validate` writes to ``<artifacts>/validate.json``;
`load_validate_run` reads it back. The schema is documented in ``docs/validate.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from tileiropt.contract.job_timing import JobTiming, timings_from_list
from tileiropt.contract.store import Store
from tileiropt.errors import ExitCode
from tileiropt.harness.provenance import Provenance
from tileiropt.output import dataclass_from_dict, load_record_file
from tileiropt.schema import (
    ERROR,
    FAIL,
    NOT_RUN,
    PASS,
    SCHEMA_VERSION,
    Cause,
    Repeat,
    count_statuses,
    read_cause,
    read_status,
)

VALIDATE_FILE = "validate.json"

# Statuses (tileiropt.schema): PASS; FAIL: the kernel ran and its output is wrong (values, dtype, shape,
# structure); ERROR: it could not produce an output (compile error, exception, timeout, crash, bad reference);
# NOT_RUN: it cannot run here (no GPU, TileIR not ready, no optimized file, no reference).

VARIANTS = ("original", "optimized")

# Config labels of records that are not one autotune config (LAUNCH, AUTOTUNED: tileiropt.schema, which the
# harness reads too).
PREPARE = "(prepare)"  # importing the file, building inputs or evaluating the reference
NONE = "-"  # not-run records that never reached a config


class Measures(TypedDict, total=False):
    """What a record measured, given by keyword to `record_for` (the fields of `ValidationRecord` of that name)."""

    max_abs: float | None
    max_rel: float | None
    mismatches: int | None
    elements: int | None
    first_mismatch: list[int] | None
    mismatch_in: str | None
    seconds: float | None


@dataclass
class ValidationRecord:
    kernel: str
    variant: str  # "original" | "optimized"
    backend: str  # see tileiropt.harness.backends.BACKENDS
    config: str  # autotune config label, LAUNCH, AUTOTUNED, PREPARE or NONE
    status: str  # PASS | FAIL | ERROR | NOT_RUN
    reason: str = ""
    path: str = ""  # the file that was validated
    shapes: dict[str, list[int]] = field(default_factory=dict)  # the shapes that ran
    dtypes: dict[str, str] = field(default_factory=dict)
    reference: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    mismatches: int | None = None
    elements: int | None = None  # output elements compared
    first_mismatch: list[int] | None = None  # index of the first wrong element in `mismatch_in`
    mismatch_in: str | None = None  # which output holds it: "out", "out[1]", "out['y']"
    atol: float | None = None
    rtol: float | None = None
    seconds: float | None = None
    scaled_from: dict[str, list[int]] | None = None  # the user's shapes when the interpreter scaled them
    source_sha256: str | None = None  # the file validated, as it was: `report` marks records whose file changed
    provenance: Provenance = field(default_factory=Provenance)
    inputs: str | None = None  # the input key of its case (tileiropt.engine.resume): a re-run reuses on a match
    cause: Cause | None = None  # whose failure it is (a failed or errored record; on a pass, a caveat such as
    # NONDETERMINISM), set where it was observed (tileiropt.harness.blame)
    evidence: list[str] = field(default_factory=list)  # what the cause was told from: the failing call's last
    # frames, a dead worker's stderr tail (shown by the report)
    repeat: Repeat | None = None  # not run: an earlier config computes (or compiles) the same (schema.Repeat)
    bf16_wrong: bool = False  # a pass on the interpreter where its bfloat16 products are wrong (probed)

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def hint_only_repeat(self) -> bool:
        """Not run because an earlier config computes the same: on the interpreter, the same meta-parameters and
        pre-hook; on PTX with the TileIR code forced on, the same config with its TileIR hints as PTX compiles them."""
        return self.status == NOT_RUN and self.repeat is not None


@dataclass
class ValidateRun:
    """Every record of one `validate` invocation, with the environment and the command line."""

    FILE: ClassVar[str] = VALIDATE_FILE
    JOURNAL: ClassVar[str] = "validate"  # its records as they finish, superseded once it is saved

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValidateRun:
        """The record from its JSON document (every field's JSON type checked: TypeError names a wrong one)."""
        return run_from_dict(data)

    records: list[ValidationRecord]
    backends: list[str]
    command: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    project: str | None = None
    started: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    complete: list[str] = field(default_factory=list)  # input keys whose cases finished (reusable by a re-run)
    reused: int = 0  # records taken unchanged from an earlier run
    interrupted: bool = False  # Ctrl-C or SIGTERM: only what finished is here
    slots: int = 0  # workers that could run at once (GPUs x workers per GPU, CPU cores, SLURM steps)
    workers: int = 0  # worker processes started: one per slot and backend served, plus one per restart
    jobs: list[JobTiming] = field(default_factory=list)  # each job's cost (tileiropt.engine.engine)
    schema_version: int = SCHEMA_VERSION  # the one schema key of every record and --json output

    def counts(self) -> dict[str, int]:
        return count_statuses(self.records)

    def merge(self, other: ValidateRun) -> None:
        """Take in the records of a later invocation of the same run (its validate phase after its compatibility
        phase): one validate.json keeps them all, and the run's whole cost."""
        self.records += other.records
        self.backends = list(dict.fromkeys(self.backends + other.backends))
        self.seconds = round(self.seconds + other.seconds, 3)
        self.notes = list(dict.fromkeys(self.notes + other.notes))
        self.complete = sorted(set(self.complete) | set(other.complete))
        self.reused += other.reused
        self.interrupted = self.interrupted or other.interrupted
        self.jobs += other.jobs
        self.workers += other.workers
        self.slots = max(self.slots, other.slots)

    def exit_code(self) -> ExitCode:
        """0 when every record that ran passed, 1 when any failed or errored, 3 when none ran."""
        counts = self.counts()
        if counts[FAIL] or counts[ERROR]:
            return ExitCode.FAILED
        if counts[PASS] == 0:
            return ExitCode.NOT_RUN
        return ExitCode.OK


def _number(value: float | str | None) -> float | None:
    """JSON keeps non-finite floats as strings ("nan", "inf"); turn them back into floats."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return value


def record_from_dict(data: dict[str, Any]) -> ValidationRecord:
    data = dict(data)
    data["provenance"] = dataclass_from_dict(Provenance, data.get("provenance") or {})
    data["status"] = read_status(data.get("status"))
    data["cause"] = read_cause(data.get("cause"))
    data["repeat"] = Repeat(str(data["repeat"])) if data.get("repeat") else None
    for key in ("max_abs", "max_rel"):
        data[key] = _number(data.get(key))
    return dataclass_from_dict(ValidationRecord, data)


def run_from_dict(data: dict[str, Any]) -> ValidateRun:
    data = dict(data)
    data["jobs"] = timings_from_list(data.get("jobs") or [])
    data["records"] = [record_from_dict(r) for r in data.get("records", [])]
    return dataclass_from_dict(ValidateRun, data)


def save_validate_run(run: ValidateRun, artifacts: Path | str) -> Path:
    """Write `run` to ``<artifacts>/validate.json`` (atomically) and return the path; the journal of the
    records as they finished is then superseded (removed)."""
    return Store(artifacts).save(ValidateRun, run)


def load_validate_run(path: Path | str) -> ValidateRun:
    """Read a `validate.json` (or the artifacts folder holding one)."""
    return load_record_file(path, VALIDATE_FILE, "records", "validation records", "tileiropt validate", run_from_dict)

