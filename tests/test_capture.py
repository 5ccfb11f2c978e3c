"""Capture: the kernels' real launches are recorded from the program that runs them -- the kernel file as a
script, or a pytest command -- cut short when every kernel has its fill or the budget is spent, and replayed
on the original and the optimized kernel (bit-exact on the unchanged path), backward kernels included."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tileiropt.capture.capture import run_capture
from tileiropt.project.launch import CapturedLaunch
from tileiropt.project.spec import CaptureRequest, Project
from tileiropt.report.artifacts import load_artifacts
from tileiropt.run.pipeline import run_pipeline
from tileiropt.schema import PASS
from tileiropt.validate.worker import OWN_RUN_REASON

from shared import TEST_FIXTURES, cpu_machine

FIXTURES = TEST_FIXTURES / "capture"
KERNELS = {"scale_kernel", "add_inplace_kernel", "square_fwd_kernel", "square_bwd_kernel"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "capture"
    shutil.copytree(FIXTURES, target)
    return target


def test_script_capture_stops_once_every_kernel_has_its_fill(folder: Path) -> None:
    result = run_capture([folder / "ops.py"], interpret=True, cap=1, budget=60, cwd=folder)
    assert result.ended == "stopped: every kernel captured", (result.ended, result.stderr_tail)
    assert {launch.kernel for launch in result.launches} == KERNELS
    add = next(launch for launch in result.launches if launch.kernel == "add_inplace_kernel")
    block, = (a for a in add.constexprs if a.name == "BLOCK")
    assert (block.kind, block.value) == ("value", 64)  # the autotuner's choice arrives as a keyword
    assert add.grid == (8, 1, 1)
    assert add.caller is not None and add.caller["function"] == "add_" and add.caller["tensors"]["x"]["shape"] == [500]
    bwd = next(launch for launch in result.launches if launch.kernel == "square_bwd_kernel")
    assert bwd.caller is not None and bwd.caller["function"] == "Square.backward"


def test_budget_cuts_an_endless_sweep_and_a_stuck_program_shows_where_and_leaves_no_process(folder: Path) -> None:
    # a budget leaves a loaded machine time to import torch and reach the loop; the quiet rule is kept out of it
    sweep = run_capture([folder / "ops.py"], interpret=True, cap=50, budget=15, quiet=10**6, cwd=folder)
    assert sweep.cut == "the capture budget of 15 s was spent", (sweep.ended, sweep.stderr_tail)
    assert sweep.ended.startswith("cut: ") and sweep.exit_code is None and sweep.failure is None
    assert len([x for x in sweep.launches if x.kernel == "scale_kernel"]) > 1
    assert sweep.stacks and sweep.where  # where it was when cut: its stacks, read before it was ended
    pid_file = folder / "pid"
    os.environ["FIXTURE_PID_FILE"] = str(pid_file)
    try:  # no output and no launch for 12 s: stuck (well above the program's silent start-up on a loaded machine;
        # the budget only guards the test)
        hang = run_capture([folder / "ops.py"], [sys.executable, str(folder / "ops.py"), "--sleep"],
                           interpret=True, cap=50, budget=180, stall=12, cwd=folder)
    finally:
        del os.environ["FIXTURE_PID_FILE"]
    assert hang.cut == "no progress for 12 s (no output, no launch)", hang.ended
    assert hang.where.startswith("ops.py:85 in <module>"), (hang.where, hang.stacks)
    assert "time.sleep" not in hang.where and "ops.py\", line 85" in next(iter(hang.stacks.values()))
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert {x.kernel for x in hang.launches} == KERNELS


def test_capture_from_pytest_then_replay_on_original_and_optimized(folder: Path) -> None:
    project = Project(file=None, root=folder, kernels=[], artifacts=folder / ".tileiropt",
                      capture=CaptureRequest(files=[folder / "ops.py"], command=["pytest", "-q", "usage_check.py"],
                                             budget=90))
    result = run_pipeline(project, command=["tileiropt", "run"])
    artifacts = load_artifacts(result.artifacts)
    assert result.exit_code == 0, [(r.kernel, r.variant, r.backend, r.status, r.reason)
                                   for r in artifacts.validate.records]
    captured = {launch.kernel for launch in artifacts.capture.launches}
    assert captured == KERNELS  # module-level scale, both tests, forward and backward
    by_kernel: dict[str, list] = {}
    for record in artifacts.validate.records:
        by_kernel.setdefault(record.kernel.split("#")[0], []).append(record)
    for kernel in KERNELS:
        records = by_kernel[kernel]
        exact = [r for r in records if r.backend == "interpret"]
        assert {r.variant for r in exact} == {"original", "optimized"}
        assert all(r.status == PASS and r.atol == 0 and r.rtol == 0 for r in exact), exact
        # the original ran once: its run is the reference the optimized file's records compared with
        assert [OWN_RUN_REASON in r.reason for r in exact if r.variant == "original"] == [True]
        assert all(r.elements for r in exact if r.variant == "optimized")
        forced = [r for r in records if r.backend == "tileir-code-on-interpret"]
        assert forced and all(r.status == PASS for r in forced)
        assert all(r.config.startswith("captured: grid (") for r in exact)
    add = [r for r in artifacts.validate.records if r.kernel.startswith("add_inplace")]
    assert any("BLOCK=64" in r.config for r in add)  # replayed at the captured config


def test_init_writes_a_project_from_the_file_s_own_run_and_never_touches_it(folder: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tileiropt.cli import app
    from tileiropt.project.spec import load_project

    monkeypatch.chdir(folder)
    before = (folder / "ops.py").read_bytes()
    # the endless sweep never lets the program finish: the quiet period ends it (the budget is the guard)
    result = CliRunner().invoke(app, ["init", "ops.py", "-o", "tileiropt.toml", "--capture-budget", "60"])
    assert result.exit_code == 0, result.output
    assert (folder / "ops.py").read_bytes() == before
    text = (folder / "tileiropt.toml").read_text()
    project = load_project(folder / "tileiropt.toml")
    tables = {k.name: k for k in project.kernels}
    assert tables["add_"].entry == "add_" and tables["add_"].inputs == {"x": ["M"], "y": ["M"]}
    assert tables["add_"].dims == {"M": 500}
    assert tables["Square"].call == "Square.apply(x)"  # the autograd Function: its forward's arguments
    assert tables["scale"].args == {"alpha": 2.0}  # the first call's (the module-level self-check), not the sweep's
    assert 'reference = "original"' in text
    again = CliRunner().invoke(app, ["init", "ops.py", "-o", "tileiropt.toml"])
    assert again.exit_code == 2 and "not overwriting" in again.output


def test_report_says_what_was_captured_and_replayed(folder: Path) -> None:
    from tileiropt.report.build import build_report
    from tileiropt.report.markdown import render_markdown

    project = Project(file=None, root=folder, kernels=[], artifacts=folder / ".tileiropt",
                      capture=CaptureRequest(files=[folder / "ops.py"], command=["pytest", "-q", "usage_check.py",
                                                                                 "-k", "add"], budget=60))
    result = run_pipeline(project, command=["tileiropt", "run"])
    text = render_markdown(build_report(load_artifacts(result.artifacts)))
    assert "distinct launch(es) of 2 kernel(s) (add_inplace_kernel, scale_kernel)" in text
    assert "Replayed: " in text
    assert "Rewritten but never launched by the program (not validated): `ops.py`: square_fwd_kernel, " \
           "square_bwd_kernel." in text


def test_liger_rms_norm_captured_from_a_users_pytest_forward_and_backward(tmp_path: Path) -> None:
    """A package's kernel file used where it lives (site-packages), captured from the user's own test."""
    rms_norm = pytest.importorskip("liger_kernel.ops.rms_norm", reason="liger-kernel is not installed")
    (tmp_path / "test_usage.py").write_text(
        "import torch\nfrom liger_kernel.ops.rms_norm import LigerRMSNormFunction\n\n"
        "def test_forward_backward():\n"
        "    x = torch.randn(4, 256, requires_grad=True)\n    w = torch.randn(256, requires_grad=True)\n"
        "    LigerRMSNormFunction.apply(x, w, 1e-6).sum().backward()\n")
    project = Project(file=None, root=tmp_path, kernels=[], artifacts=tmp_path / ".tileiropt",
                      capture=CaptureRequest(files=[Path(rms_norm.__file__)], command=["pytest", "-q",
                                                                                       "test_usage.py"], budget=90))
    result = run_pipeline(project, command=["tileiropt", "run"])
    artifacts = load_artifacts(result.artifacts)
    assert result.exit_code == 0, result.stopped
    assert {launch.kernel for launch in artifacts.capture.launches} == {"_rms_norm_forward_kernel",
                                                                               "_rms_norm_backward_kernel"}
    records = [r for r in artifacts.validate.records if r.backend != "tileir"]
    assert {r.kernel for r in records if r.status == PASS} == {"_rms_norm_forward_kernel", "_rms_norm_backward_kernel"}
    assert all(r.status == PASS for r in records)
    optimized = {Path(r.path) for r in records if r.variant == "optimized"}
    assert optimized and all(p.is_relative_to(tmp_path / ".tileiropt" / "optimized") for p in optimized)
    assert all(not Path(r.path).is_relative_to(tmp_path / ".tileiropt") for r in records if r.variant == "original")
    # apply changed no kernel of the file (its launches pass their own occupancy): its optimized file is a copy,
    # said so in the summary's Output cell and the kernel's own Output section
    summary = (tmp_path / ".tileiropt" / "report.md").read_text()
    assert "| rms_norm_tileir.py (unchanged copy) |" in summary
    assert "File: rms_norm_tileir.py (unchanged copy)" in (tmp_path / ".tileiropt" / "report.md").read_text() + \
        "".join(p.read_text() for p in (tmp_path / ".tileiropt").glob("report-*.md"))


def test_a_sweep_that_only_repeats_itself_ends_after_the_quiet_period(folder: Path) -> None:
    result = run_capture([folder / "ops.py"], interpret=True, cap=5, budget=60, quiet=1, cwd=folder)
    assert result.ended == "stopped: every kernel captured, no new launch signature for 1 s", result.ended


def test_atomics_on_a_gpu_widen_the_tolerance_to_the_originals_own_noise() -> None:
    """A kernel accumulating with atomics differs from itself between runs on a GPU: the replay's tolerance
    becomes twice that run-to-run difference (and says so), never less than the dtype's."""
    import torch

    from tileiropt.harness.backends import PTX
    from tileiropt.harness.provenance import Provenance
    from tileiropt.validate.cases import Case
    from tileiropt.validate.worker import CaseRunner

    case = Case(id=0, kernel="k#1", variant="optimized", path="k.py", entry="k", reference="original", shapes={},
                dtypes={"x": "float16"}, atol=1e-2, rtol=1e-2, launch=CapturedLaunch("k", "k.py", (), atomics=True))
    runner = CaseRunner(case, PTX, False, Provenance(), lambda *a, **k: None)
    assert case.atol == 1e-2  # atomics on a GPU: never bit-exact
    runs = iter([torch.tensor([1.0, 2.25])])  # the second run of the original
    runner.widen_to_noise(lambda inputs, args, dims: {"x": next(runs)}, {"x": torch.tensor([1.0, 2.0])}, {})
    assert case.atol == 0.5 and "differs from itself by up to 0.25" in runner.noise_note


def test_an_unchanged_capture_is_reused_and_a_changed_file_or_fresh_runs_the_program_again(folder: Path) -> None:
    from tileiropt.capture.capture import add_captured_kernels

    machine = cpu_machine()

    def project() -> Project:
        return Project(file=None, root=folder, kernels=[], artifacts=folder / ".tileiropt",
                       capture=CaptureRequest(files=[folder / "ops.py"],
                                              command=["pytest", "-q", "usage_check.py", "-k", "add"], budget=60))

    conftest = folder / "conftest.py"  # imported by pytest, named nowhere
    conftest.write_text("SETTING = 1\n")
    first, specs = add_captured_kernels(project(), machine)
    assert not first.reused and first.inputs and specs
    assert str(conftest.resolve()) in first.sources and str((folder / "ops.py").resolve()) in first.sources
    second, again = add_captured_kernels(project(), machine)
    assert second.reused and second.started == first.started and second.launches == first.launches
    assert [(s.name, s.launch) for s in again] == [(s.name, s.launch) for s in specs]
    conftest.write_text("SETTING = 2\n")  # a file the program imported changed: run it again
    third, _ = add_captured_kernels(project(), machine)
    assert not third.reused and third.inputs == first.inputs
    assert add_captured_kernels(project(), machine)[0].reused
    test_file = folder / "usage_check.py"
    test_file.write_text(test_file.read_text() + "\n# edited\n")  # a file the command names
    edited, _ = add_captured_kernels(project(), machine)
    assert not edited.reused and edited.inputs != first.inputs
    fresh, _ = add_captured_kernels(project(), machine, fresh=True)
    assert not fresh.reused and fresh.inputs == edited.inputs


def test_a_file_whose_script_part_only_benchmarks_is_captured_from_its_own_tests(folder: Path) -> None:
    """Like the attention tutorial: run as a script it launches nothing here (its sweep is not run under the
    interpreter), so its own pytest functions run instead, with no argument from the user."""
    project = Project(file=None, root=folder, kernels=[], artifacts=folder / ".tileiropt",
                      capture=CaptureRequest(files=[folder / "own_tests.py"], command=None, budget=90))
    result = run_pipeline(project, command=["tileiropt", "run"])
    artifacts = load_artifacts(result.artifacts)
    assert result.exit_code == 0, result.stopped
    assert artifacts.capture is not None
    assert "so its own tests ran" in artifacts.capture.ended, artifacts.capture.ended
    assert artifacts.capture.command[1:3] == ["-m", "pytest"]
    sizes = sorted(launch.args[2].value for launch in artifacts.capture.launches)
    assert sizes == [100, 1000]  # both parametrized tests
    assert {r.status for r in artifacts.validate.records if r.backend != "tileir"} == {PASS}
    assert not (folder / ".pytest_cache").exists()  # nothing written into the user's folder


def test_a_failing_module_level_self_check_is_the_programs_failure_not_the_replays(folder: Path) -> None:
    """Like the layer-norm tutorial under the interpreter: the program launches its kernel, then its top-level
    check raises. The launch is replayed (workers import the original's definitions only: its program ran in the
    capture) and the failure is the program's, said once."""
    project = Project(file=None, root=folder, kernels=[], artifacts=folder / ".tileiropt",
                      capture=CaptureRequest(files=[folder / "failing_self_check.py"], command=None, budget=90))
    result = run_pipeline(project, command=["tileiropt", "run"])
    artifacts = load_artifacts(result.artifacts)
    assert artifacts.capture is not None and artifacts.capture.ended == "the program exited with status 1"
    # the program's failure is the run's (exit 1), named with file:line, while its launch is still replayed
    assert result.exit_code == 1 and not result.stopped, result.stopped
    failure = artifacts.capture.failure
    assert failure is not None and failure.exception == "AssertionError: a self-check that fails" \
        and failure.where.startswith("failing_self_check.py:"), failure
    assert result.program is not None and result.program["summary"].startswith("AssertionError")
    report = (result.artifacts and Path(result.artifacts, "report.md").read_text(encoding="utf-8"))
    assert f"failed (whose failure: its own code): {result.program['summary']}" in report  # a traceback into it
    assert "The program's last lines:" in report and result.program["cause"] == "kernel"
    records = [r for r in artifacts.validate.records if r.backend != "tileir"]
    assert records and all(r.status == PASS for r in records)
    # the optimized file too is imported as its definitions (and the TileIR code the tool put in it): the program
    # is not run again in a worker, so no record says that its own call raised
    originals = [r for r in records if r.variant == "original"]
    optimized = [r for r in records if r.variant == "optimized"]
    assert originals and optimized and not any("own call" in r.reason for r in originals + optimized)


def test_a_program_that_fails_before_any_launch_still_has_its_file_classified(tmp_path: Path) -> None:
    """Like the Triton-to-tile-IR fork's tutorial 09, which calls a helper it never defines before its first launch:
    the program's failure is the run's, said with file:line, and the file's kernels are still classified."""
    script = tmp_path / "fails_first.py"
    script.write_text("import triton\nimport triton.language as tl\n\n\n"
                      "@triton.jit\ndef copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
                      "    offs = tl.arange(0, BLOCK)\n    tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n\n\n"
                      "CONFIGS = configs_for_this_backend()\n")
    project = Project(file=None, root=tmp_path, kernels=[], artifacts=tmp_path / ".tileiropt",
                      capture=CaptureRequest(files=[script], command=None, budget=60))
    result = run_pipeline(project, command=["tileiropt", "run"])
    assert result.exit_code == 1 and result.program["summary"].startswith("NameError"), result.program
    assert "fails_first.py:11" in result.program["summary"]
    phases = {p.phase: p for p in result.phases}
    assert phases["capture"].status == "error" and "before launching a kernel" in phases["capture"].detail
    classified = json.loads((tmp_path / ".tileiropt" / "classify.json").read_text())
    assert [k["kernel"] for k in classified["kernels"]] == ["copy_kernel"], classified["kernels"]


def test_init_of_a_file_that_only_benchmarks_as_a_script_captures_its_own_tests(folder: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tileiropt.cli import app

    monkeypatch.chdir(folder)
    result = CliRunner().invoke(app, ["init", "own_tests.py", "-o", "tileiropt.toml"])
    assert result.exit_code == 0, result.output
    assert "so its own tests ran" in " ".join(result.output.split())
    text = (folder / "tileiropt.toml").read_text()
    assert 'entry = "double"' in text and 'inputs = { x = ["M"] }' in text


HELPER_KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def _act(x):
    return tl.exp(x)


@triton.jit
def act_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, _act(tl.load(x_ptr + offs, mask=m)), mask=m)


def act(x):
    y = torch.empty_like(x)
    act_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


act(torch.randn(300))
'''


def test_a_captured_kernels_report_shows_the_helpers_it_runs_as_validated(tmp_path: Path) -> None:
    from tileiropt.report.build import build_report
    from tileiropt.report.markdown import render_markdown

    (tmp_path / "helper.py").write_text(HELPER_KERNEL)
    project = Project(file=None, root=tmp_path, kernels=[], artifacts=tmp_path / ".tileiropt",
                      capture=CaptureRequest(files=[tmp_path / "helper.py"], command=None, budget=60))
    result = run_pipeline(project, command=["tileiropt", "run"])
    assert result.exit_code == 0, result.stopped
    text = render_markdown(build_report(load_artifacts(result.artifacts)))
    assert "`_act` (L7" in text and "`act_kernel` (L12" in text  # the kernel and the helper it calls
    assert "`_act` L8: in place, under the gate: tl.exp(x) -> tl.exp2" in text  # the helper's own rewrite
    assert "`_act` rewritten and validated: a JIT helper run by the kernels launched in" in text
