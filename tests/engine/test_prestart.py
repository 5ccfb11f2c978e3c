"""Workers started while the captured program runs: as many as the target files can keep busy, never every slot of
every GPU for one tutorial (on a 4-GPU host, 32 workers importing torch at once slowed the tutorial's own run from
4.7 s to 9.0 s, and two of them had work)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tileiropt.engine import prestart as prestart_module
from tileiropt.engine.executors import Executor


class Recorder:
    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []

    def prestart(self, launcher, backends) -> None:
        self.started += [(launcher.name, backend.name) for backend in backends]


def gpu_machine() -> SimpleNamespace:
    return SimpleNamespace(has_gpu=True, default_backends=lambda: ["ptx", "tileir-code-on-ptx", "tileir"],
                           tileir_blockers=["nvtriton is not installed"], device=SimpleNamespace(memory_gib=141.0))


@pytest.mark.parametrize(("files", "expected"), [
    (1, [("gpu 0", "ptx"), ("gpu 1", "ptx"), ("gpu 0", "tileir-code-on-ptx"), ("gpu 1", "tileir-code-on-ptx")]),
    (None, None),  # not known: every slot, up to half the cores
    (400, None),  # a library: every slot, up to half the cores
])
def test_one_file_gets_two_workers_a_backend_and_a_library_every_slot(monkeypatch: pytest.MonkeyPatch, files,
                                                                      expected) -> None:
    monkeypatch.setattr(prestart_module.os, "cpu_count", lambda: 64)
    workers = Recorder()
    prestart_module.prestart(workers, Executor(gpus=["0", "1", "2", "3"]), gpu_machine(), files=files)
    if expected is not None:
        assert workers.started == expected
    else:  # 4 workers a GPU (64 cores, 141 GiB), 4 GPUs, two backends: 32, capped at half the cores
        assert len(workers.started) == 32 and {b for _, b in workers.started} == {"ptx", "tileir-code-on-ptx"}
