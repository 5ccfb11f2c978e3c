"""The TMA twins on an NVIDIA GPU under the PTX backend: fp16 and bf16, ragged shapes, strides
TMA cannot take (the pointer path), every autotuner pinned to the kernel's first config
(autotuning every case on both paths takes minutes; `benchmarks/tma_matmul.py` autotunes both).

The harness's TileIR surface (`python -m tileiropt.harness.tileir_surface`) binds the TileIR code under PTX, so
the twins (device-side tensor descriptors, sm_90+) are compiled and checked there; the child process is
`tests/fixtures/tma/run_cases.py`, one JSON record per run. Run with `pytest -m gpu`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from shared import TEST_FIXTURES

pytestmark = pytest.mark.gpu

FIXTURES = TEST_FIXTURES / "tma"
NAMES = ["gemm", "persistent_gemm", "batched_gemm", "linear_nt", "attention_fwd"]


@pytest.fixture(scope="module")
def gpu_records(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("device-side tensor descriptors need sm_90 or newer")
    env = dict(os.environ)
    for name in ("TRITON_INTERPRET", "ENABLE_TILE"):
        env.pop(name, None)
    out = tmp_path_factory.mktemp("tma_gpu")
    done = subprocess.run([sys.executable, "-m", "tileiropt.harness.tileir_surface", str(FIXTURES / "run_cases.py"),
                           str(out), "--device", "cuda",
                           "--dtypes", "float16,bfloat16", "--configs", "first"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("name", NAMES)
def test_twins_are_correct_on_the_gpu(gpu_records: list[dict], name: str) -> None:
    records = [r for r in gpu_records if r["fixture"] == name]
    assert {r["dtype"] for r in records} == {"float16", "bfloat16"}
    assert {r["config"] for r in records} == {"first config"}
    bad = [r for r in records if not r["ok"]]
    assert not bad, json.dumps(bad, indent=1)[:3000]
    assert {r["path"] for r in records} == {"tma", "pointer"}
