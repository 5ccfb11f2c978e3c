"""Workers started ahead of their work: the validation workers a run needs first start as the captured program
starts, so their start-up (torch, Triton, CUDA) overlaps the program's run instead of following it."""

from __future__ import annotations

import os

from tileiropt.check.machine import Machine
from tileiropt.engine.engine import RunWorkers
from tileiropt.engine.executors import Executor, validate_per_gpu
from tileiropt.harness.backends import BACKENDS

PER_FILE = 2  # workers a target file's launches keep busy at first, per backend


def prestart(workers: RunWorkers, executor: Executor | None, machine: Machine, files: int | None = None) -> None:
    """Workers for the compatibility phase's backend, then for the next backend validate runs on this `machine`:
    one per slot, at most `PER_FILE` per target file (`files`; the launches of one tutorial keep two busy, a
    library's fill every slot) and half the host's cores in all (they import torch while the program runs: more
    than the work needs only slow the program and each other). Not on SLURM (a job step is not started ahead of
    its work)."""
    executor = (executor or Executor()).check()
    if executor.kind != "local":
        return
    first = "ptx" if machine.has_gpu else "interpret"  # the compatibility phase's backend
    later = [name for name in machine.default_backends() if name != first
             and (name != "tileir" or not machine.tileir_blockers)]  # a TileIR that cannot run gets no worker
    per_gpu = validate_per_gpu(memory_gib=machine.device.memory_gib)
    launchers = executor.slots(gpu_work=machine.has_gpu, per_gpu=per_gpu, cpu_slots=1)
    if files is not None:
        launchers = launchers[:max(1, PER_FILE * files)]
    wanted = [(launcher, BACKENDS[name]) for name in [first, *later[:1]] for launcher in launchers]
    for launcher, backend in wanted[:max(2, (os.cpu_count() or 1) // 2)]:
        workers.prestart(launcher, [backend])
