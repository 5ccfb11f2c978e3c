"""Where a record's numbers came from, shared by validation records and benchmark rows."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Provenance:
    """Where a record's numbers came from."""

    compiled_backend: str | None = None  # "cuda", "tileir", "interpreter"; several joined by ","
    fallback: bool = False  # a tileir run whose kernels were compiled by another backend
    kernels: dict[str, str] = field(default_factory=dict)  # launched kernel -> backend that compiled it
    # launched kernel -> what ran, read from the launch itself: {"config": its meta-parameters and options,
    # "code": the SHA-256 of its compiled PTX with names of files and debug locations left out (None where nothing
    # was compiled: the interpreter)}
    launched: dict[str, dict[str, Any]] = field(default_factory=dict)
    # launched kernel -> the launch options its JIT function received (occupancy, num_warps, ...): what reached it
    # through the package's wrappers, measured at the launch (a wrapper that drops an option leaves it out); only
    # where the call went through the user's code (a project's entry), never a replay below the wrappers
    options: dict[str, list[str]] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)  # {name, capability, sm_count}
    triton_distribution: str | None = None
    triton_version: str | None = None
    torch_version: str | None = None
    tileir_release: str | None = None  # the CUDA Tile IR release a TileIR record ran under
    fallback_enabled: bool = False  # the release's runtime fallback to PTX was on (silent when it happens)
    worker: str | None = None  # where the worker ran when not simply here: "gpu 1", "slurm"


def file_digest(path: str | Path | None) -> str | None:
    """SHA-256 of a file's bytes (None when it cannot be read): records carry it, `report` compares."""
    import hashlib

    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def digest_memo() -> Callable[[str | Path | None], str | None]:
    """`file_digest` that reads each file once: for one plan, where every case of a kernel names its files."""
    return functools.lru_cache(maxsize=None)(file_digest)


def fallback_note(compiled: str | None, expected: str, provenance: Provenance) -> str | None:
    """Why a TileIR record is not a TileIR number: which backend compiled its kernels instead, and why that
    could happen silently. None when every kernel was compiled by `expected`."""
    others = sorted(b for b in (compiled or "").split(",") if b and b != expected)
    if not others:
        return None
    why = (f" (runtime fallback is on: {provenance.tileir_release} reran the kernel on PTX after TileIR could not "
           "compile it)" if provenance.fallback_enabled else "")
    return f"fallback: compiled by {', '.join(others)}, not {expected}{why}"
