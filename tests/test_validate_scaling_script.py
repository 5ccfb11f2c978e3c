"""benchmarks/validate_scaling.py on this CPU: the same steps as on GPUs, with Triton's interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shared import ROOT

SCRIPT = ROOT / "benchmarks" / "validate_scaling.py"


@pytest.mark.slow
def test_one_call_per_set_of_devices_and_the_speed_up_over_the_first() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), str(ROOT / "examples"), "--kernel", "vector_add",
                           "--max-configs", "2", "--gpus", "", "--backend", "tileir-code-on-interpret"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    call, summary = (json.loads(line) for line in done.stdout.splitlines())
    assert call["exit_code"] == 0 and call["records"] == {"pass": 1} and call["validate_s"] > 0
    assert call["workers"] == 1 and call["jobs"] == 1
    assert summary["speedup_over_first"] == {"": 1.0}


def test_an_unknown_kernel_is_one_line_and_no_traceback() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), str(ROOT / "examples"), "--kernel", "nope"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "no kernel named nope" in done.stderr
