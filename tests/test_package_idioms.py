"""Idioms of real packages, each with a fixture of its own (tests/fixtures/idioms/): import-time side effects,
a pruner that looks at the launch, tensors holding device addresses, an Autotuner subclass. Each is captured and
replayed zero-config on the interpreter; every record of the original and of the optimized file must pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.errors import ExitCode
from tileiropt.harness.autotuners import find_autotuner
from tileiropt.harness.harness import import_kernel_module

from shared import TEST_FIXTURES, whole_report

IDIOMS = TEST_FIXTURES / "idioms"


def run_idioms(parent: Path) -> Path:
    """A copy of the idioms folder under `parent`, run as a library: `tileiropt run . -- python drive.py`."""
    import os

    folder = parent / "idioms"
    shutil.copytree(IDIOMS, folder)
    before = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["run", ".", "--json", "--", "python", "drive.py"])
    finally:
        os.chdir(before)
    assert result.exit_code == ExitCode.OK, result.output[-3000:]
    return folder


@pytest.fixture(scope="module")
def idioms(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The idioms folder as a library, run once (one capture, one replay)."""
    return run_idioms(tmp_path_factory.mktemp("idioms"))


def _records(folder: Path, kernel: str) -> list[tuple[str, str, str]]:
    data = json.loads((folder / ".tileiropt" / "validate.json").read_text())
    return [(r["variant"], r["backend"], r["status"]) for r in data["records"]
            if r["kernel"] == kernel and r["backend"] != "tileir"]  # the TileIR backend itself is not here


PASSED = [("original", "interpret", "pass"), ("optimized", "interpret", "pass"),
          ("optimized", "tileir-code-on-interpret", "pass")]


def test_a_package_registering_custom_ops_at_import_is_imported_once(idioms: Path) -> None:
    assert _records(idioms, "scale_kernel") == PASSED


def test_registrations_once_tolerates_only_a_second_registration() -> None:
    import torch

    from tileiropt.harness.loading import registrations_once

    torch.library.define("tileiropt_test_once::f", "(Tensor x) -> Tensor")
    with registrations_once():
        torch.library.define("tileiropt_test_once::f", "(Tensor x) -> Tensor")  # again: the first one stands
        with pytest.raises(ValueError, match="expected schema"):
            torch.library.define("tileiropt_test_once::g", "(Tensor x -> Tensor")  # any other error still raises
        torch.library.Library("tileiropt_test_once", "DEF")  # the namespace exists: added to, not an error
    with pytest.raises(RuntimeError, match="multiple times"):
        torch.library.define("tileiropt_test_once::f", "(Tensor x) -> Tensor")  # outside: torch's own rule


def test_a_pruner_that_looks_at_the_launch_replays_the_captured_config(idioms: Path) -> None:
    assert _records(idioms, "double_kernel") == PASSED
    configs = {r["config"] for r in json.loads((idioms / ".tileiropt" / "validate.json").read_text())["records"]
               if r["kernel"] == "double_kernel" and r["backend"] == "interpret"}
    assert configs == {"captured: grid (8, 1, 1), BLOCK=256, num_warps=4, num_ctas=1, num_stages=3"}  # as chosen


def test_tensors_of_device_addresses_point_into_the_replays_own_buffers(idioms: Path) -> None:
    assert _records(idioms, "grouped_scale_kernel") == PASSED
    launch = next(launch for launch in json.loads((idioms / ".tileiropt" / "capture.json").read_text())["launches"]
                  if launch["kernel"] == "grouped_scale_kernel")
    src = launch["args"][0]["tensor"]
    assert "values" not in src and src["addresses"] == {
        "buffers": [{"dtype": "float32", "elements": n, "nonnegative": False} for n in (100, 37, 256)],
        "targets": [[0, 0], [1, 0], [2, 0]]}
    assert launch["args"][2]["tensor"]["values"] == [100, 37, 256]  # sizes: ordinary integers, kept as they are


def test_what_counts_as_a_tensor_of_addresses() -> None:
    import torch

    from tileiropt.capture.replay import build_inputs, point_addresses
    from tileiropt.capture.tensor_memory import device_addresses
    from tileiropt.project.launch import Argument, CapturedLaunch, TensorArg

    a, b = torch.zeros(8), torch.ones(4, dtype=torch.float16)
    pointers = torch.tensor([a.data_ptr() + 8, 0, b.data_ptr()], dtype=torch.int64)
    found = device_addresses(pointers)
    assert found is not None and found.to_json() == {
        "buffers": [{"dtype": "float32", "elements": 8, "nonnegative": True},
                    {"dtype": "float16", "elements": 4, "nonnegative": True}],
        "targets": [[0, 8], None, [1, 0]]}
    assert device_addresses(torch.tensor([3, 70000], dtype=torch.int64)) is None  # indices, not addresses
    assert device_addresses(torch.tensor([1 << 33], dtype=torch.float64).to(torch.int32)) is None  # not int64
    assert device_addresses(torch.tensor([a.data_ptr(), 1 << 47], dtype=torch.int64)) is None  # one not found
    launch = CapturedLaunch("k", "k.py", (Argument("p", "tensor", tensor=TensorArg(
        shape=(3,), stride=(1,), dtype="int64", extent=3, addresses=found)),))
    inputs = build_inputs(launch, seed=0, device="cpu")
    assert sorted(inputs) == ["p", "p@0", "p@1"]
    assert inputs["p"].tolist() == [inputs["p@0"].data_ptr() + 8, 0, inputs["p@1"].data_ptr()]
    clone = {k: v.clone() for k, v in inputs.items()}
    point_addresses(launch, clone)
    assert clone["p"].tolist() == [clone["p@0"].data_ptr() + 8, 0, clone["p@1"].data_ptr()]


def _validate_entry(folder: Path, file: str, entry: str, reference: str, expected_exit: ExitCode) -> list[dict]:
    """`tileiropt validate` of one project entry (the function `entry` of `file`, on an x of 1,000 floats) on the
    interpreter, the original only; its records."""
    (folder / "tileiropt.toml").write_text(f'[[kernel]]\nname = "{entry}"\npath = "{file}"\nentry = "{entry}"\n'
                                           f'reference = "{reference}"\ninputs = {{ x = [1000] }}\n')
    result = CliRunner().invoke(app, ["validate", "--backend", "interpret", "--variant", "original", "--json"])
    assert result.exit_code == expected_exit, result.output[-3000:]
    return json.loads((folder / ".tileiropt" / "validate.json").read_text())["records"]


def test_an_autotuner_subclass_with_its_own_strategy_is_pinned_through_its_kernel(
        idioms: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _records(idioms, "negate_kernel") == PASSED  # a captured launch: at the config its strategy chose
    shutil.copy(IDIOMS / "ranked.py", tmp_path / "ranked.py")
    monkeypatch.chdir(tmp_path)
    records = _validate_entry(tmp_path, "ranked.py", "negate", "-x", ExitCode.OK)
    assert [(r["config"].split(",")[0], r["status"]) for r in records] == [
        ("BLOCK=64", "pass"), ("BLOCK=128", "pass"), ("BLOCK=256", "pass")]  # each of its configs, one at a time


def test_an_autotuner_subclass_that_cannot_be_pinned_runs_as_the_user_runs_it(
        idioms: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _records(idioms, "halve_kernel") == PASSED  # captured: replayed below the tuner, SPLIT as it bound it
    shutil.copy(IDIOMS / "bound.py", tmp_path / "bound.py")
    monkeypatch.chdir(tmp_path)
    first, second = _validate_entry(tmp_path, "bound.py", "halve", "x * 0.5", ExitCode.OK)
    # pinned, the kernel alone misses the SPLIT its tuner binds: the tool's failure, not the kernel's
    assert first["status"] == "pass" and first["config"].startswith("(autotuned)")
    assert first["reason"].startswith("run as the user runs it, its autotuner choosing: SplitTuner, the package's "
                                      "own autotuner of halve_kernel, cannot be pinned to one config from outside")
    assert second["status"] == "not-run" and "its record above ran it as the user runs it" in second["reason"]


def test_a_config_of_a_package_autotuner_that_computes_wrong_keeps_its_failure(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    source = (IDIOMS / "ranked.py").read_text().replace(
        "-tl.load(x_ptr + offs, mask=mask), mask=mask)",
        "-tl.load(x_ptr + offs, mask=mask) + (BLOCK == 64), mask=mask)")
    (tmp_path / "ranked.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    records = _validate_entry(tmp_path, "ranked.py", "negate", "-x", ExitCode.FAILED)
    assert [(r["config"].split(",")[0], r["status"]) for r in records] == [
        ("BLOCK=64", "fail"), ("BLOCK=128", "pass"), ("BLOCK=256", "pass")]  # never hidden by the tuner's choice


def test_the_idioms_library_is_reported_by_file(idioms: Path) -> None:
    report = (idioms / ".tileiropt" / "report.md").read_text()
    assert "**Library `idioms/`**: 11 kernel(s) in 11 file(s); the command launched 11 of them in 11 distinct " \
           "launch(es) (100% of the library); 0 never launched." in report
    assert "| file | kernels | launched | ready to try on TileIR (launches) | compatible with TileIR, not tuned " \
           "(launches) | never launched |" in report  # a column for each verdict that occurs
    assert "| `regpkg/ops.py` | 1 | 1 | 1 | 0 | 0 |" in report
    assert "| `entrywrap.py` | 1 | 1 | 0 | 1 | 0 |" in report  # compatible, not tuned


def test_a_launch_wrapper_binding_its_own_constexprs_is_replayed_below_it(idioms: Path) -> None:
    # the wrapper binds TILE_N itself: a replay through it would pass TILE_N twice ("multiple values")
    assert _records(idioms, "row_scale_kernel") == PASSED
    configs = {r["config"] for r in json.loads((idioms / ".tileiropt" / "validate.json").read_text())["records"]
               if r["kernel"] == "row_scale_kernel" and r["backend"] == "interpret"}
    assert configs == {"captured: grid (6, 1, 1), TILE_N=128"}  # as the wrapper bound it
    report = whole_report(idioms / ".tileiropt" / "report.md")
    # its launch hint passes through the wrapper, which the replay goes below: not measured, so never "ready to try"
    assert ("**row_scale_kernel**: compatible with TileIR, not tuned: its launch's occupancy passes through entry("
            in report) and "was not measured" in report


def test_an_autotuner_under_a_package_s_wrapper_gets_its_tileir_configs(
        idioms: Path, tileir_code_forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    applied = json.loads((idioms / ".tileiropt" / "apply.json").read_text())
    (kernel,) = [k for f in applied["files"] for k in f["kernels"] if k["kernel"] == "offset_kernel"]
    assert kernel["configs_added"] > 0 and not kernel["skipped"]
    assert any("reached at import" in c["what"] for c in kernel["changes"])
    optimized = next(Path(f["output"]) for f in applied["files"] if f["file"].endswith("entrytuned.py"))
    assert "_tileiropt_autotuner(offset_kernel).configs = _tileiropt_autotuner(offset_kernel).configs + [" \
        in optimized.read_text()
    monkeypatch.syspath_prepend(str(idioms))  # `from entrywrap import entry`, as the program imports it
    module = import_kernel_module(optimized)
    tuner = find_autotuner(module.offset_kernel)
    assert type(module.offset_kernel).__name__ == "LaunchEntry" and len(tuner.configs) == 2 + kernel["configs_added"]
    assert all(getattr(c, "tileir_hints", None) for c in tuner.configs[2:])  # its own two first, then TileIR's
    assert _records(idioms, "offset_kernel") == PASSED  # its captured launch, below the wrapper, on every backend


def test_gpu_only_calls_of_a_wrapper_are_answered_on_the_cpu_and_said(idioms: Path) -> None:
    # `with torch.cuda.device(x.device.index)` and `get_device_properties(...).multi_processor_count` on CPU tensors
    assert _records(idioms, "rows_sum_kernel") == PASSED
    launch = next(launch for launch in json.loads((idioms / ".tileiropt" / "capture.json").read_text())["launches"]
                  if launch["kernel"] == "rows_sum_kernel")
    assert launch["grid"] == [132, 1, 1]  # the emulated device's SM count
    captured = json.loads((idioms / ".tileiropt" / "capture.json").read_text())
    assert captured.get("failure") is None


def test_a_package_held_bare_by_the_program_is_imported_bare_in_the_workers(idioms: Path) -> None:
    # extpkg/__init__.py imports a compiled extension that does not exist: importing it whole would fail
    assert _records(idioms, "shift_kernel") == PASSED
    launch = next(launch for launch in json.loads((idioms / ".tileiropt" / "capture.json").read_text())["launches"]
                  if launch["kernel"] == "shift_kernel")
    assert launch["module"] == "extpkg.ops.shift" and launch["bare_packages"] == ["extpkg"]


def test_a_kernel_writing_part_of_its_output_with_reset_to_zero_replays_alike_on_both_sides(idioms: Path) -> None:
    # its output's unwritten rows hold the same drawn values on both sides; reset_to_zero zeroes it before the launch
    assert _records(idioms, "row_sums_kernel") == PASSED


def test_an_output_the_autotuner_zeroes_is_zeroed_on_both_sides_of_a_dispatch(idioms: Path) -> None:
    # atomics add to a buffer its autotuner resets; the optimized file's TMA dispatch is launched through, its
    # autotuners pinned: the reset happens there too, or the drawn values would count as a difference
    assert _records(idioms, "matmul_rows_kernel") == PASSED
    optimized = (idioms / ".tileiropt" / "optimized" / "idioms" / "rowsums_dot_tileir.py").read_text()
    assert "_tileiropt_tma_dispatch(" in optimized


def test_run_at_launches_the_config_with_its_pre_hook() -> None:
    from types import SimpleNamespace

    from tileiropt.harness.autotuners import own_run, run_at

    calls = []
    config = SimpleNamespace(pre_hook=lambda nargs: calls.append(("hook", dict(nargs))),
                             all_kwargs=lambda: {"BLOCK": 8})
    kernel = SimpleNamespace(run=lambda *args, **kwargs: calls.append(("run", args, kwargs)) or "launched")
    tuner = SimpleNamespace(fn=kernel, arg_names=["x", "n"], nargs=None, best_config=None)
    assert run_at(tuner, config)("X", 5, grid=(1,)) == "launched"
    assert calls == [("hook", {"x": "X", "n": 5, "grid": (1,), "BLOCK": 8}), ("run", ("X", 5), {"grid": (1,),
                                                                                              "BLOCK": 8})]
    assert tuner.best_config is config and tuner.nargs is None
    from triton.runtime.autotuner import Autotuner

    assert not own_run(Autotuner.__new__(Autotuner))

    class Own(Autotuner):
        def run(self, *args, **kwargs):
            return None

    assert own_run(Own.__new__(Own))


@pytest.mark.gpu
def test_every_idiom_on_the_gpu(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same library on a GPU: every kernel launched, every record of the original and the optimized file passes
    on PTX (the TileIR backend itself is not here), and no verdict needs attention."""
    folder = run_idioms(tmp_path_factory.mktemp("idioms_gpu"))
    records = json.loads((folder / ".tileiropt" / "validate.json").read_text())["records"]
    ran = [r for r in records if r["backend"] != "tileir"]
    assert {r["kernel"].split("#")[0] for r in ran} == {
        "scale_kernel", "double_kernel", "grouped_scale_kernel", "negate_kernel", "row_scale_kernel", "rows_sum_kernel",
        "shift_kernel", "row_sums_kernel", "offset_kernel", "halve_kernel", "matmul_rows_kernel"}
    assert all(r["status"] in ("pass", "not-run") for r in ran), [(r["kernel"], r["backend"], r["reason"])
                                                                 for r in ran if r["status"] != "pass"]
    assert any(r["status"] == "pass" and r["backend"] == "ptx" for r in ran)
    assert "Needs attention" not in (folder / ".tileiropt" / "report.md").read_text()
