"""The worker side of the worker protocol, shared by the job engine's worker and the peaks worker.

A worker reads its set-up as the first line of stdin (then one job per line until stdin ends) and writes one
JSON event per line on the stdout it started with;
anything else printed to stdout (by kernels, by a package at import) goes to stderr, so it can never be
taken for an event.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

from tileiropt.check.environment import (
    CPU_DEVICE,
    choose_release,
    device_description,
    probe_emulated_tileir,
    probe_triton_location,
    triton_distribution,
)
from tileiropt.harness.backends import Backend
from tileiropt.harness.provenance import Provenance
from tileiropt.output import to_jsonable


class Emitter:
    """Writes one event per line, flushed at once (the parent reads them as they come)."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def __call__(self, event: str, **fields: object) -> None:
        self.stream.write(json.dumps(to_jsonable({"event": event, **fields})) + "\n")
        self.stream.flush()


def start_worker() -> tuple[Emitter, dict[str, Any]]:
    """Keep the real stdout for events, send whatever else is printed to stderr, read the job (the first
    line of stdin; what follows is left to the worker)."""
    events = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    return Emitter(events), json.loads(sys.stdin.readline() or "{}")


def more_lines() -> Iterator[dict[str, Any]]:
    """The JSON lines that follow the job on stdin, as they come, until the parent closes it."""
    for line in sys.stdin:
        if line.strip():
            yield json.loads(line)


def base_provenance(backend: Backend, known_distribution: dict[str, Any] | None = None,
                    release: str | None = None) -> Provenance:
    """Device, Triton distribution and versions as this worker sees them; for a TileIR backend, the CUDA Tile IR
    `release` the run follows (None: detected, else the newest known). `known_distribution`: the parent's
    `triton_distribution()`, taken when this worker imports triton from the same folder (reading every
    installed package's metadata again costs each worker most of a second where hundreds are installed)."""
    import torch

    # the same Triton folder, and the same emulation (the emulator is per process)
    same = bool(known_distribution and known_distribution.get("location") == probe_triton_location()
                and bool(known_distribution.get("emulated")) == bool(probe_emulated_tileir()))
    dist = known_distribution if same and known_distribution is not None else triton_distribution()
    provenance = Provenance(
        device=dict(CPU_DEVICE) if backend.interpreted else device_description(),
        triton_distribution=dist.get("name"),
        triton_version=dist.get("version"),
        torch_version=str(torch.__version__),
    )
    if backend.expected_backend == "tileir":
        chosen = choose_release(release).release
        provenance.tileir_release = chosen.label()
        provenance.fallback_enabled = bool(chosen.fallback_variable) and \
            os.environ.get(chosen.fallback_variable or "") == "1"
    return provenance
