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

from tileiropt.errors import ExitCode

from shared import ROOT, TEST_FIXTURES

EMULATOR = Path(__file__).parent / "emulated_nvtriton"
FIXTURES = TEST_FIXTURES / "emulated"
# the emulator first, then this checkout, then whatever the environment already adds (a GPU image's own packages)
PYTHONPATH = os.pathsep.join([str(EMULATOR), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])

_SURFACE = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import triton
import triton.backends.tileir as tileir
from triton.backends.tileir.errors import HitFallback
from emulated_nvtriton import EMULATED_MARK
from tileiropt.harness.gate import gate_source
namespace = {}
exec(gate_source(), namespace)
config = triton.Config({"BLOCK": 64}, num_warps=4, occupancy=2, opt_level=2)
print(json.dumps({"marked": bool(getattr(tileir, EMULATED_MARK, "")), "gate": namespace["is_tileir"](),
                  "occupancy": config.occupancy, "opt_level": config.opt_level,
                  "default_opt_level": triton.Config({}).opt_level,
                  "all_kwargs": sorted(config.all_kwargs()), "fallback": str(HitFallback(2, "k"))}))
"""


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": PYTHONPATH, **env}
    return subprocess.run([sys.executable, *args] if not code else [sys.executable, "-c", code], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=300, check=False)


def _run_under_emulator(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileiropt", "run", *args, "--json"], cwd=folder,
                          env={**os.environ, "ENABLE_TILE": "1", **env, "PYTHONPATH": PYTHONPATH},
                          capture_output=True, text=True, timeout=600, check=False)


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

@triton.jit
def big_dot(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, a))

x = torch.ones(100, device="cuda")
compiled = scale[(1,)](x, 100, BLOCK=128)
try:  # a config too large for the device: the compile's OutOfResources, which the fork's autotuner skips
    big = torch.ones(256 * 256, device="cuda")
    big_dot[(1,)](big, torch.empty_like(big), BLOCK=256)
    oversized = ""
except Exception as exc:
    oversized = type(exc).__name__
try:
    erf[(1,)](x, 100, BLOCK=128)
    rejected = ""
except RuntimeError as exc:
    rejected = str(exc).splitlines()[0]
print(json.dumps({"target": compiled.metadata.target.backend, "value": float(x[0]), "rejected": rejected,
                  "oversized": oversized}))
"""
    script = tmp_path / "kernels.py"  # Triton reads a kernel's source from its file
    script.write_text(code)
    done = _run("", str(script), ENABLE_TILE="1")
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"target": "tileir", "value": 2.0, "rejected": "`tileiras` failed with error code 1",
                    "oversized": "OutOfResources"}


def test_a_run_under_the_emulator_says_emulated_wherever_the_tileir_backend_appears(tmp_path: Path) -> None:
    """The printed next step (`ENABLE_TILE=1 tileiropt run ...`, with --in-place) under the emulator on this CPU: the
    run goes through, the optimized file passes under the emulated TileIR backend (the interpreter beneath), no
    TileIR record or line passes the emulator off as the TileIR backend, and --in-place writes nothing (not slower
    on PTX needs a GPU to measure): it prints the `cp` and exits 3."""
    shutil.copytree(ROOT / "examples", tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".tileiropt"))
    before = (tmp_path / "vector_add.py").read_text()
    done = _run_under_emulator(tmp_path, "tileiropt.toml", "--kernel", "vector_add", "--in-place")
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    assert (tmp_path / "vector_add.py").read_text() == before and not (tmp_path / "vector_add.py.orig").exists()
    refused = json.loads((tmp_path / ".tileiropt" / "run.json").read_text())["in_place_refused"]
    assert "cp " in refused[str(tmp_path / "vector_add.py")]
    artifacts = tmp_path / ".tileiropt"
    check = json.loads((artifacts / "check.json").read_text())
    assert "emulated TileIR" in check["triton"]["emulated"] and check["tileir_ready"] is False
    records = json.loads((artifacts / "validate.json").read_text())["records"]
    tileir = [r for r in records if r["backend"] == "tileir"]
    assert tileir and all(r["status"] == "not-run" and "emulated TileIR" in r["reason"] for r in tileir)
    # the emulated backend runs the TileIR code with the file's own gate on: the harness's forced run would repeat it
    assert not any(r["backend"] == "tileir-code-on-interpret" for r in records)
    assert check["recommendation"].startswith("emulated TileIR:")
    emulated = [r for r in records if r["backend"] == "tileir-emulated-interpret"]
    ran = [r for r in emulated if not r.get("repeat")]  # hint-only repeats run once
    assert ran and all(r["status"] == "pass" and r["variant"] == "optimized" for r in ran)
    assert all("emulated TileIR" in r["provenance"]["triton_distribution"] for r in emulated)
    report = (artifacts / "report.md").read_text()
    top = next(line for line in report.splitlines() if line.startswith("Not run on this machine"))
    assert "the TileIR backend (the TileIR backend is emulated TileIR" in top  # the reason each kernel points to
    said = report.count("validated on TileIR")
    assert said and said == report.count("validated on TileIR (emulated)")
    assert "Emulated TileIR (nvtriton's Python surface emulated by tileiropt's tests" in report
    summary = json.loads(done.stdout)
    assert {v["bucket"] for v in summary["verdicts"].values()} == {"emulated"}


def test_a_construct_tileiras_refuses_is_reported_with_its_message_and_the_file_is_kept(tmp_path: Path) -> None:
    """Under the emulator on this CPU: the capture runs the program on PTX (its erf kernel works there), the
    emulated TileIR backend refuses `tl.math.erf` as tileiras does, the record carries the compiler's message, the
    kernel is stopped, and the optimized file, which left that kernel as its owner wrote it, is kept: its other
    kernel is validated under the emulator."""
    shutil.copy(FIXTURES / "gelu.py", tmp_path / "gelu.py")
    done = _run_under_emulator(tmp_path, "gelu.py")
    assert done.returncode == ExitCode.COMPILER, done.stdout[-2000:] + done.stderr[-2000:]  # a compiler refused it
    summary = json.loads(done.stdout)
    assert summary["verdicts"]["scale_kernel"]["bucket"] == "emulated"
    gelu = summary["verdicts"]["gelu_kernel"]
    assert gelu["bucket"] == "attention" and "rejected by the TileIR compiler" in gelu["text"]
    records = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())["records"]
    refused = [r for r in records if r["backend"] == "tileir-emulated-interpret" and r["status"] == "error"]
    assert len(refused) == 1 and refused[0]["kernel"] == "gelu_kernel"
    assert refused[0]["reason"].startswith("rejected by the TileIR compiler: RuntimeError: `tileiras` failed")
    assert "math.erf is not supported" in refused[0]["reason"]
    assert (tmp_path / "gelu_tileir.py").is_file() and not (tmp_path / "gelu_tileir.rejected.py").exists()


@pytest.mark.gpu
def test_on_a_gpu_the_emulated_tileir_backend_is_validated_and_timed_never_as_a_tileir_speedup(
        tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".tileiropt"))
    before = (tmp_path / "vector_add.py").read_text()
    done = _run_under_emulator(tmp_path, "tileiropt.toml", "--kernel", "vector_add", "--in-place")
    artifacts = tmp_path / ".tileiropt"
    run = json.loads((artifacts / "run.json").read_text())
    # --in-place writes a validated file only where every paired PTX timing's 95% interval lies below 1 + threshold
    paired = [r["paired"] for r in json.loads((artifacts / "bench.json").read_text())["rows"] if r.get("paired")]
    proven = bool(paired) and all(p["ci_high"] <= 1 + p["threshold"] for p in paired)
    assert done.returncode == (0 if proven else 1), done.stdout[-2000:] + done.stderr[-2000:]
    if proven:
        assert (tmp_path / "vector_add.py.orig").read_text() == before
        assert "def is_tileir()" in (tmp_path / "vector_add.py").read_text()
    else:  # the timing did not prove it: nothing written, the `cp` that does it by hand printed
        assert (tmp_path / "vector_add.py").read_text() == before
        assert "cp " in run["in_place_refused"][str(tmp_path / "vector_add.py")]
    records = json.loads((artifacts / "validate.json").read_text())["records"]
    emulated = [r for r in records if r["backend"] == "tileir-emulated"]
    assert emulated and all(r["status"] == "pass" for r in emulated)
    assert {r["provenance"]["compiled_backend"] for r in emulated} == {"tileir"}  # the fork's target, PTX beneath
    rows = json.loads((artifacts / "bench.json").read_text())["rows"]
    timed = [r for r in rows if r["backend"] == "tileir-emulated"]
    assert timed and all(r["status"] == "pass" and r["timing"]["median_ms"] > 0 for r in timed)
    assert all(r["speedup"] is None and r["provenance"]["compiled_backend"] == "tileir" for r in timed)
    assert all(r["status"] == "not-run" for r in rows if r["backend"] == "tileir")
    summary = json.loads(done.stdout)
    assert {v["bucket"] for v in summary["verdicts"].values()} == {"emulated"}
    report = (artifacts / "report.md").read_text()
    assert "emulated TileIR (tileiropt's test emulator: PTX's compiler, not TileIR's)" in report
    assert report.count("validated on TileIR") == report.count("validated on TileIR (emulated)")


@pytest.mark.gpu
def test_on_a_gpu_a_kernel_the_runtime_fallback_sent_to_ptx_is_flagged(tmp_path: Path) -> None:
    """TRITON_TILEIR_RUNTIME_FALLBACK=1: the erf kernel tileiras refuses runs on PTX, silently; its records pass,
    and the tool says it never ran on TileIR."""
    shutil.copy(FIXTURES / "gelu.py", tmp_path / "gelu.py")
    done = _run_under_emulator(tmp_path, "gelu.py", TRITON_TILEIR_RUNTIME_FALLBACK="1")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    records = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())["records"]
    gelu = [r for r in records if r["backend"] == "tileir-emulated" and r["kernel"] == "gelu_kernel"]
    assert gelu and all(r["status"] == "pass" and r["provenance"]["fallback"] for r in gelu)
    assert all("fallback: compiled by cuda, not tileir" in r["reason"] for r in gelu)
    verdicts = json.loads(done.stdout)["verdicts"]
    assert verdicts["gelu_kernel"]["bucket"] == "attention" and "fell back to PTX" in verdicts["gelu_kernel"]["text"]
    assert verdicts["scale_kernel"]["bucket"] == "emulated"
