"""The worker of the job engine: ``python -m tileiropt.run.job_worker`` (behind `tileiropt.engine.sentinel`).

It sits above the engine and the phases whose jobs it runs (validate's cases, bench's measurements and peaks,
`JOBS`): the engine starts it by module name and never imports a phase.

The parent (`tileiropt.engine.engine`) starts it with a backend's environment (ENABLE_TILE, TRITON_INTERPRET,
TILEIROPT_FORCE_TILEIR, the run's TRITON_CACHE_DIR) and writes, one JSON line each:

    {"backend": "ptx", "triton_distribution": {...}, "release": "13.4"}     the set-up, once
    {"job": {"kind": "case", "id": 3, "case": Case, "best_config": false}}   a validation case
    {"job": {"kind": "bench", "id": 7, "items": [BenchItem, ...], "pairs": [[0, 1]], ...}}
    ...

and closes stdin when it has nothing more (a worker kept between phases waits for more). The worker answers
with one JSON event per line on its own stdout (anything the kernels print goes to stderr):

    {"event": "hello", "provenance": {...}, "pid": 123}     once, after start-up
    {"event": "job", "id": 3}                                 a job begins
    {"event": "plan", "id": 3, "labels": [...]}               its items, in order
    {"event": "start", "id": 3, "item": 0}                    an item begins (the parent times it out)
    ... the job kind's own result events, each with "id" (validate: record, skip; bench: row, pair)
    {"event": "job_done", "id": 3, "parts": {"import": 0.4, ...}}   seconds the job spent, by part
    {"event": "done"}

After an error that leaves the CUDA context unusable, the worker exits; the parent starts a new one for the rest.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from tileiropt.bench.peaks import run_peaks_job
from tileiropt.bench.worker import run_bench_job
from tileiropt.engine.worker_io import Emitter, base_provenance, more_lines, start_worker
from tileiropt.harness import shared_memory_guard, stand_ins
from tileiropt.harness.backends import BACKENDS, FORCE_TILEIR_ENV
from tileiropt.harness.tileir_surface import force_tileir_code
from tileiropt.validate.worker import backend_blocked, run_case_job

JOBS = {"case": run_case_job, "bench": run_bench_job, "peaks": run_peaks_job}


def install_allocator(device: str) -> None:
    """A default allocator for device-side TMA descriptors (a kernel file may set its own)."""
    import torch  # the worker's own import of torch: the set-up line has been read, the hello not yet sent
    import triton

    if hasattr(triton, "set_allocator"):
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device))


def release_cached_memory() -> None:
    """Give the memory torch's caching allocator keeps back to the GPU (the compiled kernels stay)."""
    import torch  # imported already by the job; here only to name it

    torch.cuda.empty_cache()


def serve(setup: dict[str, Any], emit: Emitter, jobs: Iterable[dict[str, Any]]) -> int:
    """Say hello, prepare the process once, then run each job as it comes."""
    backend = BACKENDS[setup["backend"]]
    release = setup.get("release")
    base = base_provenance(backend, setup.get("triton_distribution"), release)
    emit("hello", provenance=base, pid=os.getpid())
    judged = setup.get("tileir_blockers")
    blocked = backend_blocked(backend, release, judged if isinstance(judged, list) else None)
    if not blocked:
        install_allocator(backend.device)
        stand_ins.skip_module_benchmarks()  # a kernel file's own benchmark sweep never runs at import
        stand_ins.install_interpreter_device()
        if os.environ.get(FORCE_TILEIR_ENV) == "1":  # an optimized file's TileIR code on, on this backend
            force_tileir_code()
        if backend.device == "cuda":  # a config too large for the GPU's shared memory is refused before LLVM
            shared_memory_guard.install()
    for line in jobs:
        job = line.get("job")
        if not isinstance(job, dict) or job.get("kind") not in JOBS:
            continue
        emit("job", id=job["id"])
        if not JOBS[job["kind"]](job, backend, base, emit, blocked):
            return 0  # the CUDA context is unusable: the parent starts a fresh worker for what is left
        if backend.device == "cuda" and not blocked:
            release_cached_memory()  # an idle worker kept for a later phase holds no more than it must
    emit("done")
    return 0


def main() -> int:
    import faulthandler

    faulthandler.enable()  # a crash (SIGSEGV, SIGABRT, ...) leaves the Python frames in stderr: the cause's evidence
    emit, setup = start_worker()
    return serve(setup, emit, more_lines())


if __name__ == "__main__":
    sys.exit(main())
