"""Every command the tool prints works when pasted exactly as printed: the report's next step (run again with
ENABLE_TILE=1, under a simulated TileIR backend: nvtriton's `triton.backends.tileir` module), and the `cp` that
applies a validated file by hand when `--in-place` refuses for want of a measured not-slower verdict."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
    return out


if __name__ == "__main__":
    x = torch.randn(1000)
    print(add(x, x)[:3])
'''
SIMULATED_TILEIR = '''import importlib.machinery, sys, types
module = types.ModuleType("triton.backends.tileir")  # what nvtriton installs: the gate and `check` look for it
module.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir", None)
sys.modules["triton.backends.tileir"] = module
'''
TIMEOUT_S = 300  # a run of one small kernel on the CPU takes seconds; this only stops a hang


def _shell(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`command` through bash, as a user pastes it, with this interpreter's `tileiropt` first on PATH."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    environment = {**os.environ, "PATH": path, **env}
    environment.pop("ENABLE_TILE", None)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "add.py").write_text(KERNEL, encoding="utf-8")
    return tmp_path


def test_the_reports_next_step_runs_as_printed_under_a_simulated_tileir(folder: Path, tmp_path_factory) -> None:
    first = _shell("tileiropt run add.py", folder)
    assert first.returncode == 0, first.stdout + first.stderr
    report = (folder / ".tileiropt" / "report.md").read_text(encoding="utf-8")
    printed = re.search(r"next, on a Blackwell GPU with nvtriton: `([^`]+)`", report)
    assert printed, report[:2000]
    command = printed.group(1)
    assert command == f"cd {folder} && ENABLE_TILE=1 tileiropt run add.py"
    again = _shell("tileiropt report add.py", folder)  # the same target as the run's: its records
    assert again.returncode == 0 and "add_kernel" in again.stdout, again.stderr
    (folder / "other.py").write_text(KERNEL, encoding="utf-8")
    other = _shell("tileiropt report other.py", folder)  # another kernel file's: said so, and how to record it
    assert other.returncode == 2 and "are not of other.py" in other.stderr and "fix: tileiropt run other.py" in \
        " ".join(other.stderr.split())
    simulated = tmp_path_factory.mktemp("simulated-tileir")
    (simulated / "sitecustomize.py").write_text(SIMULATED_TILEIR, encoding="utf-8")
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # pasted in another folder: the command goes to its own
    again = _shell(command, elsewhere, PYTHONPATH=str(simulated))
    assert again.returncode == 0, again.stdout + again.stderr
    report = (folder / ".tileiropt" / "report.md").read_text(encoding="utf-8")
    check = (folder / ".tileiropt" / "check.json").read_text(encoding="utf-8")
    assert '"tileir_backend": true' in check  # the simulated backend was seen: ENABLE_TILE=1 reached the run
    assert "**add_kernel**" in report


def test_in_place_refuses_without_a_measured_not_slower_and_its_cp_works(folder: Path) -> None:
    original = (folder / "add.py").read_text(encoding="utf-8")
    run = _shell("tileiropt run add.py --in-place", folder)
    assert run.returncode == 3, run.stdout + run.stderr  # the proof needs a GPU: nothing wrong, not run here
    assert (folder / "add.py").read_text(encoding="utf-8") == original  # never overwritten without its proof
    assert not list(folder.glob("add.py.orig*"))
    printed = re.search(r"to use the validated file anyway: (cp \S+ \S+)", " ".join(run.stderr.split()))
    assert printed, run.stderr
    copied = _shell(printed.group(1), folder)
    assert copied.returncode == 0, copied.stderr
    assert (folder / "add.py").read_text(encoding="utf-8") == (folder / "add_tileir.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("argv0, on_path, words", [
    ("/venv/bin/tileiropt", "/venv/bin/tileiropt", ["tileiropt"]),  # the installed command
    ("/venv/bin/tileiropt", None, ["/venv/bin/tileiropt"]),  # started by its path, none on PATH
    ("/venv/bin/tileiropt", "/usr/bin/tileiropt", ["/venv/bin/tileiropt"]),  # another one first on PATH
    ("/src/tileiropt/__main__.py", None, [sys.executable, "-m", "tileiropt"]),  # `python -m`, none on PATH
    ("/src/tileiropt/__main__.py", str(Path(sys.executable).parent / "tileiropt"), ["tileiropt"]),  # this one's
    ("/src/tileiropt/__main__.py", "/elsewhere/bin/tileiropt", [sys.executable, "-m", "tileiropt"]),  # another's
])
def test_a_recorded_command_starts_the_tool_as_it_was_started(monkeypatch, argv0: str, on_path: str | None,
                                                               words: list[str]) -> None:
    """Run as `python -m tileiropt` with no `tileiropt` of the same installation on PATH, the command a run
    records (and the report's next step repeats) is `<this python> -m tileiropt ...`, which pastes."""
    import shutil

    import tileiropt.invocation
    from tileiropt.invocation import invoked_command

    monkeypatch.setattr(sys, "argv", [argv0, "run", "k.py"])
    monkeypatch.setattr(tileiropt.invocation, "started_as_module", lambda: argv0.endswith("__main__.py"))
    monkeypatch.setattr(shutil, "which", lambda name: on_path if name == "tileiropt" else None)
    assert invoked_command() == [*words, "run", "k.py"]


def test_the_next_step_of_a_run_started_as_python_dash_m_pastes(tmp_path: Path) -> None:
    """The report's next step repeats `python -m tileiropt` where that is how the tool was started."""
    from tileiropt.records.run import run_from_dict
    from tileiropt.report.markdown import rerun_command
    from tileiropt.report.model import Report

    run = run_from_dict({"command": ["/opt/py/bin/python3", "-m", "tileiropt", "run", "k.py", "--json"],
                         "cwd": str(tmp_path)})
    report = Report(artifacts=str(tmp_path / ".tileiropt"), environment={}, run=run, kernels=[], problems={})
    assert rerun_command(run, report) == f"cd {tmp_path} && ENABLE_TILE=1 /opt/py/bin/python3 -m tileiropt run k.py"
    # the tool's own --json goes; the program's, after `--`, stays
    run = run_from_dict({"command": ["tileiropt", "run", "k.py", "--json", "--", "python", "drive.py", "--json"],
                         "cwd": str(tmp_path)})
    assert rerun_command(run, report) == \
        f"cd {tmp_path} && ENABLE_TILE=1 tileiropt run k.py -- python drive.py --json"
