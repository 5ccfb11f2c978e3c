"""The device's practical peaks, measured once per device and cached: copy bandwidth and matmul rate.

Datasheet rates are not what a kernel can reach. `measure_peaks` (run in a bench worker, on the
GPU) times a large device-to-device copy (bytes read + bytes written) and large cuBLAS matrix
products in float16, bfloat16 and tf32 (the best of two sizes), with `triton.testing.do_bench`
medians. The result is cached in ``peaks.json`` under the cache folder, keyed by device name and
torch version; ``--remeasure-peaks`` measures again.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tileiropt.cache import cache_dir
from tileiropt.check.environment import device_description
from tileiropt.engine.worker_io import Emitter
from tileiropt.harness.backends import Backend
from tileiropt.harness.provenance import Provenance
from tileiropt.output import dumps, write_atomic

PEAKS_FILE = "peaks.json"
COPY_BYTES = 1 << 30  # 1 GiB copied: far beyond any L2
MATMUL_SIZES = (4096, 8192)  # the best of these is the practical peak (the largest is not always fastest)
MATMUL_DTYPES = ("float16", "bfloat16", "tf32")


def peaks_path() -> Path:
    return cache_dir() / PEAKS_FILE


def peaks_key(device_name: str, torch_version: str) -> str:
    return f"{device_name} | torch {torch_version}"


def _read_all(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def load_cached_peaks(device_name: str, torch_version: str, path: Path | None = None) -> dict[str, Any] | None:
    """The cached peaks of this device and torch version, or None."""
    entry = _read_all(path or peaks_path()).get(peaks_key(device_name, torch_version))
    return entry if isinstance(entry, dict) and entry.get("copy") and entry.get("matmul") else None


def save_peaks(peaks: dict[str, Any], path: Path | None = None) -> Path:
    """Add `peaks` (which names its device and torch version) to the cache file."""
    path = path or peaks_path()
    data = _read_all(path)
    data[peaks_key(peaks["device"], peaks["torch_version"])] = peaks
    write_atomic(path, dumps(data) + "\n")
    return path


# --------------------------------------------------------------------------- measuring (on the GPU)


def _median_ms(fn: Callable[..., object]) -> float:
    # lazy: the bench worker imports torch (4-5 s on a GPU host); reading the cached peaks, a re-run's only use of
    # this module, needs none of it
    from tileiropt.bench.worker import run_do_bench

    return run_do_bench(fn, warmup_ms=25, rep_ms=200).median_ms


def measure_copy(nbytes: int = COPY_BYTES) -> dict[str, Any]:
    """Device-to-device copy bandwidth: (read + write) bytes over the median time."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    nbytes = int(min(nbytes, free // 4))
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    return {"bytes": nbytes, "median_ms": ms, "gbps": 2 * nbytes / (ms * 1e-3) / 1e9}


def measure_matmul(dtype: str, sizes: tuple[int, ...] = MATMUL_SIZES) -> dict[str, Any]:
    """The best cuBLAS rate (TFLOP/s) over square products of `sizes`; tf32 = float32 with TF32 on."""
    import torch

    torch_dtype = torch.float32 if dtype == "tf32" else getattr(torch, dtype)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    best: dict[str, Any] = {}
    try:
        for n in sizes:
            a = torch.randn(n, n, device="cuda", dtype=torch_dtype)
            b = torch.randn(n, n, device="cuda", dtype=torch_dtype)
            ms = _median_ms(lambda a=a, b=b: torch.matmul(a, b))
            tflops = 2 * n**3 / (ms * 1e-3) / 1e12
            if tflops > best.get("tflops", 0.0):
                best = {"m": n, "n": n, "k": n, "median_ms": ms, "tflops": tflops}
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    return best


def measure_peaks() -> dict[str, Any]:
    """Copy bandwidth and matmul rates of the current GPU, with what measured them."""
    import torch
    import triton


    device = device_description()
    return {
        "device": device["name"],
        "capability": device.get("capability"),
        "torch_version": str(torch.__version__),
        "triton_version": str(getattr(triton, "__version__", "unknown")),
        "measured": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "method": "triton.testing.do_bench median (L2 cleared before each run); copy counts read + write bytes; "
                  "matmul is torch.matmul (cuBLAS), best of sizes " + ", ".join(map(str, MATMUL_SIZES)),
        "copy": measure_copy(),
        "matmul": {dtype: measure_matmul(dtype) for dtype in MATMUL_DTYPES},
    }


def run_peaks_job(job: dict[str, Any], backend: Backend, base: Provenance, emit: Emitter, blocked: str | None) -> bool:
    """The job engine's "peaks" job: measure this GPU's peaks (one "peaks" event)."""
    emit("peaks", id=job["id"], peaks=measure_peaks())
    emit("job_done", id=job["id"], parts={})
    return True
