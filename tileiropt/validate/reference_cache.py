"""The original's output on a captured launch, computed once per run and device, read by every later case.

A captured launch's reference is the original kernel itself, replayed on seeded inputs. Within one run the same
reference is needed again and again: by the compatibility case (the original against itself) and by each
validate case of the optimized file, on every backend of the same device (under the interpreter and with the
TileIR code forced on under it; on PTX and with the TileIR code forced on under PTX). The original file has no
gate, so each of those computes the same thing: under the interpreter a kernel replayed costs seconds, on a GPU
its compilation does. The first case to compute it saves it here (`torch.save`), in the run's own folder; the
others load it. The key holds the original file's SHA-256, the launch, the seed, the device and the compiler (the
TileIR backend itself computes its own). A launch that
accumulates with atomics is never cached (its result differs from run to run, and its tolerance is widened by
running it again).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from tileiropt.harness.provenance import file_digest
from tileiropt.project.launch import CapturedLaunch


def cache_key(original_path: str, launch: CapturedLaunch, seed: int, device: dict[str, Any],
              compiler: str) -> str | None:
    """The key of a reference, or None when it must not be cached (atomics on a GPU, whose order changes from run to
    run; no file). `compiler`: what compiles the original on that backend ("cuda", "tileir", "interpreter"): the
    TileIR backend's output is its own. The interpreter runs a grid's programs one after another, so its atomics
    sum in one order and its reference is cached too."""
    digest = file_digest(original_path)
    if digest is None or (launch.atomics and compiler != "interpreter"):
        return None
    described = {"file": digest, "launch": launch.to_json(), "seed": seed, "compiler": compiler,
                 "device": [device.get("name"), device.get("capability")]}
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def load(folder: str | None, key: str | None, device: str) -> tuple[Any, Any] | None:
    """(expected output, the inputs after the reference ran) saved under `key`, on `device`; None when absent."""
    if not folder or not key:
        return None
    path = Path(folder) / f"{key}.pt"
    if not path.is_file():
        return None
    try:
        saved = torch.load(path, map_location=device, weights_only=False)
    except Exception:  # a partial or damaged file: compute it again
        return None
    return saved["expected"], saved["used"]


def save(folder: str | None, key: str | None, expected: object, used: object) -> None:
    """Keep a reference for the run's later cases (written whole, then renamed: a reader never sees half)."""
    if not folder or not key:
        return
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".part")
    except OSError:  # the run's folder is gone: later cases compute it themselves
        return
    os.close(handle)
    try:
        torch.save({"expected": expected, "used": used}, temporary)
        os.replace(temporary, Path(folder) / f"{key}.pt")
    except Exception:  # an output torch cannot save: later cases compute it themselves
        Path(temporary).unlink(missing_ok=True)
