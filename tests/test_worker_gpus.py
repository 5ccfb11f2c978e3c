"""`--spread-gpus`: each pytest-xdist worker of the captured command gets a GPU of its own, by worker index."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tileiropt.capture.capture import run_capture
from tileiropt.capture.worker_gpus import worker_gpu

from shared import EXAMPLES


def test_a_worker_s_gpu_is_its_index_round_robin() -> None:
    assert [worker_gpu(f"gw{i}", "0,1,2,3") for i in range(6)] == ["0", "1", "2", "3", "0", "1"]
    assert worker_gpu("gw1", "4, 6") == "6"
    assert worker_gpu(None, "0,1") is None and worker_gpu("master", "0,1") is None and worker_gpu("gw0", "") is None


def test_each_xdist_worker_of_a_captured_suite_sees_its_own_gpu(tmp_path: Path) -> None:
    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    seen = tmp_path / "seen"
    seen.mkdir()
    (tmp_path / "test_gpus.py").write_text(
        "import os, pytest\n\n\n@pytest.mark.parametrize('i', range(8))\ndef test_gpu(i):\n"
        f"    open(os.path.join({str(seen)!r}, os.environ['PYTEST_XDIST_WORKER']), 'w')"
        ".write(os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'))\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "test_gpus.py"]
    result = run_capture([tmp_path / "vector_add.py"], command, interpret=True, budget=120, cwd=tmp_path,
                         worker_gpus=["3", "5"])
    assert result.failure is None, result
    assert {p.name: p.read_text() for p in seen.iterdir()} == {"gw0": "3", "gw1": "5"}
    for p in seen.iterdir():
        p.unlink()
    run_capture([tmp_path / "vector_add.py"], command, interpret=True, budget=120, cwd=tmp_path)
    own = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
    assert {p.read_text() for p in seen.iterdir()} == {own}  # without it, the suite's own environment


def test_a_worker_whose_command_set_its_own_gpus_keeps_them(tmp_path: Path) -> None:
    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "test_gpus.py").write_text(
        "import os\n\n\ndef test_gpu():\n"
        f"    open(os.path.join({str(tmp_path)!r}, 'seen'), 'w').write(os.environ['CUDA_VISIBLE_DEVICES'])\n")
    command = ["env", "CUDA_VISIBLE_DEVICES=7", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-n", "1", "test_gpus.py"]
    run_capture([tmp_path / "vector_add.py"], command, interpret=True, budget=120, cwd=tmp_path, worker_gpus=["3"])
    assert (tmp_path / "seen").read_text() == "7"
