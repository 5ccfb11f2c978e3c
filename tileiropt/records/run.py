"""run.json: what `tileiropt run` did, phase by phase, as typed records written by the pipeline and read back by
the report (every field's JSON type checked on read, so a damaged record is named in one line, never a traceback)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tileiropt.bench.records import BenchKernel, kernel_from_dict
from tileiropt.contract.job_timing import timings_from_list
from tileiropt.contract.outcome import PhaseResult
from tileiropt.output import dataclass_from_dict
from tileiropt.schema import SCHEMA_VERSION


@dataclass
class RunResult:
    """What `run` did: written to ``<artifacts>/run.json`` and printed with --json; read back by `run_from_dict`."""

    FILE: ClassVar[str] = "run.json"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        """The record from its JSON document (every field's JSON type checked: TypeError names a wrong one)."""
        return run_from_dict(data)

    phases: list[PhaseResult]
    kernels: list[BenchKernel]
    stopped: dict[str, dict[str, str]]  # kernel -> {"phase", "reason"}
    artifacts: str
    report: str | None = None
    exit_code: int = 0
    command: list[str] = field(default_factory=list)
    project: str | None = None
    started: str = ""
    seconds: float = 0.0  # the phases'
    # the whole command's, from its process's start (Python, the tool's imports, reading the target, the phases);
    # set as it prints its outcome (`--json` and the terminal), so run.json, saved before, has none
    wall_seconds: float | None = None
    schema_version: int = SCHEMA_VERSION  # the one schema key of every record and --json output
    # the safe-modification rule: optimized files set aside (path -> {"moved_to", "reason"}) because they failed
    # validation or are slower on PTX beyond the threshold; files written into the user's own (--in-place)
    rejected: dict[str, dict[str, str]] = field(default_factory=dict)
    in_place: dict[str, str] = field(default_factory=dict)  # the user's file -> where its original was kept
    # the captured program's own failure: command, exit_code, exception, where, output (last lines), summary
    program: dict[str, Any] | None = None
    cwd: str = ""  # the folder the run was started in: the report's next-step command starts there
    target: str = ""  # what the run covered: its project file, else its kernel files (`run_target`)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # kernel -> its one verdict (report.verdict)
    in_place_refused: dict[str, str] = field(default_factory=dict)  # the user's file -> why --in-place did not write


def phase_from_dict(data: object) -> PhaseResult:
    if not isinstance(data, dict):
        raise TypeError(f"a phase must be an object, got {type(data).__name__}")
    return dataclass_from_dict(PhaseResult, {**data, "jobs": timings_from_list(data.get("jobs") or [])})


def _objects(data: dict[str, Any], key: str) -> None:
    """`data[key]`, when present, must map names to objects (a stop, a set-aside file, a verdict)."""
    value = data.get(key)
    if value is None:
        return
    if not isinstance(value, dict):
        raise TypeError(f"RunResult.{key} must be an object, got {type(value).__name__}")
    for name, item in value.items():
        if not isinstance(item, dict):
            raise TypeError(f"RunResult.{key}[{name!r}] must be an object, got {type(item).__name__}")


def run_from_dict(data: object) -> RunResult:
    """A RunResult from run.json's document; raises TypeError (naming the field) when its shape is wrong."""
    if not isinstance(data, dict):
        raise TypeError(f"run.json must be an object, got {type(data).__name__}")
    for key in ("stopped", "rejected", "verdicts"):
        _objects(data, key)
    for key in ("phases", "kernels"):
        if not isinstance(data.get(key) or [], list):
            raise TypeError(f"RunResult.{key} must be a list, got {type(data[key]).__name__}")
    return dataclass_from_dict(RunResult, {**data, "phases": [phase_from_dict(p) for p in data.get("phases") or []],
                                           "kernels": [kernel_from_dict(k) for k in data.get("kernels") or []],
                                           "stopped": data.get("stopped") or {},
                                           "artifacts": data.get("artifacts", "")})
