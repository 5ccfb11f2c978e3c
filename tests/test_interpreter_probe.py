"""The interpreter's wrong bfloat16 products, probed once per worker and said on the records they concern."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tileiropt.validate.worker import CaseRunner


def _note(interpreted: bool, dtypes: dict[str, str]) -> str:
    runner = SimpleNamespace(backend=SimpleNamespace(interpreted=interpreted), case=SimpleNamespace(dtypes=dtypes))
    return CaseRunner.arithmetic_note(runner)  # type: ignore[arg-type]


def test_only_bf16_cases_on_the_interpreter_are_told(monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.harness import interpreter_probe

    monkeypatch.setattr(interpreter_probe, "bf16_products_wrong", lambda: True)
    assert _note(True, {"x": "bfloat16", "w": "float32"}) == interpreter_probe.BF16_NOTE
    assert _note(True, {"x": "float32"}) == ""
    assert _note(False, {"x": "bfloat16"}) == ""  # a GPU's arithmetic is its own
    monkeypatch.setattr(interpreter_probe, "bf16_products_wrong", lambda: False)  # a Triton that fixed it
    assert _note(True, {"x": "bfloat16"}) == ""


def test_the_probe_compares_the_interpreters_product_with_torchs() -> None:
    # run in a process of its own under TRITON_INTERPRET=1, as a worker is: the answer is this Triton's, a bool
    program = ("import torch\nfrom tileiropt.harness.interpreter_probe import bf16_products_wrong, _multiply\n"
               "x = torch.tensor([0.5, -1.5], dtype=torch.bfloat16); out = torch.empty_like(x)\n"
               "_multiply[(1,)](x, x, out, BLOCK=2)\n"
               "print(bf16_products_wrong(), not torch.equal(out, x * x))\n")
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    probed, direct = done.stdout.split()
    assert probed == direct  # the probe says what a direct product shows
