"""A pytest plugin of the capture: each pytest-xdist worker process of the program gets a GPU of its own.

`tileiropt run --spread-gpus DIR -- pytest -n 4 ...` writes this module's text as `tileiropt_worker_gpus.py` beside
the capture's sitecustomize (first on the program's PYTHONPATH), names it in `PYTEST_PLUGINS` and the GPUs in
`TILEIROPT_WORKER_GPUS` ("0,1,2,3"). pytest imports the plugin in every process before any conftest; in an xdist
worker `PYTEST_XDIST_WORKER` ("gw2") is set by then, and the plugin sets `CUDA_VISIBLE_DEVICES` to the worker's GPU
(by index, round robin), before the suite's code can touch CUDA. The controller process and a run without xdist
are left as they are, and so is a worker whose `CUDA_VISIBLE_DEVICES` the command set itself (it differs from what
the tool started the program with, `TILEIROPT_GPUS_BEFORE`). The capture records every worker as before.
"""

from __future__ import annotations

import os

GPUS_ENV = "TILEIROPT_WORKER_GPUS"
BEFORE_ENV = "TILEIROPT_GPUS_BEFORE"  # CUDA_VISIBLE_DEVICES as the tool started the program ("" when unset)


def worker_gpu(worker: str | None, gpus: str | None) -> str | None:
    """The GPU of xdist worker `worker` ("gw3") among `gpus` ("0,1,2,3"), or None outside a worker."""
    listed = [gpu.strip() for gpu in (gpus or "").split(",") if gpu.strip()]
    if not worker or not listed or not worker.startswith("gw") or not worker[2:].isdigit():
        return None
    return listed[int(worker[2:]) % len(listed)]


_GPU = worker_gpu(os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(GPUS_ENV))
if _GPU is not None and os.environ.get("CUDA_VISIBLE_DEVICES", "") == os.environ.get(BEFORE_ENV, ""):
    os.environ["CUDA_VISIBLE_DEVICES"] = _GPU
