"""Where workers run: this host (every visible GPU, or CPU slots for the interpreter) or a SLURM cluster.

An executor turns into a list of `Launcher`s, one per slot; `workers.run_in_slots` gives each slot a
thread that runs one worker at a time. Validate and bench ask for their slots here and nothing else
changes for them:

- **local** on a GPU host: one slot per visible GPU for bench (never two measurements on one GPU),
  `validate_per_gpu()` slots per GPU for validate (2 to 4, by cores and GPU memory); each worker is pinned with
  ``CUDA_VISIBLE_DEVICES``.
  Without a GPU: one slot per CPU core (the interpreter backends).
- **slurm**: each worker is a job step, ``srun --ntasks=1 [--gpus-per-task=N] [--partition=P]
  [--time=T] python -m <worker>``: its job and events travel over the step's stdin and stdout as they
  do locally, so records come back into the same artifacts folder, and killing a worker cancels its
  step. `tasks` steps run at once. SLURM itself places the steps and their GPUs.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from tileiropt.engine.workers import Launcher
from tileiropt.errors import UserError

LOCAL, SLURM = "local", "slurm"
EXECUTORS = (LOCAL, SLURM)
VALIDATE_PER_GPU = 2  # validation is compile-bound: at least two workers share a GPU; bench never does
MAX_VALIDATE_PER_GPU = 4
CORES_PER_VALIDATE_WORKER = 4
GIB_PER_VALIDATE_WORKER = 20  # a CUDA context and a launch's tensors (liger's largest take several GiB)


def validate_per_gpu(cpus: int | None = None, memory_gib: float | None = None) -> int:
    """How many validation workers share one GPU. Validation is compile-bound (Triton compiles on the CPU), so a
    host with cores to spare runs more: one per 4 cores, 2 at least and 4 at most, and no more than one per 20 GiB
    of the GPU's memory (2 when its memory is not known)."""
    cpus = cpus or os.cpu_count() or 1
    by_memory = int(memory_gib // GIB_PER_VALIDATE_WORKER) if memory_gib else VALIDATE_PER_GPU
    return max(VALIDATE_PER_GPU, min(MAX_VALIDATE_PER_GPU, cpus // CORES_PER_VALIDATE_WORKER, by_memory))


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries: that variable when set, else
    `nvidia-smi`'s indices; [] without a GPU or without nvidia-smi."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        entries = [e.strip() for e in listed.split(",") if e.strip()]
        taken = []
        for entry in entries:
            if entry.startswith("-"):  # "-1": no device from here on
                break
            taken.append(entry)
        return taken
    return list(_smi_gpus())


@functools.cache
def _smi_gpus() -> tuple[str, ...]:
    """`nvidia-smi`'s GPU indices, asked once per process (a run asks for its slots in every phase)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ()
    try:
        out = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    if out.returncode != 0:
        return ()
    return tuple(line.strip() for line in out.stdout.splitlines() if line.strip().isdigit())


@dataclass
class Executor:
    """Options of `--executor` and the project's `[executor]` table."""

    kind: str = LOCAL
    gpus: list[str] | None = None  # local: the GPUs to use (default: every visible one)
    partition: str | None = None  # slurm
    time: str | None = None  # slurm: a time limit per step, e.g. "00:30:00"
    gpus_per_task: int | None = None  # slurm: GPUs per step (default: 1 when the machine has a GPU, else 0)
    tasks: int = 4  # slurm: steps at once
    srun_args: list[str] = field(default_factory=list)  # slurm: more srun options, as given

    def check(self) -> Executor:
        if self.kind not in EXECUTORS:
            raise UserError(f"--executor: unknown value {self.kind!r}", hint=f"use one of {', '.join(EXECUTORS)}")
        if isinstance(self.tasks, bool) or not isinstance(self.tasks, int) or not 1 <= self.tasks <= 4096:
            raise UserError(f"--slurm-tasks must be an integer in [1, 4096], got {self.tasks!r}")
        if self.gpus_per_task is not None and (isinstance(self.gpus_per_task, bool)
                                               or not isinstance(self.gpus_per_task, int)
                                               or not 0 <= self.gpus_per_task <= 64):
            raise UserError(f"--slurm-gpus-per-task must be an integer in [0, 64], got {self.gpus_per_task!r}")
        if self.kind == SLURM and not shutil.which("srun"):
            raise UserError("--executor slurm: srun is not on PATH", hint="run on a SLURM login node, or use "
                                                                          "--executor local")
        return self

    # ------------------------------------------------------------------ slots

    def slots(self, *, gpu_work: bool, per_gpu: int, cpu_slots: int) -> list[Launcher]:
        """One launcher per slot. `gpu_work`: the workers need a GPU; `per_gpu`: workers sharing one GPU
        (1 for bench); `cpu_slots`: slots for work without a GPU."""
        if self.kind == SLURM:
            return [self._srun(gpu_work) for _ in range(self.tasks)]
        if not gpu_work:
            return [Launcher(name="local") for _ in range(max(1, cpu_slots))]
        gpus = self.gpus if self.gpus is not None else visible_gpus()
        if not gpus:  # a GPU the probe saw but nvidia-smi did not list: one unpinned slot
            return [Launcher(name="local") for _ in range(max(1, per_gpu))]
        return [Launcher(env={"CUDA_VISIBLE_DEVICES": gpu}, name=f"gpu {gpu}")
                for _ in range(max(1, per_gpu)) for gpu in gpus]

    def _srun(self, gpu_work: bool) -> Launcher:
        prefix = ["srun", "--ntasks=1", "--nodes=1", "--quiet", "--kill-on-bad-exit=1"]
        gpus = self.gpus_per_task if self.gpus_per_task is not None else (1 if gpu_work else 0)
        if gpus:
            prefix.append(f"--gpus-per-task={gpus}")
        if self.partition:
            prefix.append(f"--partition={self.partition}")
        if self.time:
            prefix.append(f"--time={self.time}")
        prefix += self.srun_args
        return Launcher(prefix=prefix, name="slurm")


def resolve_executor(configured: Executor | None, given: dict | None = None) -> Executor:
    """The project's [executor] table (or the default), with the command line's options over it; checked."""
    from dataclasses import replace

    executor = replace(configured) if configured is not None else Executor()
    for key, value in (given or {}).items():
        setattr(executor, key, value)
    return executor.check()
