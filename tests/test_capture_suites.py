"""A library's own test suite, captured as it is (`tileiropt run pkg -- pytest tests/`): a recorder the program
never notices (an operator library implementing torch's own operators with Triton kernels behind locks that are not
reentrant), pytest-xdist workers, no size limit, the whole run (and a cut run never a pass), Triton imported through a
module of the package, a package's own autotuner, kernels defined outside the library, a package that needs a GPU."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.capture.capture import run_capture
from tileiropt.cli import app
from tileiropt.errors import ExitCode
from tileiropt.project.spec import project_from_library
from tileiropt.report.artifacts import load_artifacts
from tileiropt.run.pipeline import run_pipeline
from tileiropt.schema import FAIL, NOT_RUN, PASS

from shared import TEST_FIXTURES, whole_report

SUITES = TEST_FIXTURES / "suites"
OPLIB_KERNELS = {"min_kernel", "max_kernel", "all_kernel", "add_kernel"}
PYTEST = ["pytest", "-q", "-p", "no:cacheprovider", "tests"]


def _suite(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(SUITES / name, target)
    return target


def _capture(folder: Path, target: str, command: list[str], **options) -> object:
    """A library's capture: the command runs to its end; a stall or the budget only guard the test itself."""
    options = {"stall": 60, "budget": 300, **options}
    return run_capture([folder / target], command, interpret=True, cwd=folder, stop_when_captured=False, **options)


def test_an_operator_library_that_implements_torch_operators_is_captured_without_a_deadlock(tmp_path: Path,
                                                                                              monkeypatch) -> None:
    # every kernel's launch runs under a lock that is not reentrant, and aten::min/max/all are the library's kernels:
    # a recorder calling tensor.min() (or isfinite().all()) inside the hook would wait on itself forever
    folder = _suite(tmp_path, "oplib")
    monkeypatch.setenv("OPLIB_CACHE", str(tmp_path / "generated"))
    result = _capture(folder, "oplib/__init__.py", PYTEST)
    assert not result.cut and result.ended == "the program finished", (result.ended, result.stderr_tail)
    assert {launch.kernel for launch in result.launches} == OPLIB_KERNELS
    ints = next(launch for launch in result.launches if launch.kernel == "min_kernel"
                and launch.tensors()["x_ptr"].dtype == "int64")
    assert ints.tensors()["x_ptr"].values == tuple(range(10, 40))  # read from memory, not through torch.min
    floats = next(launch for launch in result.launches if launch.kernel == "add_kernel")
    assert floats.tensors()["x_ptr"].nonnegative is True  # torch.rand: read from the bits
    assert floats.grid == (8, 1, 1)  # the grid Triton launched (cdiv(1000, 128))
    # the kernel the library wrote into its cache folder at run time: named, with where it was defined
    generated = str((tmp_path / "generated" / "generated_fill.py").resolve())
    assert result.outside == {f"generated_fill_kernel@{generated}": {
        "kernel": "generated_fill_kernel", "file": generated, "line": 6, "launches": 1}}


def test_pytest_xdist_workers_are_captured(tmp_path: Path, monkeypatch) -> None:
    folder = _suite(tmp_path, "oplib")
    monkeypatch.setenv("OPLIB_CACHE", str(tmp_path / "generated"))
    result = _capture(folder, "oplib/__init__.py", [*PYTEST[:-1], "-n", "2", "tests"])
    assert not result.cut and result.exit_code == 0, (result.ended, result.stderr_tail)
    assert result.processes == 3  # pytest and its two workers, each with a launch file of its own
    assert {launch.kernel for launch in result.launches} == OPLIB_KERNELS
    assert sum(result.counts.values()) == 7  # min 2, max 2, all 2, add 1: over both workers


def test_no_size_limit_a_package_of_a_thousand_files(tmp_path: Path, monkeypatch) -> None:
    # 1,800 kernels in 300 files among 1,001: their names alone pass the 128 KiB an environment variable may hold
    package = tmp_path / "a_package_with_a_rather_long_name" / "bigpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    kernel = ("\n@triton.jit\ndef add_{j}_kernel_with_a_descriptive_name(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
              "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
              "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + {j}, mask=offs < n)\n")
    for i in range(300):
        (package / f"ops_{i:04d}.py").write_text("import triton\nimport triton.language as tl\n"
                                                 + "".join(kernel.format(j=j) for j in range(6)))
    for i in range(700):
        (package / f"util_{i:04d}.py").write_text(f"VALUE = {i}\n")
    (package.parent / "drive.py").write_text(
        "import torch\nfrom bigpkg.ops_0007 import add_3_kernel_with_a_descriptive_name as k\n"
        "x = torch.rand(100)\nout = torch.empty_like(x)\nk[(1,)](x, out, 100, BLOCK=128)\n"
        "assert torch.allclose(out, x + 3)\n")
    monkeypatch.chdir(package.parent)  # where the command runs
    project = project_from_library(package, ["python", "drive.py"])
    assert len(project.capture.files) == 300
    expected = sum(len(str(f.resolve())) + 40 for f in project.capture.files) * 6
    assert expected > 128 * 1024
    result = run_capture(project.capture.files, ["python", "drive.py"], interpret=True, cwd=package.parent,
                         stop_when_captured=False, stall=120)
    assert result.exit_code == 0, (result.ended, result.stderr_tail)
    assert len(result.expected) == 1800
    assert [launch.kernel for launch in result.launches] == ["add_3_kernel_with_a_descriptive_name"]


def test_a_cut_library_run_is_never_a_pass_and_says_where_it_was(tmp_path: Path, monkeypatch) -> None:
    folder = _suite(tmp_path, "oplib")
    monkeypatch.setenv("OPLIB_CACHE", str(tmp_path / "generated"))
    monkeypatch.setenv("OPLIB_HANG", "1")
    monkeypatch.chdir(folder)
    project = project_from_library(folder / "oplib", PYTEST)
    project.capture.stall = 15  # no output, no launch for 15 s: stuck (far above a test's silent start-up)
    result = run_pipeline(project, command=["tileiropt", "run"])
    capture = next(p for p in result.phases if p.phase == "capture")
    assert capture.status == FAIL and "did not finish: no progress for 15 s" in capture.detail, capture.detail
    assert result.exit_code == 1
    record = load_artifacts(result.artifacts).capture
    assert record is not None and record.cut
    assert record.where.startswith("tests/test_oplib.py:38 in test_waits_forever_when_asked")
    report = whole_report(result.report)
    first = report.split("\n\n")[1]  # after the title
    assert first.startswith("**Cut**: the command did not finish: no progress for 15 s"), first
    assert "partial: the command was cut before its end" in report
    assert "Where the cut program was" in report and "test_oplib.py" in report
    assert "It also launched 1 kernel(s) that no file of the library defines" in report  # counted before the cut


def test_triton_imported_through_a_module_of_the_package(tmp_path: Path, monkeypatch) -> None:
    from tileiropt.classify.classify import classify_file
    from tileiropt.project.library import library_files

    folder = _suite(tmp_path, "shimpkg")
    ops = folder / "shimpkg" / "ops"
    # `from shimpkg.ops._triton import triton, tl` and `from ._triton import triton as tr`
    assert [k.kernel for k in classify_file(ops / "scale.py", rules=[]).kernels] == ["scale_kernel"]
    assert [k.kernel for k in classify_file(ops / "square.py", rules=[]).kernels] == ["square_kernel"]
    assert [p.name for p in library_files(folder / "shimpkg").kernel_files] == ["scale.py", "square.py"]
    monkeypatch.chdir(folder)
    result = run_pipeline(project_from_library(folder / "shimpkg", PYTEST), command=["tileiropt", "run"])
    statuses = {p.phase: p.status for p in result.phases}
    assert result.exit_code == 0 and statuses["apply"] == PASS and statuses["validate"] == PASS, result.phases
    assert not result.stopped


def test_a_package_autotuner_subclass_is_pinned_or_launched_at_its_own_choice(tmp_path: Path, monkeypatch) -> None:
    folder = _suite(tmp_path, "tunerpkg")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("TUNERPKG_CACHE", str(tmp_path / "tuner-cache.json"))
    result = run_pipeline(project_from_library(folder / "tunerpkg", PYTEST), command=["tileiropt", "run"])
    artifacts = load_artifacts(result.artifacts)
    assert result.exit_code == 0, [(r.kernel, r.variant, r.backend, r.status, r.reason)
                                   for r in artifacts.validate.records]
    negate = [r for r in artifacts.validate.records if r.kernel == "negate_kernel" and r.backend == "interpret"]
    assert {r.status for r in negate} == {PASS}  # its list cannot be swapped: launched at the config it chose
    assert any("BLOCK=512" in r.config for r in negate)  # the package's choice for 600 elements, read from the launch
    report = whole_report(result.report)
    assert "FixedConfigsTuner) does not take new configs" in report  # its TileIR configs: not attached, said so


def test_the_tool_s_own_pinning_failure_is_never_the_original_failing() -> None:
    from types import SimpleNamespace

    from tileiropt.errors import PINNING_ERROR
    from tileiropt.report.verdict import ATTENTION, kernel_verdict
    from tileiropt.schema import Cause

    reason = f"{PINNING_ERROR} FixedConfigsTuner at the captured config: AttributeError: x"
    failed = SimpleNamespace(status="fail", failures=[reason], reason=reason, cause=Cause.TOOL, failed_status="error",
                             evidence=["tileiropt/capture/replay.py:388 in launcher"])
    kernel = SimpleNamespace(optimized_path="", tileir_code=None, stopped=None, compatibility=failed)
    verdict = kernel_verdict(kernel)
    assert verdict.bucket == ATTENTION and verdict.text.startswith("tileiropt could not replay the original"), verdict


def test_a_package_that_needs_a_gpu_to_import_is_not_run_here(tmp_path: Path, monkeypatch) -> None:
    folder = _suite(tmp_path, "gpupkg")
    monkeypatch.chdir(folder)
    result = run_pipeline(project_from_library(folder / "gpupkg", PYTEST), command=["tileiropt", "run"])
    capture = next(p for p in result.phases if p.phase == "capture")
    assert capture.status == NOT_RUN and "needs a GPU" in capture.detail, capture.detail
    assert result.exit_code == 3
    assert "no kernel: the capture launched none" in next(p.detail for p in result.phases if p.phase == "apply")


@pytest.mark.gpu
def test_the_operator_library_on_the_gpu(tmp_path: Path, monkeypatch) -> None:
    folder = _suite(tmp_path, "oplib")
    monkeypatch.setenv("OPLIB_CACHE", str(tmp_path / "generated"))
    result = run_capture([folder / "oplib/__init__.py"], PYTEST, interpret=False, cwd=folder,
                         stop_when_captured=False, stall=120, budget=300)
    assert not result.cut and result.exit_code == 0, (result.ended, result.stderr_tail)
    assert {launch.kernel for launch in result.launches} == OPLIB_KERNELS
    ints = next(launch for launch in result.launches if launch.kernel == "min_kernel"
                and launch.tensors()["x_ptr"].dtype == "int64")
    assert ints.tensors()["x_ptr"].device == "cuda"
    assert ints.tensors()["x_ptr"].values == tuple(range(10, 40))  # copied by the CUDA driver, not torch
    assert len(result.outside) == 1
    assert os.path.basename(next(iter(result.outside.values()))["file"]) == "generated_fill.py"


def test_the_program_s_own_sitecustomize_still_runs_under_the_recorder(tmp_path: Path, monkeypatch) -> None:
    # Python runs the first sitecustomize on the path only: the recorder's runs the program's own after itself
    folder = _suite(tmp_path, "oplib")
    own = tmp_path / "site"
    own.mkdir()
    marker = tmp_path / "marker"
    (own / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'a').write('ran\\n')\n")
    monkeypatch.setenv("PYTHONPATH", str(own))
    monkeypatch.setenv("OPLIB_CACHE", str(tmp_path / "generated"))
    result = _capture(folder, "oplib/__init__.py", [*PYTEST[:-1], "tests/test_oplib.py::test_add"])
    assert result.exit_code == 0, result.stderr_tail
    assert [launch.kernel for launch in result.launches] == ["add_kernel"]
    assert marker.read_text() == "ran\n"  # once: pytest's own process


def test_launches_that_differ_only_in_a_dtype_or_a_tuple_are_told_apart() -> None:
    import torch

    from tileiropt.capture.hook import _signature

    assert _signature(torch.float16) != _signature(torch.bfloat16)
    assert _signature((1, 2)) != _signature((1, 3)) and _signature((1, 2)) == _signature((1, 2))
    assert _signature(object()) == _signature(object())  # an object the recorder never asks to describe itself


def test_stacks_are_asked_only_of_the_program_s_own_processes(tmp_path: Path) -> None:
    from tileiropt.capture.watch import ProgramWatch

    # a launch file whose pid is now another program's (here: the test's own process, in another group)
    (tmp_path / f"launches-{os.getpid()}.jsonl").write_text('{"status": {"launches": {}}}\n')
    watch = ProgramWatch(tmp_path, cap=3)
    assert watch.stacks(main_pid=2**22 + 7, wait=0.1) == {}  # never signalled: SIGUSR1 would have ended it


def test_validate_on_a_cut_capture_is_never_a_pass(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from tileiropt.cli import app

    folder = _suite(tmp_path, "oplib")
    (folder / "tileiropt.toml").write_text('[project]\ncapture = "pytest -q -p no:cacheprovider tests"\n'
                                           'library = "oplib"\ncapture_stall = 15\n')
    monkeypatch.setenv("OPLIB_CACHE", str(tmp_path / "generated"))
    monkeypatch.setenv("OPLIB_HANG", "1")
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(app, ["validate", "--backend", "interpret"])
    assert result.exit_code == 1, result.output
    assert "cut: the command did not finish: no progress for 15 s" in result.output


def test_a_program_stopping_for_want_of_a_gpu_is_this_machine_s_lack_not_a_failure(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    folder = tmp_path / "gpu_midway"
    shutil.copytree(TEST_FIXTURES / "capture" / "gpu_midway", folder)
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(app, ["run", "twice.py", "--", "python", "drive.py"])
    assert result.exit_code == ExitCode.OK, result.output[-2000:]
    report = whole_report(folder / ".tileiropt" / "report.md")
    assert "Not run to its end here: **the program**" in report and "needs a GPU and this machine has none" in report
    assert "Needs attention" not in report


GPU_FIRST = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y


if __name__ == "__main__":
    print(scale(torch.randn(1000, device="cuda")))
"""


def test_a_program_needing_a_gpu_before_its_first_launch_is_given_the_interpreter_s_route(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    """Nothing launched before the program stopped for want of a GPU: the run says so (never "its launches before
    that are validated") and prints the command that validates the kernels here, which works as printed."""
    import shlex

    if __import__("torch").cuda.is_available():
        pytest.skip("the program runs on this machine's GPU")
    (tmp_path / "my sub").mkdir()
    (tmp_path / "my sub" / "k.py").write_text(GPU_FIRST)
    monkeypatch.chdir(tmp_path)  # the file in a folder of its own, whose name needs quoting
    result = CliRunner().invoke(app, ["run", "my sub/k.py"])
    assert result.exit_code == ExitCode.NOT_RUN, result.output[-2000:]
    route = "tileiropt run 'my sub/k.py' --entry scale --shapes '{\"x\": [1024]}'"
    assert "not run here: the program needs a GPU before its first launch" in result.output
    report = whole_report(tmp_path / ".tileiropt" / "report.md")
    assert "needs a GPU before its first launch and this machine has none" in report and f"`{route}`" in report
    assert "its launches before that are validated" not in report
    again = CliRunner().invoke(app, shlex.split(route)[1:])
    assert again.exit_code == ExitCode.OK, again.output[-2000:]
    assert "ready to try on TileIR" in whole_report(tmp_path / ".tileiropt" / "report.md")


def test_a_program_that_launches_nothing_says_what_it_said_last(tmp_path: Path, monkeypatch) -> None:
    # every test skipped (bf16 on a CPU, say): the program ends well, but nothing of the library ran; the run and its
    # report say so first, with the program's last line
    folder = _suite(tmp_path, "tunerpkg")
    monkeypatch.chdir(folder)
    said = "4 skipped in 0.02s"
    result = run_pipeline(project_from_library(folder / "tunerpkg", ["python", "-c", f"print({said!r})"]),
                          command=["tileiropt", "run"])
    capture = next(p for p in result.phases if p.phase == "capture")
    assert capture.status == "error" and f"(its last output line: {said})" in capture.detail, capture.detail
    assert result.exit_code == ExitCode.FAILED
    assert result.program is not None and result.program.get("launched_none")
    report = whole_report(result.report)
    assert "it launched no kernel of the " in report and f"its last output line: {said}" in report
    assert report.index("Needs attention") < report.index("it launched no kernel")
