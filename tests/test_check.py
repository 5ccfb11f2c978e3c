"""`tileiropt check` on simulated machines (probes replaced) and on this one (probes real)."""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.check import environment
from tileiropt.check.environment import CPU_DEVICE, ENV_KEYS, LEGACY_ENV_KEYS, check_environment, find_tileiras
from tileiropt.cli import app

runner = CliRunner()

H100 = {"name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "sm_count": 132}
B200 = {"name": "NVIDIA B200", "capability": "10.0", "sm_count": 148}
REPORT_KEYS = {"python", "triton", "torch", "gpu", "blackwell", "env", "active_backend",
               "active_backend_error", "tileiras", "tileir_ready", "release", "reasons", "warnings",
               "recommendation", "schema_version"}


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str | None]:
    """CliRunner env: every variable `check` reads unset, PATH an empty folder (no tileiras)."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    env: dict[str, str | None] = {key: None for key in ENV_KEYS + LEGACY_ENV_KEYS}
    env["PATH"] = str(empty)
    return env


def simulate(monkeypatch: pytest.MonkeyPatch, *, gpu: dict | None, backend: str | None = None,
             tileir: bool = False) -> list[str]:
    """Replace the machine-dependent probes; returns a log of active-backend queries."""
    queries: list[str] = []

    def active_backend() -> tuple[str | None, str | None]:
        queries.append("queried")
        return backend, None if backend else "RuntimeError: 0 active drivers"

    monkeypatch.setattr(environment, "probe_gpu", lambda: dict(gpu) if gpu else None)
    monkeypatch.setattr(environment, "probe_active_backend", active_backend)
    monkeypatch.setattr(environment, "probe_tileir_backend", lambda: tileir)
    return queries


def fake_tileir_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `importlib.util.find_spec("triton.backends.tileir")` find a module, as under nvtriton."""
    module = types.ModuleType("triton.backends.tileir")
    module.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir", loader=None)
    monkeypatch.setitem(sys.modules, "triton.backends.tileir", module)


def fake_tileiras(folder: Path, version_line: str = "Cuda compilation tools, release 13.1, V13.1.80") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "tileiras"
    script.write_text(f'#!/bin/sh\necho "tileiras: CUDA Tile IR compiler"\necho "{version_line}"\n')
    script.chmod(0o755)
    return script


def check_json(args: list[str], env: dict[str, str | None]) -> tuple[int, dict]:
    result = runner.invoke(app, ["check", "--json", *args], env=env)
    return result.exit_code, json.loads(result.stdout)


# --------------------------------------------------------------------------- simulated machines


def test_no_gpu(monkeypatch, clean_env):
    queries = simulate(monkeypatch, gpu=None)
    code, report = check_json([], clean_env)
    assert code == 0
    assert report["gpu"] == CPU_DEVICE
    assert report["blackwell"] is False
    assert report["active_backend"] is None
    assert queries == []  # the backend is queried only with a GPU
    assert report["tileir_ready"] is False
    assert "no GPU" in report["reasons"]
    assert report["recommendation"].startswith("no GPU: kernels are validated under Triton's interpreter")


def test_hopper_by_release(monkeypatch, clean_env):
    """13.1 compiles for Blackwell only; 13.3 added sm_90, so 13.4 targets an H100 (with a warning that the
    Triton backend is validated on Blackwell only)."""
    simulate(monkeypatch, gpu=H100, backend="cuda")
    code, report = check_json(["--tileir-version", "13.1"], clean_env)
    assert code == 0
    assert report["gpu"] == H100
    assert report["blackwell"] is False
    assert report["active_backend"] == "cuda"
    assert report["release"]["version"] == "13.1" and report["release"]["targets_this_gpu"] is False
    assert any("sm_90" in r and "CUDA Tile IR 13.1 targets sm_100" in r for r in report["reasons"])
    assert report["recommendation"] == ("PTX only: CUDA Tile IR 13.1 does not target sm_90; "
                                        "CUDA Tile IR 13.4 targets it")

    code, report = check_json(["--tileir-version", "13.4"], clean_env)
    assert report["release"]["targets_this_gpu"] is True
    assert not any("sm_90" in r for r in report["reasons"])
    assert any("validated on sm_100 only" in w for w in report["warnings"])
    assert report["recommendation"].startswith("PTX only: install nvtriton")

    table = runner.invoke(app, ["check", "--tileir-version", "13.1"], env=clean_env)
    assert table.exit_code == 0
    assert "NVIDIA H100" in table.stdout
    assert "sm_90, 132 SMs" in table.stdout
    assert "PTX only" in table.stdout
    assert "13.1 (requested)" in table.stdout


def test_release_detection(monkeypatch, clean_env, tmp_path):
    """The release comes from nvtriton's backend, else tileiras --version, else the package, else the newest."""
    simulate(monkeypatch, gpu=None)
    monkeypatch.setattr(environment, "probe_tileiras_package", lambda: None)
    code, report = check_json([], clean_env)
    assert report["release"]["version"] == "13.5" and report["release"]["origin"].startswith("newest known")
    fake_tileiras(tmp_path / "tools", "Cuda compilation tools, release 13.1, V13.1.80")
    code, report = check_json([], {**clean_env, "TRITON_TILEIRAS_PATH": str(tmp_path / "tools")})
    assert report["release"]["version"] == "13.1"
    assert report["release"]["origin"] == "tileiras --version (TRITON_TILEIRAS_PATH) 13.1"
    fake_tileiras(tmp_path / "newer", "Cuda compilation tools, release 13.3, V13.3.10")
    code, report = check_json([], {**clean_env, "TRITON_TILEIRAS_PATH": str(tmp_path / "newer")})
    assert report["release"]["version"] == "13.1"  # 13.3 is not described: the newest known not newer
    assert "following 13.1" in report["release"]["origin"]
    monkeypatch.setattr(environment, "probe_tileiras_package", lambda: "13.4.92")
    code, report = check_json([], clean_env)
    assert report["release"]["version"] == "13.4"
    assert report["release"]["origin"] == "the nvidia-cuda-tileiras package 13.4"
    bad = runner.invoke(app, ["check", "--tileir-version", "12.0"], env=clean_env)
    assert bad.exit_code == 2 and "unknown CUDA Tile IR release '12.0'; known: 13.1, 13.4, 13.5" in bad.output


def test_fallback_variable_by_release(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=B200, backend="tileir", tileir=True)
    env = {**clean_env, "ENABLE_TILE": "1", "TRITON_TILEIR_RUNTIME_FALLBACK": "1"}
    _, report = check_json(["--tileir-version", "13.4"], env)
    assert report["release"]["fallback_on"] is True
    assert any("runs on PTX silently" in w for w in report["warnings"])
    _, report = check_json(["--tileir-version", "13.1"], env)
    assert report["release"]["fallback_on"] is False
    assert any("has no effect on CUDA Tile IR 13.1" in w for w in report["warnings"])


def test_nvtriton_blackwell_enable_tile_is_ready(monkeypatch, clean_env):
    fake_tileir_module(monkeypatch)
    monkeypatch.setattr(environment, "probe_gpu", lambda: dict(B200))
    monkeypatch.setattr(environment, "probe_active_backend", lambda: ("tileir", None))
    assert environment.probe_tileir_backend() is True  # the real probe sees the fake module

    env = {**clean_env, "ENABLE_TILE": "1"}
    code, report = check_json(["--require-tileir"], env)
    assert code == 0
    assert report["tileir_ready"] is True
    assert report["reasons"] == []
    assert report["triton"]["name"] == "nvtriton"
    assert report["triton"]["tileir_backend"] is True
    assert report["blackwell"] is True
    assert report["env"]["ENABLE_TILE"] == "1"
    assert report["recommendation"].startswith("TileIR ready")
    # nvtriton without tileiras still counts as ready, but says why compiles will fail
    assert any("tileiras not found" in w for w in report["warnings"])


def test_nvtriton_blackwell_without_enable_tile(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=B200, backend="cuda", tileir=True)
    code, report = check_json(["--require-tileir"], clean_env)
    assert code == 1
    assert report["tileir_ready"] is False
    assert "ENABLE_TILE is not 1" in report["reasons"]
    assert "active backend is 'cuda', not 'tileir'" in report["reasons"]
    assert report["recommendation"].startswith("set ENABLE_TILE=1")


def test_enable_tile_without_tileir_backend_is_reported(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=B200, backend="cuda", tileir=False)
    code, report = check_json([], {**clean_env, "ENABLE_TILE": "1"})
    assert code == 0
    assert report["triton"]["name"] != "nvtriton"
    assert any(r.startswith("nvtriton is not installed") for r in report["reasons"])
    assert any("ENABLE_TILE=1 has no effect" in w for w in report["warnings"])
    assert report["recommendation"].startswith("PTX only: install nvtriton")


def test_enable_tile_but_backend_not_tileir(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=B200, backend="cuda", tileir=True)
    code, report = check_json(["--require-tileir"], {**clean_env, "ENABLE_TILE": "1"})
    assert code == 1
    assert report["reasons"] == ["active backend is 'cuda', not 'tileir'"]
    assert "make sure nvtriton is the triton that Python imports" in report["recommendation"]


def test_two_triton_distributions_warn(monkeypatch, clean_env, tmp_path):
    """A second distribution shipping `triton` (real metadata on sys.path) triggers the warning."""
    site = tmp_path / "site"
    info = site / "pytorch_triton-3.5.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytorch-triton\nVersion: 3.5.0\n")
    (info / "top_level.txt").write_text("triton\n")
    monkeypatch.syspath_prepend(str(site))
    simulate(monkeypatch, gpu=None)

    dists = environment.probe_distributions()
    assert {"name": "pytorch-triton", "version": "3.5.0"} in dists
    code, report = check_json([], clean_env)
    assert code == 0
    assert "pytorch-triton" in report["triton"]["all"]
    assert len(report["triton"]["all"]) >= 2
    # the fake owns no files, so the imported package is attributed to the real distribution
    assert report["triton"]["distribution"] != "pytorch-triton"
    warning = next(w for w in report["warnings"] if "distributions ship `import triton`" in w)
    assert "pytorch-triton 3.5.0" in warning and "Keep only one installed" in warning


def test_tileiras_from_triton_tileiras_path(monkeypatch, clean_env, tmp_path):
    simulate(monkeypatch, gpu=None)
    fake_tileiras(tmp_path / "tileir-bin")
    code, report = check_json([], {**clean_env, "TRITON_TILEIRAS_PATH": str(tmp_path / "tileir-bin")})
    assert code == 0
    assert report["tileiras"] == {"path": str(tmp_path / "tileir-bin" / "tileiras"),
                                  "found_via": "TRITON_TILEIRAS_PATH", "version": "13.1, V13.1.80"}


def test_tileiras_search_order(tmp_path):
    first = fake_tileiras(tmp_path / "a")
    cuda = fake_tileiras(tmp_path / "cuda" / "bin")
    on_path = fake_tileiras(tmp_path / "p")
    assert find_tileiras({"TRITON_TILEIRAS_PATH": str(tmp_path / "a"), "CUDA_HOME": str(tmp_path / "cuda"),
                          "PATH": str(tmp_path / "p")}) == (str(first), "TRITON_TILEIRAS_PATH")
    assert find_tileiras({"CUDA_HOME": str(tmp_path / "cuda"), "PATH": str(tmp_path / "p")}) == (
        str(cuda), "CUDA_HOME")
    assert find_tileiras({"PATH": str(tmp_path / "p")}) == (str(on_path), "PATH")
    assert find_tileiras({"PATH": str(tmp_path / "nothing-here")}) == (None, None)


def test_empty_tileiras_folder_warns(monkeypatch, clean_env, tmp_path):
    simulate(monkeypatch, gpu=None)
    (tmp_path / "no-tileiras").mkdir()
    fake_tileiras(tmp_path / "p")
    env = {**clean_env, "TRITON_TILEIRAS_PATH": str(tmp_path / "no-tileiras"), "PATH": str(tmp_path / "p")}
    report = check_environment({k: v for k, v in env.items() if v is not None})
    assert report.tileiras["found_via"] == "PATH"
    assert any("holds no executable tileiras" in w for w in report.warnings)


def test_tileiras_version_fallbacks(monkeypatch, tmp_path):
    odd = fake_tileiras(tmp_path / "odd", version_line="tileiras 0.9-dev")
    assert environment.probe_tileiras_version(str(odd)) == "tileiras 0.9-dev"
    assert environment.probe_tileiras_version(str(tmp_path / "missing")) is None
    hang = tmp_path / "hang" / "tileiras"
    hang.parent.mkdir()
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    monkeypatch.setattr(environment, "TILEIRAS_TIMEOUT_S", 0.2)
    assert environment.probe_tileiras_version(str(hang)) is None


def test_tileiras_printing_binary_output_gives_its_printable_text(tmp_path):
    binary = tmp_path / "bin" / "tileiras"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\nprintf 'Cuda \\377\\376\\000 release 13.4, V13.4.92\\n\\001\\002'\n")
    binary.chmod(0o755)
    assert environment.probe_tileiras_version(str(binary)) == "13.4, V13.4.92"
    garbage = tmp_path / "garbage" / "tileiras"
    garbage.parent.mkdir()
    garbage.write_text("#!/bin/sh\nprintf '\\377\\376\\001\\n\\200abc'\n")
    garbage.chmod(0o755)
    assert environment.probe_tileiras_version(str(garbage)) == "\ufffdabc"


def test_legacy_precision_variables_are_shown_and_explained(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=None)
    code, report = check_json([], {**clean_env, "CUTILE_ENABLE_FTZ": "1", "TILEIR_ENABLE_APPROX": "1"})
    assert code == 0
    assert report["env"]["TILEIR_ENABLE_APPROX"] == "1"
    assert report["env"]["CUTILE_ENABLE_FTZ"] == "1"
    assert any("current builds read TILEIR_ENABLE_FTZ" in w for w in report["warnings"])


def test_require_tileir_exit_codes(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=H100, backend="cuda")
    assert runner.invoke(app, ["check"], env=clean_env).exit_code == 0
    failed = runner.invoke(app, ["check", "--require-tileir"], env=clean_env)
    assert failed.exit_code == 1
    assert "TileIR is not ready" in failed.stderr
    simulate(monkeypatch, gpu=B200, backend="tileir", tileir=True)
    ready = runner.invoke(app, ["check", "--require-tileir"], env={**clean_env, "ENABLE_TILE": "1"})
    assert ready.exit_code == 0


def test_json_keys(monkeypatch, clean_env):
    simulate(monkeypatch, gpu=H100, backend="cuda")
    _, report = check_json([], clean_env)
    assert set(report) == REPORT_KEYS
    assert set(report["triton"]) == {"name", "version", "all", "distribution", "versions", "location", "emulated",
                                     "tileir_backend"}
    assert set(report["torch"]) == {"version", "cuda"}
    assert set(report["gpu"]) == {"name", "capability", "sm_count"}
    assert set(report["tileiras"]) == {"path", "found_via", "version"}
    assert set(report["env"]) == set(ENV_KEYS)
    assert report["tileir_ready"] is (report["reasons"] == [])


# --------------------------------------------------------------------------- provenance API


def test_device_description_is_cached_and_falls_back_to_cpu(monkeypatch):
    environment.device_description.cache_clear()
    monkeypatch.setattr(environment, "probe_gpu", lambda: None)
    try:
        assert environment.device_description() == CPU_DEVICE
        monkeypatch.setattr(environment, "probe_gpu", lambda: dict(H100))
        assert environment.device_description() == CPU_DEVICE  # cached
        environment.device_description.cache_clear()
        assert environment.device_description() == H100
    finally:
        environment.device_description.cache_clear()


def test_probe_gpu_survives_a_broken_cuda(monkeypatch):
    import torch

    def broken() -> bool:
        raise RuntimeError("CUDA driver initialization failed")

    monkeypatch.setattr(torch.cuda, "is_available", broken)
    assert environment.probe_gpu() is None


def test_triton_distribution_on_this_machine():
    environment.triton_distribution.cache_clear()
    dist = environment.triton_distribution()
    import triton

    assert dist["version"] == triton.__version__
    assert dist["name"] in dist["all"] or dist["name"] == "nvtriton"
    assert dist["location"] == str(Path(triton.__file__).resolve().parent)
    assert environment.triton_distribution() is dist  # cached


def test_active_backend_probe_does_not_raise_without_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    backend, error = environment.probe_active_backend()
    assert backend is None and error


def test_real_check_json_on_this_machine():
    """The real command in a fresh process: never crashes, with or without a GPU."""
    result = subprocess.run([sys.executable, "-m", "tileiropt", "check", "--json"], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == REPORT_KEYS
    assert isinstance(report["tileir_ready"], bool)
    import torch

    if not torch.cuda.is_available():
        assert report["gpu"] == CPU_DEVICE
        assert report["active_backend"] is None


def test_the_records_environment_follows_the_release_the_run_asked_for() -> None:
    """validate.json and bench.json store the environment judged for the release the run follows, as check.json
    does: two records of one run never name different releases."""
    from tileiropt.check.environment import choose_release
    from tileiropt.check.machine import environment_summary

    assert environment_summary("13.1")["release"]["version"] == "13.1"
    assert environment_summary("13.4")["release"]["version"] == "13.4"
    assert environment_summary()["release"]["version"] == choose_release(None).release.version  # detected/newest
