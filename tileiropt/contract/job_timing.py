"""The cost of one job of the engine, kept with the phase's records (validate.json, bench.json) and in run.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tileiropt.output import dataclass_from_dict


@dataclass
class JobTiming:
    """One job, as the parent measured it and the worker reported it: what the user waits for, by part."""

    phase: str  # "validate" | "bench"
    kernel: str
    backend: str
    slot: str  # where its worker ran: "local", "gpu 0", "slurm"
    seconds: float  # from sending the job to its end
    worker_start_s: float | None = None  # the start-up of the worker it began (None: a running worker took it)
    parts: dict[str, float] = field(default_factory=dict)  # the worker's split: import, prepare, first_call, ...
    detail: dict[str, Any] = field(default_factory=dict)  # what else names the job: its variant, its items


def timings_from_list(data: object) -> list[JobTiming]:
    """JobTiming records read back (validated field by field)."""
    if not isinstance(data, list):
        raise TypeError(f"jobs must be a list, got {type(data).__name__}")
    return [dataclass_from_dict(JobTiming, item) for item in data]
