"""The emulated nvtriton (`tests/emulated_nvtriton/`): standard Triton presenting the fork's Python surface, for the
TileIR path of the tool to run before a Blackwell GPU does. These tests hold the emulator to the fork's behaviours
(each cited in its module) and hold the tool to never taking it for the TileIR backend."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EMULATOR = Path(__file__).parent / "emulated_nvtriton"

_SURFACE = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.backends.tileir as tileir
from triton.backends.tileir.errors import HitFallback
from emulated_nvtriton import EMULATED_MARK
from tileiropt.transform.gate import gate_source
namespace = {}
exec(gate_source(), namespace)
config = triton.Config({"BLOCK": 64}, num_warps=4, occupancy=2, opt_level=2)
print(json.dumps({"marked": bool(getattr(tileir, EMULATED_MARK, "")), "gate": namespace["is_tileir"](),
                  "occupancy": config.occupancy, "opt_level": config.opt_level,
                  "default_opt_level": triton.Config({}).opt_level,
                  "all_kwargs": sorted(config.all_kwargs()), "fallback": str(HitFallback(2, "k"))}))
"""


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EMULATOR), str(ROOT)]), **env}
    return subprocess.run([sys.executable, *args] if not code else [sys.executable, "-c", code], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=300, check=False)


def test_the_emulator_presents_the_fork_s_python_surface_with_enable_tile() -> None:
    done = _run(_SURFACE, ENABLE_TILE="1")
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"marked": True, "gate": True, "occupancy": 2, "opt_level": 2, "default_opt_level": 3,
                    # no "tileir" target on this machine (the interpreter): the hints stay out of the launch
                    "all_kwargs": ["BLOCK", "num_ctas", "num_stages", "num_warps"],
                    "fallback": "HitFallback: k, Required: 2."}


def test_without_enable_tile_the_emulator_is_not_there() -> None:
    done = _run("import importlib.util; print(importlib.util.find_spec('triton.backends.tileir'))", ENABLE_TILE="0")
    assert done.returncode == 0 and done.stdout.strip() == "None"


def test_check_names_the_emulator_and_never_calls_it_tileir() -> None:
    done = _run("", "-m", "tileiropt", "check", "--json", ENABLE_TILE="1", TRITON_INTERPRET="1")
    report = json.loads(done.stdout)
    assert report["tileir_ready"] is False
    assert any("emulated TileIR" in reason for reason in report["reasons"]), report["reasons"]
    assert report["triton"]["name"] != "nvtriton"


@pytest.mark.gpu
def test_on_a_gpu_kernels_compile_for_the_tileir_target_and_unsupported_constructs_fail_as_tileiras_does(
        tmp_path: Path) -> None:
    code = r"""
import json, torch, triton, triton.language as tl

@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

@triton.jit
def erf(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.math.erf(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)

x = torch.ones(100, device="cuda")
compiled = scale[(1,)](x, 100, BLOCK=128)
try:
    erf[(1,)](x, 100, BLOCK=128)
    rejected = ""
except RuntimeError as exc:
    rejected = str(exc).splitlines()[0]
print(json.dumps({"target": compiled.metadata.target.backend, "value": float(x[0]), "rejected": rejected}))
"""
    script = tmp_path / "kernels.py"  # Triton reads a kernel's source from its file
    script.write_text(code)
    done = _run("", str(script), ENABLE_TILE="1")
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"target": "tileir", "value": 2.0, "rejected": "`tileiras` failed with error code 1"}


def test_a_run_under_the_emulator_says_emulated_wherever_the_tileir_backend_appears(tmp_path: Path) -> None:
    """The printed next step (`ENABLE_TILE=1 tileiropt run ...`) under the emulator on this CPU: the run goes through,
    the TileIR code is proven with it forced on under the interpreter, and no TileIR record or line passes the
    emulator off as the TileIR backend."""
    shutil.copytree(ROOT / "examples", tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".tileiropt"))
    done = subprocess.run([sys.executable, "-m", "tileiropt", "run", "tileiropt.toml", "--kernel", "vector_add",
                           "--json"], cwd=tmp_path,
                          env={**os.environ, "ENABLE_TILE": "1", "PYTHONPATH": os.pathsep.join([str(EMULATOR),
                                                                                               str(ROOT)])},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    artifacts = tmp_path / ".tileiropt"
    check = json.loads((artifacts / "check.json").read_text())
    assert "emulated TileIR" in check["triton"]["emulated"] and check["tileir_ready"] is False
    records = json.loads((artifacts / "validate.json").read_text())["records"]
    tileir = [r for r in records if r["backend"] == "tileir"]
    assert tileir and all(r["status"] == "not-run" and "emulated TileIR" in r["reason"] for r in tileir)
    assert any(r["backend"] == "tileir-code-on-interpret" and r["status"] == "pass" for r in records)
    report = (artifacts / "report.md").read_text()
    top = next(line for line in report.splitlines() if line.startswith("Not run on this machine"))
    assert "the TileIR backend (the TileIR backend is emulated TileIR" in top  # the reason each kernel points to
    assert "validated on TileIR" not in report and "ready to try on TileIR" in report
