"""`validate` end to end under Triton's interpreter: worker subprocesses, every autotune config,
failures located, timeouts and crashes costing only their own record, the CLI and its exit codes.

The fixture kernels in `tests/fixtures/validate/` are small and each is wrong in one known way.
One module-scoped run validates all of them (two backends, run side by side) to keep this fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.errors import ExitCode
from tileiropt.project.spec import load_project, parse_project
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, SAME_ON_INTERPRETER, SAME_ON_PTX, Cause, Repeat
from tileiropt.validate.records import PREPARE, load_validate_run
from tileiropt.validate.run import validate_project

from shared import ROOT, TEST_FIXTURES, cpu_machine

FIXTURES = TEST_FIXTURES / "validate"
TIMEOUT_S = 6.0  # the hang fixtures' own timeout

KERNELS = [
    {"name": "off_by_one", "path": "off_by_one.py", "entry": "add", "reference": "x + y",
     "inputs": {"x": [1000], "y": [1000]}},
    {"name": "bad_config", "path": "bad_config.py", "entry": "scale", "reference": "x * 2", "inputs": {"x": [300]}},
    {"name": "wrong_dtype", "path": "wrong_dtype.py", "entry": "copy", "reference": "x.clone()",
     "inputs": {"x": [300]}, "dtypes": "bfloat16"},
    {"name": "reference_raises", "path": "wrong_dtype.py", "entry": "copy", "reference": "refs:raises",
     "inputs": {"x": [300]}},
    {"name": "cuda_only", "path": "cuda_only.py", "entry": "copy", "reference": "x", "inputs": {"x": [300]}},
    {"name": "compile_error", "path": "compile_error.py", "entry": "run", "reference": "x", "inputs": {"x": [300]}},
    {"name": "exits", "path": "exits.py", "entry": "copy", "reference": "x", "inputs": {"x": [300]}},
    {"name": "hang", "path": "hang.py", "entry": "copy", "reference": "x", "inputs": {"x": [300]},
     "timeout": TIMEOUT_S},
    {"name": "segfault", "path": "segfault.py", "entry": "crash", "reference": "x", "inputs": {"x": [300]}},
    {"name": "too_big", "path": "too_big.py", "entry": "copy", "reference": "x", "inputs": {"x": [300]}},
    {"name": "import_hang", "path": "import_hang.py", "entry": "never", "reference": "x", "inputs": {"x": [3]},
     "timeout": TIMEOUT_S},
    {"name": "two_first", "path": "two_tuners.py", "entry": "first_only", "reference": "x * 2",
     "inputs": {"x": [300]}},
    {"name": "two_both", "path": "two_tuners.py", "entry": "both", "reference": "(x * 2, -x)",
     "inputs": {"x": [300]}},
    {"name": "in_place", "path": "inplace_add.py", "entry": "add_", "reference": "x + y",
     "inputs": {"x": [300], "y": [300]}, "dtypes": "int32", "ranges": {"x": [-5, 5]}},
    {"name": "scale", "path": "scale.py", "entry": "scale", "reference": "original", "inputs": {"x": [1000]},
     "args": {"alpha": 0.5}},
    {"name": "scale_function", "path": "scale.py", "entry": "scale", "reference": "refs:scaled",
     "inputs": {"x": [1000]}, "args": {"alpha": 0.5}},
    {"name": "scaled_down", "path": "scale.py", "entry": "scale", "reference": "x * alpha + 1",
     "inputs": {"x": ["N"]}, "dims": {"N": 1 << 20}, "args": {"alpha": 0.5}},
]


def _project(kernels=KERNELS):
    return parse_project({"kernel": kernels}, None, FIXTURES)


@pytest.fixture(scope="module")
def run():
    # Only the hang fixtures have the short timeout (their own `timeout` key); real interpreter runs keep the
    # default, so a loaded machine never turns a slow run into a timeout.
    return validate_project(_project(), backends=["interpret", "tileir-code-on-interpret", "tileir"])


def _records(run, kernel, backend="interpret", variant="original"):
    return [r for r in run.records if r.kernel == kernel and r.backend == backend and r.variant == variant]


def test_off_by_one_mask_points_at_the_last_element(run):
    (record,) = _records(run, "off_by_one")
    assert record.status == FAIL and record.config == "(launch)"
    assert record.first_mismatch == [999] and record.mismatches == 1 and record.elements == 1000
    assert record.cause == Cause.KERNEL  # its output is wrong against its reference
    assert "first at (999,)" in record.reason
    assert record.provenance.compiled_backend == "interpreter"
    assert record.provenance.kernels == {"add_kernel": "interpreter"}
    assert record.provenance.triton_version and record.provenance.torch_version


def test_only_the_wrong_config_fails(run):
    records = _records(run, "bad_config")
    assert [r.config.split(",")[0] for r in records] == ["BLOCK_SIZE=32", "BLOCK_SIZE=64", "BLOCK_SIZE=128"]
    assert [r.status for r in records] == [PASS, FAIL, PASS]
    assert records[1].first_mismatch == [0] and records[1].mismatches == 300


def test_wrong_output_dtype_fails_with_the_dtypes(run):
    (record,) = _records(run, "wrong_dtype")
    assert record.status == FAIL
    assert "dtype float32, expected bfloat16" in record.reason


def test_reference_that_raises_gives_one_clear_record(run):
    (record,) = _records(run, "reference_raises")
    assert record.status == ERROR and record.config == PREPARE
    assert "the reference raised: ValueError: this reference always fails" in record.reason
    assert record.cause == Cause.REFERENCE
    from tileiropt.validate.phase import failures
    from tileiropt.validate.records import ValidateRun

    (stop,) = failures(ValidateRun(records=[record], backends=[record.backend]), "compatibility", "the original file")
    assert stop.reason.startswith("the project's reference of reference_raises raised on ")  # not the file's fault
    assert stop.reason.endswith("(fix: the kernel's `reference` key)") and "the original file" not in stop.reason


def test_cuda_only_wrapper_is_not_run_under_the_interpreter(run):
    (record,) = _records(run, "cuda_only")
    assert record.status == NOT_RUN  # this machine cannot run it; it is not the kernel's failure
    assert record.reason.startswith("not run: needs a GPU (") and record.cause == Cause.ENVIRONMENT


def test_compile_error_keeps_the_first_lines_of_the_error(run):
    (record,) = _records(run, "compile_error")
    assert record.status == ERROR and "no_such_function" in record.reason
    assert record.reason.endswith("in the kernel's own code (at tests/fixtures/validate/compile_error.py:13 in "
                                  "broken_kernel)")  # the kernel line, not the interpreter's
    assert record.cause == Cause.KERNEL and record.evidence[-1].endswith("compile_error.py:13 in broken_kernel")


def test_a_config_that_ends_the_process_costs_only_its_record(run):
    records = _records(run, "exits")
    assert [r.status for r in records] == [PASS, ERROR, PASS]
    assert records[1].reason.startswith("crashed (exit code 7)")
    assert records[1].config.startswith("BLOCK_SIZE=64")
    # os._exit in the kernel's pre-hook leaves no traceback: whose failure it is cannot be told, and is not guessed
    assert records[1].cause == Cause.UNKNOWN and "could not tell whose failure" in records[1].reason


def test_a_hanging_config_times_out_and_the_rest_still_run(run):
    records = _records(run, "hang")
    assert [r.status for r in records] == [PASS, ERROR, PASS]
    assert records[1].reason.startswith(f"timeout after {TIMEOUT_S:g}s; it ran past its time limit in the config "
                                        "BLOCK_SIZE=64")
    assert records[1].cause == Cause.TIMEOUT


def test_a_segfault_does_not_stop_the_kernels_after_it(run):
    (record,) = _records(run, "segfault")
    assert record.status == ERROR and record.reason.startswith("crashed: SIGSEGV")
    # the crash's own frames (faulthandler) show the wrapper's line: the kernel's code, with that evidence
    assert record.cause == Cause.KERNEL and "segfault.py:9 in crash" in record.reason
    assert any(line.endswith("segfault.py:9 in crash") or "segfault.py\", line 9" in line for line in record.evidence)
    assert all(r.status == PASS for r in _records(run, "two_first") + _records(run, "in_place"))


def test_a_config_out_of_device_resources_is_not_run(run):
    records = _records(run, "too_big")
    assert [r.status for r in records] == [PASS, NOT_RUN]
    assert records[1].reason.startswith(
        "not run: skipped by the autotuner: the config does not fit this device (OutOfResources:")


def test_a_file_whose_import_hangs_costs_one_prepare_record(run):
    (record,) = _records(run, "import_hang")
    assert record.status == ERROR and record.config == PREPARE
    assert record.reason.startswith(f"timeout after {TIMEOUT_S:g}s (while importing the file or evaluating the "
                                    "reference); it ran past its time limit")
    assert record.cause == Cause.TIMEOUT


def test_only_launched_autotuners_are_varied(run):
    first = _records(run, "two_first")
    assert [r.config.split(",")[0] for r in first] == ["double_kernel: BLOCK_SIZE=32", "double_kernel: BLOCK_SIZE=64"]
    both = _records(run, "two_both")
    assert len(both) == 4  # first configs together, then 1 more double and 2 more negate configs
    assert both[0].config.startswith("double_kernel: BLOCK_SIZE=32") and "negate_kernel" in both[0].config
    assert all(r.status == PASS for r in first + both)
    assert both[0].provenance.kernels == {"double_kernel": "interpreter", "negate_kernel": "interpreter"}


def test_in_place_kernel_is_compared_through_the_input_it_wrote(run):
    (record,) = _records(run, "in_place")
    assert record.status == PASS and record.atol is not None and record.elements == 300


def test_reference_original_validates_the_optimized_file(run):
    assert [r.status for r in _records(run, "scale")] == [NOT_RUN]  # the original against itself
    optimized = _records(run, "scale", variant="optimized")
    assert [r.status for r in optimized] == [PASS, PASS]
    forced = _records(run, "scale", backend="tileir-code-on-interpret", variant="optimized")
    assert [r.config.split(",")[0] for r in forced] == ["BLOCK_SIZE=64", "BLOCK_SIZE=256", "BLOCK_SIZE=512"]
    assert [r.status for r in forced] == [PASS, PASS, FAIL]  # the TileIR-only config is wrong


def test_function_reference_and_both_variants(run):
    assert [r.status for r in _records(run, "scale_function")] == [PASS, PASS]
    assert [r.status for r in _records(run, "scale_function", variant="optimized")] == [PASS, PASS]
    assert _records(run, "scale_function", backend="tileir-code-on-interpret") == []  # optimized only


def test_large_shapes_are_scaled_for_the_interpreter(run):
    records = _records(run, "scaled_down")
    assert all(r.status == PASS for r in records)
    assert records[0].scaled_from == {"x": [1 << 20]} and records[0].shapes["x"][0] <= 1 << 18
    assert "scaled for the interpreter from x=1048576 to x=" in records[0].reason


def test_tileir_without_gpu_is_one_not_run_record_per_variant(run):
    records = [r for r in run.records if r.backend == "tileir"]
    assert records and all(r.status == NOT_RUN and r.reason.startswith("not run: ") for r in records)
    assert len(_records(run, "bad_config", backend="tileir")) == 1


def test_run_summary(run):
    assert run.exit_code() == ExitCode.FAILED
    assert run.environment.get("triton") and run.backends == ["interpret", "tileir-code-on-interpret", "tileir"]
    assert run.seconds > 0 and run.started


# --------------------------------------------------------------------------- planning without a worker


def test_gpu_backends_are_not_run_without_a_gpu():
    cpu = cpu_machine()
    result = validate_project(_project(KERNELS[:1]), backends=["ptx", "tileir-code-on-ptx"], machine=cpu)
    assert [(r.backend, r.status, r.reason) for r in result.records] == [("ptx", NOT_RUN, "not run: no GPU")]
    assert result.exit_code() == ExitCode.NOT_RUN


def test_default_backends_follow_the_machine():
    from tileiropt.harness.backends import default_backends

    assert default_backends(has_gpu=False, tileir_ready=False) == ["interpret", "tileir-code-on-interpret", "tileir"]
    assert default_backends(has_gpu=True, tileir_ready=True) == ["ptx", "tileir"]
    assert default_backends(has_gpu=True, tileir_ready=False) == ["ptx", "tileir", "tileir-code-on-ptx"]


def test_missing_optimized_file_and_missing_reference_are_not_run():
    cpu = cpu_machine()
    project = _project([{"name": "k", "path": "off_by_one.py", "entry": "add", "inputs": {"x": [4], "y": [4]}}])
    result = validate_project(project, backends=["ptx"], variants=["original", "optimized"], machine=cpu)
    reasons = [r.reason for r in result.records]
    assert any("no reference" in r for r in reasons)
    assert any("no optimized file off_by_one_tileir.py" in r for r in reasons)


def test_unknown_backend_is_bad_input():
    from tileiropt.errors import UserError

    with pytest.raises(UserError, match="unknown backend 'cuda'"):
        validate_project(_project(KERNELS[:1]), backends=["cuda"])


# --------------------------------------------------------------------------- the command line


def test_cli_json_exit_codes_and_saved_records(tmp_path, monkeypatch):
    runner = CliRunner()
    kernel = str(FIXTURES / "bad_config.py")
    flags = ["--entry", "scale", "--shapes", '{"x": [300]}', "--reference", "x * 2"]
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["validate", kernel, *flags, "--backend", "interpret", "--json"])
    assert result.exit_code == ExitCode.FAILED, result.output
    data = json.loads(result.stdout)
    assert [r["status"] for r in data["records"]] == [PASS, FAIL, PASS]
    assert data["command"][0] == "tileiropt" and data["environment"]["triton"]
    saved = load_validate_run(Path(".tileiropt"))
    assert [r.status for r in saved.records] == [PASS, FAIL, PASS]

    table = runner.invoke(app, ["validate", kernel, *flags, "--backend", "ptx"])
    assert table.exit_code == ExitCode.NOT_RUN, table.output
    assert "no GPU" in table.stdout

    bad = runner.invoke(app, ["validate", kernel, "--entry", "scale", "--shapes", "{x"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "--shapes: not valid JSON" in bad.output
    bad = runner.invoke(app, ["validate", kernel, *flags, "--backend", "nope"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "unknown backend" in bad.output
    bad = runner.invoke(app, ["validate", kernel, *flags, "--variant", "newest"])
    assert bad.exit_code == ExitCode.BAD_INPUT
    bad = runner.invoke(app, ["validate", kernel, "--entry", "scale", "--shapes", '{"x": [3]}',
                              "--reference", "x +"])
    assert bad.exit_code == ExitCode.BAD_INPUT and "not a Python expression" in bad.output


def _scale_project(folder: Path, size: int) -> Path:
    """A project of the scale fixture (float32 and float16), its reference an expression."""
    project = folder / "tileiropt.toml"
    project.write_text(f"""
[[kernel]]
name = "scale"
path = "{FIXTURES / 'scale.py'}"
entry = "scale"
reference = "x * alpha + 1"
inputs = {{ x = [{size}] }}
args = {{ alpha = 2.0 }}
dtypes = ["float32", "float16"]
""")
    return project


def test_cli_passes_with_exit_zero(tmp_path):
    runner = CliRunner()
    project = _scale_project(tmp_path, 500)
    result = runner.invoke(app, ["validate", str(project), "--backend", "interpret", "--variant", "original"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "4 pass" in result.stdout
    saved = load_validate_run(tmp_path / ".tileiropt" / "validate.json")
    assert {r.dtypes["x"] for r in saved.records} == {"float32", "float16"}
    assert {r.atol for r in saved.records} == {1e-4, 1e-2}


# --------------------------------------------------------------------------- the examples


@pytest.mark.slow
def test_examples_after_apply_pass_on_both_interpreter_backends(tmp_path):
    """`apply` then `validate` on the examples under the interpreter: every config of the originals
    and of the optimized files, with the TileIR code forced on too (40-85 s on 2 CPU cores)."""
    import shutil

    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples, ignore=shutil.ignore_patterns(".tileiropt", "*_tileir.py"))
    applied = CliRunner().invoke(app, ["apply", str(examples), "--json"])
    assert applied.exit_code == ExitCode.OK, applied.output
    project = load_project(examples)
    result = validate_project(project, backends=["interpret", "tileir-code-on-interpret"])
    failures = [f"{r.kernel} {r.variant} {r.backend} {r.config}: {r.reason}" for r in result.records
                if r.status != PASS and not r.hint_only_repeat]  # a hint-only repeat is its repeated record's
    assert not failures, failures
    repeats = [r for r in result.records if r.hint_only_repeat]
    assert all(r.reason.startswith(SAME_ON_INTERPRETER) for r in repeats)  # the same meta-parameters ran before
    from tileiropt.validate.run import REPEATED, tally

    shown = tally(result)  # the closing line: repeats apart from the records no one ran
    assert shown[REPEATED] == len(repeats) > 0
    assert shown.get(NOT_RUN, 0) == sum(r.status == NOT_RUN for r in result.records) - len(repeats)
    originals = {r.kernel for r in result.records if r.variant == "original" and r.backend == "interpret"}
    assert originals == {k.name for k in project.kernels}
    forced = [r for r in result.records if r.backend == "tileir-code-on-interpret"]
    assert {r.kernel for r in forced} == {k.name for k in project.kernels}
    assert all(r.variant == "optimized" for r in forced)


def test_an_optimized_file_whose_own_top_level_call_raises_where_the_originals_does_not_fails(tmp_path: Path):
    """Workers guard a script's bare top-level calls; a failure only the optimized file has is its failure."""
    kernel = (FIXTURES / "scale.py").read_text()
    (tmp_path / "scale.py").write_text(kernel + "\n\nint('1')\n")
    (tmp_path / "scale_fast.py").write_text(kernel + "\n\nint('not a number')\n")
    project = parse_project({"kernel": [{"name": "scale", "path": "scale.py", "optimized": "scale_fast.py",
                                         "entry": "scale", "reference": "original", "inputs": {"x": [64]},
                                         "args": {"alpha": 2.0}}]},
                            None, tmp_path)
    result = validate_project(project, backends=["interpret"], variants=["optimized"])
    records = [r for r in result.records if r.variant == "optimized"]
    assert len(records) == 2 and all(r.status == FAIL for r in records), records  # both autotune configs
    assert all(r.reason.startswith("the optimized file's own top-level call raised where the original's did not: "
                                   "ValueError: invalid literal for int()") for r in records)


def test_configs_that_differ_only_in_hints_run_once_on_the_interpreter() -> None:
    """The interpreter computes with a config's meta-parameters and pre-hook; num_warps, num_stages, num_ctas and
    occupancy change nothing there, so such a config repeats an earlier item (its record says which)."""
    import types

    import triton

    from tileiropt.harness.configs import config_items
    from tileiropt.validate.config_repeats import interpreted_duplicates

    def kernel(x_ptr, BLOCK):  # the autotuner only holds it
        pass

    hook = print
    configs = [triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=8, num_stages=2),
               triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 128}, num_stages=5),
               triton.Config({"BLOCK": 128}, pre_hook=hook)]
    tuner = triton.autotune(configs=configs, key=[])(triton.jit(kernel))
    module = types.ModuleType("m")
    module.kernel = tuner
    items = config_items(module)
    assert [i.index for i in items] == [0, 1, 2, 3, 4]
    # item 1 repeats item 0 (the first configs), item 3 repeats item 2; item 4's pre-hook makes it its own
    assert interpreted_duplicates(module, items) == {1: 0, 3: 2}


def test_configs_alike_once_ptx_drops_the_tileir_hints_run_once() -> None:
    """On PTX with the TileIR code forced on, a config whose hints were dropped (occupancy, 2-CTA mode) is the very
    config an earlier item ran: Triton compiles the same code, so it runs once (num_stages and num_warps count)."""
    import types

    import triton

    from tileiropt.harness.configs import config_items
    from tileiropt.validate.config_repeats import dropped_hint_duplicates
    from tileiropt.validate.records import ValidationRecord

    def kernel(x_ptr, BLOCK):  # the autotuner only holds it
        pass

    configs = [triton.Config({"BLOCK": 64}, num_stages=2),  # occupancy 1, dropped
               triton.Config({"BLOCK": 64}, num_stages=2),  # occupancy 4, dropped: the same config
               triton.Config({"BLOCK": 64}, num_stages=3), triton.Config({"BLOCK": 64}, num_stages=2, num_warps=8),
               triton.Config({"BLOCK": 128}, num_stages=3), triton.Config({"BLOCK": 64}, num_stages=3)]
    module = types.ModuleType("m")
    module.kernel = triton.autotune(configs=configs, key=[])(triton.jit(kernel))
    items = config_items(module)
    assert dropped_hint_duplicates(module, items) == {1: 0, 5: 2}
    record = ValidationRecord("k", "optimized", "tileir-code-on-ptx", "BLOCK=64", NOT_RUN,
                              f"{SAME_ON_PTX} `BLOCK=64, num_stages=2` (its record above)", repeat=Repeat.PTX)
    assert record.hint_only_repeat  # counted as a repeat, not as something that could not run


def test_tileir_configs_differing_only_in_warps_their_tile_raises_alike_run_once(tileir_code_forced: None) -> None:
    """num_warps is a hint to TileIR: under the stand-in a 256x128 tile compiles at eight warps whether the file
    gives two, four or eight, so those configs are one compiled config; a 64x64 tile keeps the warps given."""
    import types

    import triton

    from tileiropt.harness.configs import config_items
    from tileiropt.validate.config_repeats import dropped_hint_duplicates

    def kernel(x_ptr, BLOCK_M, BLOCK_N):  # the autotuner only holds it
        pass

    big, small = {"BLOCK_M": 256, "BLOCK_N": 128}, {"BLOCK_M": 64, "BLOCK_N": 64}
    configs = [triton.Config(dict(big), num_warps=8),  # the author's own: as written
               triton.Config(dict(big), num_warps=2, occupancy=1), triton.Config(dict(big), num_warps=4, occupancy=2),
               triton.Config(dict(big), num_warps=8, occupancy=1),
               triton.Config(dict(small), num_warps=2, occupancy=1),
               triton.Config(dict(small), num_warps=4, occupancy=1)]
    module = types.ModuleType("m")
    module.kernel = triton.autotune(configs=configs, key=[])(triton.jit(kernel))
    items = config_items(module)
    assert dropped_hint_duplicates(module, items) == {1: 0, 2: 0, 3: 0}
    assert "num_warps=2" in items[1].label and "occupancy=1" in items[1].label  # labelled as the file gives it


def test_whose_difference_a_bit_exact_replay_shows(tmp_path: Path) -> None:
    """A replay expected bit-exact differs: the original, run once more, decides whether the kernel disagrees
    with itself (compared within its own spread) or, its code being the same on both sides, the replay is the
    tool's (never the optimized file's failure)."""
    from types import SimpleNamespace

    import torch

    from tileiropt.errors import PINNING_ERROR
    from tileiropt.harness import harness
    from tileiropt.project.launch import CapturedLaunch
    from tileiropt.validate.worker import CaseRunner, Prepared, same_kernel_code

    source = "import triton\n\n@triton.jit\ndef k(x):\n    pass\n"
    (tmp_path / "k.py").write_text(source)
    (tmp_path / "k_tileir.py").write_text("# tileiropt gate\n" + source)
    (tmp_path / "other.py").write_text(source.replace("pass", "return"))
    (tmp_path / "in_place.py").write_text(source.replace("pass", "return 1"))
    (tmp_path / "gated.py").write_text(source.replace("pass", "return 2 if TILEIR else 1"))
    assert same_kernel_code(str(tmp_path / "k_tileir.py"), str(tmp_path / "k.py"), "k")
    assert same_kernel_code(str(tmp_path / "gated.py"), str(tmp_path / "in_place.py"), "k")  # as the gate off reads it
    assert not same_kernel_code(str(tmp_path / "other.py"), str(tmp_path / "k.py"), "k")

    expected, output = torch.zeros(4), torch.tensor([0.0, 0.0, 1e-9, 0.0])
    first = harness.compare(output, expected, 0.0, 0.0)
    case = SimpleNamespace(args={}, dims={}, variant="optimized", path=str(tmp_path / "k_tileir.py"),
                           original_path=str(tmp_path / "k.py"), launch=CapturedLaunch("k", "k.py", ()))
    again = iter([torch.tensor([0.0, 2e-9, 0.0, 0.0])])
    runner = SimpleNamespace(case=case, backend=SimpleNamespace(device="cpu"), exact=True,
                             original_call=lambda: lambda inputs, args, dims: next(again))
    prepared = Prepared(inputs={})
    look = CaseRunner.second_look(runner, output, expected, prepared, "out", first)
    assert look.result.ok and look.note.startswith("the kernel disagrees with itself: the original run twice on the "
                                                   "same inputs differs by up to 2e-09; compared within 4e-09")
    assert look.spread > 0 and not look.tool_error  # NONDETERMINISM, told by the original's second run
    runner.original_call = lambda: lambda inputs, args, dims: torch.zeros(4)  # the original is steady
    look = CaseRunner.second_look(runner, output, expected, prepared, "out", first)
    assert not look.result.ok and look.tool_error and look.note.startswith(f"{PINNING_ERROR} k alike on both sides")
    case.path = str(tmp_path / "other.py")  # its code changed: the optimized file's difference
    look = CaseRunner.second_look(runner, output, expected, prepared, "out", first)
    assert (look.note, look.tool_error, look.spread) == ("", False, 0.0)


def test_the_command_starts_its_workers_without_importing_torch_itself(tmp_path):
    """With the machine's facts kept (as `run` keeps them), `validate` neither imports torch nor asks CUDA in its
    own process: its workers start at once, and only they import torch."""
    project = _scale_project(tmp_path, 64)
    script = ("import sys\nfrom tileiropt.cli import main\nsys.argv = ['tileiropt', *sys.argv[1:]]\n"
              "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
              "print('torch imported:', 'torch' in sys.modules, 'exit:', code)\n")
    env = {**os.environ, "TILEIROPT_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-c", script, "validate", str(project), "--backend", "interpret", "--variant",
               "original"]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert "torch imported: True exit: 0" in first.stdout, first.stdout + first.stderr  # the facts probed
    shutil.rmtree(tmp_path / ".tileiropt")  # no earlier record to reuse: the case runs again, in a worker
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert "torch imported: False exit: 0" in again.stdout, again.stdout + again.stderr
    assert "scale done: 4 pass" in again.stderr  # run in workers, not reused


def test_the_table_names_each_case_once_and_indents_its_configs_wherever_they_fold() -> None:
    from rich.console import Console

    from tileiropt.validate.command import summary_table
    from tileiropt.validate.records import ValidateRun, ValidationRecord

    long = ("BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3, "
            "num_ctas=2, occupancy=2")
    records = [ValidationRecord("matmul", "optimized", "tileir-code-on-ptx", config, status, reason,
                                max_abs=1e-3 if status == PASS else None, path="/x.py", dtypes={"a": "float16"})
               for config, status, reason in [
                   (long, PASS, ""), ("BLOCK_SIZE_M=64", NOT_RUN, f"{SAME_ON_PTX} `{long}` (its record above)")]]
    records[1].repeat = Repeat.PTX
    console = Console(width=60, record=True)
    console.print(summary_table(ValidateRun(records=records, backends=["tileir-code-on-ptx"])))
    lines = console.export_text().splitlines()
    assert sum("matmul optimized" in line for line in lines) == 1  # the case, once
    start = next(i for i, line in enumerate(lines) if "BLOCK_SIZE_M=128" in line)
    folded = lines[start + 1:start + 4]
    assert all(line.startswith("   ") and line.strip() for line in folded), lines  # indented as the config
    assert any("BLOCK_SIZE_M=64" in line and "repeat" in line for line in lines)
    assert max(len(line) for line in lines) <= 60


def test_validating_one_kernel_keeps_the_other_kernels_records(tmp_path: Path) -> None:
    from tileiropt.validate.command import with_other_kernels
    from tileiropt.validate.records import ValidateRun, ValidationRecord, load_validate_run, save_validate_run

    def made(kernel: str, key: str) -> ValidationRecord:
        return ValidationRecord(kernel, "optimized", "interpret", "BLOCK=64", PASS, "", inputs=key, path="/k.py")

    project = str(tmp_path / "tileiropt.toml")
    save_validate_run(ValidateRun(records=[made("a", "ka"), made("b", "kb-old")], backends=["interpret"],
                                  project=project, complete=["ka", "kb-old"], started="2026-01-01T00:00:00"),
                      tmp_path)
    run = ValidateRun(records=[made("b", "kb")], backends=["interpret"], project=project, complete=["kb"])
    kept = with_other_kernels(run, tmp_path, ["b"])
    assert [(r.kernel, r.inputs) for r in kept.records] == [("a", "ka"), ("b", "kb")]
    assert kept.complete == ["ka", "kb"] and "1 other kernel(s) kept" in kept.notes[-1]
    save_validate_run(kept, tmp_path)
    assert {r.kernel for r in load_validate_run(tmp_path).records} == {"a", "b"}
    assert with_other_kernels(run, tmp_path, None) is run  # every kernel: this run is the whole record
    elsewhere = ValidateRun(records=[made("b", "kb")], backends=["interpret"], project=str(tmp_path / "other.toml"))
    assert with_other_kernels(elsewhere, tmp_path, ["b"]) is elsewhere  # another project's records are not mixed in


def test_a_pass_above_atol_says_once_per_kernel_and_dtype_that_its_relative_margin_holds_it() -> None:
    from tileiropt.validate.command import detail_lines
    from tileiropt.validate.records import ValidateRun, ValidationRecord

    def record(config: str, max_abs: float) -> ValidationRecord:
        return ValidationRecord("norm", "optimized", "ptx", config, PASS, "", max_abs=max_abs, atol=1e-5, rtol=1e-3,
                                path="/x.py", dtypes={"x": "float32"})

    widened = ValidationRecord("norm", "optimized", "ptx", "D", PASS, "compared within 0.004 (its own spread)",
                               max_abs=3e-3, atol=0.0, rtol=0.0, path="/x.py", dtypes={"x": "float16"})
    lines = detail_lines(ValidateRun(records=[record("A", 1.2e-4), record("B", 3e-4), record("C", 1e-6), widened],
                                     backends=["ptx"]))
    notes = [line for line in lines if "above atol" in line]
    assert notes == ["note: norm float32: passed with a max abs difference of 1.2e-04, above atol 1.0e-05: every "
                     "element is within atol + rtol x |reference| (rtol 1.0e-03), as torch.allclose judges"]


def test_a_reused_hint_only_repeat_counts_as_a_repeat_on_the_progress_line_as_when_it_ran() -> None:
    from tileiropt.validate.records import ValidationRecord
    from tileiropt.validate.run import REPEATED, progress_word

    repeat = ValidationRecord("k", "optimized", "tileir-code-on-interpret", "BLOCK=64, num_warps=8", NOT_RUN,
                              f"{SAME_ON_INTERPRETER} `BLOCK=64, num_warps=4` (its record above)", path="/k.py",
                              repeat=Repeat.INTERPRETER)
    assert repeat.hint_only_repeat and progress_word(repeat) == REPEATED
    other = ValidationRecord("k", "optimized", "tileir", "BLOCK=64", NOT_RUN, "not run: no GPU", path="/k.py")
    assert progress_word(other) == NOT_RUN
