"""What this machine is, probed once and kept: an unchanged re-run of `tileiropt run` does not import torch again.

Probing the machine means importing torch and Triton and asking CUDA for the device: 2 s on a laptop, 4-6 s on a
GPU server, most of an unchanged re-run. The facts those probes give (which Triton, which torch, which GPU, the
active Triton backend) change only when something a fingerprint sees changes: the Python, where torch and Triton
are imported from and when they were installed (found without importing them), whether Triton has the TileIR
backend, the variables Triton, CUDA and TileIR read, the GPUs `nvidia-smi` lists (name, UUID, driver), and the
host. So `run`, `validate` and `bench` keep them in the tool's
cache folder under that fingerprint (the last `KEPT` machines: one host seen through different
`CUDA_VISIBLE_DEVICES` is a machine each), for a day at most, and adopt them (`environment.adopted_facts`) while it
runs; any change probes again, and `--fresh` always does.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tileiropt.cache import cache_dir
from tileiropt.check import environment
from tileiropt.output import dumps, write_atomic

FACTS_FILE = "machine-facts.json"
MAX_AGE_S = 24 * 3600.0
ENV_PREFIXES = ("TRITON_", "CUDA_", "TILEIR", "ENABLE_TILE", "NVIDIA_", "CUTILE_")
ENV_NAMES = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")
ENV_IGNORED = ("TRITON_CACHE_DIR", "TRITON_DUMP_DIR")  # where Triton keeps files: no fact depends on them
FORMAT = 3  # the layout of the stored facts (2: the GPU's memory; 3: several machines)
KEPT = 8  # machines whose facts are kept, the newest first
PACKAGES = ("torch", "triton")  # where each is imported from, and when that was installed


def gpu_listing() -> str:
    """The GPUs `nvidia-smi` lists (index, name, UUID, driver), or why none is listed."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index,name,uuid,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no nvidia-smi: {type(exc).__name__}"
    return f"{done.returncode}:{done.stdout.strip()}"


def package_stamp(name: str) -> list[Any] | None:
    """Where `import name` would load from, and that file's modification time (a reinstall changes it), found
    without importing it; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        return [spec.origin, os.stat(spec.origin).st_mtime_ns]
    except OSError:
        return [spec.origin, None]


def fingerprint(env: dict[str, str] | None = None) -> str:
    """What the facts depend on, hashed (see the module's docstring)."""
    env = dict(os.environ if env is None else env)
    packages = {name: package_stamp(name) for name in PACKAGES}
    triton = packages.get("triton")
    tileir = bool(triton and triton[0] and (Path(str(triton[0])).parent / "backends" / "tileir").is_dir())
    shown = {k: v for k, v in sorted(env.items())
             if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and k not in ENV_IGNORED}
    described = {"format": FORMAT, "python": [sys.executable, sys.version], "packages": packages,
                 "tileir_backend": tileir, "env": shown, "gpus": gpu_listing(), "host": platform.node()}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def probe() -> dict[str, Any]:
    """The facts, probed now (imports torch and Triton, asks CUDA)."""
    gpu = environment.probe_gpu()
    backend, error = environment.probe_active_backend() if gpu is not None else (None, None)
    return {"triton": environment._triton_distribution(), "torch": environment.probe_torch(), "gpu": gpu,
            "active_backend": [backend, error]}


def _path() -> Path:
    return cache_dir() / FACTS_FILE


def _stored() -> list[Any]:
    """The kept entries, newest first; none where the file is missing, damaged or of another layout."""
    try:
        stored = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(stored, dict) or stored.get("format") != FORMAT or not isinstance(stored.get("machines"), list):
        return []
    return stored["machines"]


def load(key: str, now: float | None = None) -> dict[str, Any] | None:
    """The stored facts of fingerprint `key`, when younger than MAX_AGE_S and well-formed; else None."""
    stored = next((entry for entry in _stored() if isinstance(entry, dict) and entry.get("fingerprint") == key), None)
    if stored is None:
        return None
    probed = stored.get("probed")
    facts = stored.get("facts")
    if not isinstance(probed, (int, float)) or (now if now is not None else time.time()) - probed > MAX_AGE_S:
        return None
    if not isinstance(facts, dict) or not isinstance(facts.get("triton"), dict) \
            or not isinstance(facts.get("torch"), dict) or not isinstance(facts.get("gpu"), (dict, type(None))) \
            or not isinstance(facts.get("active_backend"), list) or len(facts["active_backend"]) != 2:
        return None
    return {**facts, "probed": probed}


def save(key: str, facts: dict[str, Any]) -> None:
    """Keep the facts under `key`, first, with those of the last `KEPT` - 1 other machines; a read-only cache is no
    error."""
    others = [entry for entry in _stored() if isinstance(entry, dict) and entry.get("fingerprint") != key]
    entry = {"fingerprint": key, "probed": time.time(), "facts": facts}
    with contextlib.suppress(OSError):
        write_atomic(_path(), dumps({"format": FORMAT, "machines": [entry, *others][:KEPT]}) + "\n")


def obtain(fresh: bool = False) -> tuple[dict[str, Any], str]:
    """(facts, where they came from): the stored ones when the fingerprint is unchanged (not with `fresh`), else
    probed now and stored."""
    key = fingerprint()
    found = None if fresh else load(key)
    if found is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(found.pop("probed")))
        return found, f"probed at {stamp}, machine unchanged (--fresh probes again)"
    facts = probe()
    save(key, facts)
    return facts, "probed now"


@contextlib.contextmanager
def machine_facts(fresh: bool = False) -> Iterator[str]:
    """While inside, the environment's probes answer from the facts (`obtain`); yields where they came from."""
    facts, origin = obtain(fresh)
    with environment.adopted_facts(facts):
        yield origin
