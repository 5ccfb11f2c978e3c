"""This machine, as validate and bench see it: its GPU, whether TileIR can run, the versions in input keys."""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from tileiropt.check.device import Device
from tileiropt.check.environment import (
    check_environment,
    choose_release,
    emulated_blocker,
    torch_version,
    triton_distribution,
)
from tileiropt.harness.backends import EMULATOR_SETUP, Backend, default_backends


@dataclass
class Machine:
    """What this machine can run: a GPU, and whether TileIR could be active on it."""

    device: Device
    tileir_blockers: list[str]  # why TileIR cannot run here; empty when it may
    tileir_emulated: str = ""  # what the tests' emulated nvtriton says of itself, where this process runs under it
    environment: dict[str, Any] = field(default_factory=dict)  # the `check` report judged: every record keeps it

    @property
    def has_gpu(self) -> bool:
        return self.device.is_gpu

    @classmethod
    def probe(cls, release: str | None = None) -> Machine:
        """This machine, judged for the CUDA Tile IR `release` (default: detected, else the newest known): the
        `check` report of it (`environment_summary`, probed once per process), judged by `judge`."""
        return cls.judge(environment_summary(release))

    @classmethod
    def judge(cls, report: dict[str, Any]) -> Machine:
        """What the `check` report (`CheckReport`, as a dict) says this machine can run: the one place that
        decides whether TileIR can run here. TileIR needs nvtriton (never the tests' emulated one) and a GPU the
        release targets; ENABLE_TILE is the workers' to set, so it is not asked for here."""
        device = Device.from_json(report.get("gpu"))
        distribution = report.get("triton") or {}
        release = report.get("release") or {}
        blockers = []
        if distribution.get("emulated"):  # never taken for the TileIR backend (the tests' emulated nvtriton)
            blockers.append(emulated_blocker(distribution["emulated"]))
        elif not distribution.get("tileir_backend"):
            blockers.append("nvtriton is not installed (triton.backends.tileir not found)")
        if not device.is_gpu:
            blockers.append("no GPU")
        elif not release.get("targets_this_gpu"):
            blockers.append(f"{device.name} is sm_{str(device.capability).replace('.', '')}; "
                            f"{release.get('label')} targets {', '.join(release.get('architectures') or [])}")
        return cls(device=device, tileir_blockers=blockers, tileir_emulated=distribution.get("emulated") or "",
                   environment=report)

    def blocks(self, backend: Backend) -> str | None:
        """Why `backend` cannot run on this machine ("not run: ..."), or None. The TileIR backend needs nvtriton
        on a targeted GPU; an emulated TileIR backend needs the emulator in the run's environment."""
        if backend.name == "tileir" and self.tileir_blockers:
            return "not run: " + "; ".join(self.tileir_blockers)
        if backend.emulated and not self.tileir_emulated:
            return f"not run: no emulated TileIR backend in this run's environment ({EMULATOR_SETUP})"
        if backend.needs_gpu and not self.has_gpu:
            return "not run: no GPU"
        return None

    def default_backends(self) -> list[str]:
        """The backends validate runs here when none is named (`backends.default_backends`)."""
        return default_backends(self.has_gpu, not self.tileir_blockers, bool(self.tileir_emulated))


def environment_summary(release: str | None = None) -> dict[str, Any]:
    """The `check` report of this machine, judged for the CUDA Tile IR `release` the run follows (the one asked
    for, as check.json holds it; None: detected, else the newest known), stored with the records: probed once per
    process, environment and release (a run's phases each store it; probing torch, CUDA and Triton's driver again
    costs about a second on a GPU)."""
    return copy.deepcopy(_summary(tuple(sorted(os.environ.items())), release))


@functools.lru_cache(maxsize=4)
def _summary(environ: tuple[tuple[str, str], ...], release: str | None) -> dict[str, Any]:
    return asdict(check_environment(dict(environ), release=release))


def versions(release: str | None = None) -> dict[str, Any]:
    """Triton, torch and the CUDA Tile IR `release` the workers follow (part of every input key; None: detected,
    else the newest known)."""
    return {**_installed(), "release": choose_release(release).release.version}


@functools.cache
def _installed() -> dict[str, Any]:
    dist = triton_distribution()
    return {"triton": [dist.get("name"), dist.get("version")], "torch": torch_version()}
