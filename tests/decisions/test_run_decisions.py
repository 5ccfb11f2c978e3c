"""A run's decisions: its exit code (interrupted, failed for each cause, not run here), which
optimized files are set aside or written in place; and what was found on the way.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from tileiropt.bench.records import FASTER, SAME, SLOWER, UNCLEAR
from tileiropt.errors import ExitCode, run_exit_code
from tileiropt.project.launch import CapturedLaunch
from tileiropt.project.spec import KernelSpec
from tileiropt.run.decisions import not_proven_not_slower, rejections
from tileiropt.schema import PASS

from shared import EXAMPLES, Settling

# --------------------------------------------------------------------------- a run's exit code


@pytest.mark.parametrize(("interrupted", "failed", "not_run_here", "code"), [
    (False, False, False, ExitCode.OK), (False, False, True, ExitCode.NOT_RUN),
    (False, True, False, ExitCode.FAILED), (False, True, True, ExitCode.FAILED),
    (True, False, False, ExitCode.INTERRUPTED), (True, True, True, ExitCode.INTERRUPTED),
])
def test_run_exit_code_table(interrupted: bool, failed: bool, not_run_here: bool, code: ExitCode) -> None:
    assert run_exit_code(interrupted=interrupted, failed=failed, not_run_here=not_run_here) == code


class _Paired:
    def __init__(self, verdict: str, low: float, high: float):
        self.verdict, self.ci_low, self.ci_high, self.threshold, self.ratio = verdict, low, high, 0.05, (low + high) / 2


class _Row:
    def __init__(self, kernel: str, paired: _Paired | None, reason: str = "", variant: str = "optimized",
                 launched: dict | None = None):
        self.kernel, self.paired, self.reason, self.size = kernel, paired, reason, 1024
        self.variant, self.backend, self.dtypes = variant, "ptx", {}
        self.provenance = types.SimpleNamespace(launched=launched or {})


@pytest.mark.parametrize(("pairs", "slower"), [
    ([(SLOWER, 1.06, 1.2)], True), ([(UNCLEAR, 0.99, 1.2)], False), ([(SAME, 0.97, 1.03)], False),
    ([(SAME, 0.97, 1.03), (SLOWER, 1.07, 1.1)], True), ([(FASTER, 0.8, 0.9)], False),
])
def test_a_slower_optimized_file_is_set_aside(pairs: list[tuple[str, float, float]], slower: bool) -> None:
    spec = KernelSpec(name="k", path=Path("/tmp/k.py"), entry="k", reference="original", inputs={}, dtypes=[{}])
    original = _Row("k", None, variant="original", launched=_RAN)  # the optimized rows ran other code
    rows = [original] + [_Row("k", _Paired(*p), launched=_OTHER_CODE) for p in pairs]
    assert (spec.optimized_path in rejections([spec], [], rows)) is slower  # type: ignore[arg-type]


_RAN = {"k": {"config": "BLOCK=128, num_warps=4", "code": "c1"}}
_OTHER_CODE = {"k": {"config": "BLOCK=128, num_warps=4", "code": "c2"}}


@pytest.mark.parametrize(("original", "optimized", "captured", "cause"), [
    (_RAN, {"k": {"config": "BLOCK=128, num_warps=8", "code": "c2"}}, False,
     "the configs differ (original k: BLOCK=128, num_warps=4; optimized k: BLOCK=128, num_warps=8)"),
    (_RAN, _OTHER_CODE, False, "same config, the compiled code differs: k"),
    (_RAN, _RAN, False, "the same kernels, configs and compiled code: the difference is outside the kernels (the "
                        "entry's own work around them) or the machine"),
    # no evidence that the optimized file ran anything else: a timing is never set aside on a guess
    (_RAN, {}, False, None),  # which kernels and configs ran is not known for both rows (a launch cache, say)
    ({"k": {"config": "B=1", "code": None}}, {"k": {"config": "B=1", "code": None}}, False, None),  # no PTX to compare
    (_RAN, _RAN, True, None),  # a captured launch: the same code at the same config is the machine's
])
def test_a_set_aside_names_its_cause(original: dict, optimized: dict, captured: bool, cause: str | None) -> None:
    spec = KernelSpec(name="k", path=Path("/tmp/k.py"), entry="k", reference="original", inputs={}, dtypes=[{}],
                      launch=CapturedLaunch("k", "/tmp/k.py", ()) if captured else None)
    rows = [_Row("k", None, variant="original", launched=original),
            _Row("k", _Paired(SLOWER, 1.06, 1.2), launched=optimized)]
    reasons = rejections([spec], [], rows)  # type: ignore[arg-type]
    if cause is None:
        assert reasons == {}
    else:
        assert reasons[spec.optimized_path].endswith(f"; {cause}"), reasons


@pytest.mark.parametrize(("pairs", "proven"), [
    ([], False), ([(SAME, 0.97, 1.03)], True), ([(FASTER, 0.8, 0.9)], True),
    ([(UNCLEAR, 0.99, 1.2)], False),  # not slower beyond doubt, but not proven not slower either
    ([(SAME, 0.97, 1.03), (UNCLEAR, 0.9, 1.06)], False), ([(UNCLEAR, 0.9, 1.05)], True),
])
def test_in_place_needs_a_measured_not_slower(pairs: list[tuple[str, float, float]], proven: bool) -> None:
    rows = [_Row("k", _Paired(*p)) for p in pairs] or [_Row("k", None, "not run: no GPU")]
    reason = not_proven_not_slower(rows, "k")  # type: ignore[arg-type]
    assert not_proven_not_slower(rows, "other").startswith("no paired timing")  # another kernel's rows never count
    assert (reason == "") is proven
    if not pairs:
        assert reason == "no paired timing: not run: no GPU"


# --------------------------------------------------------------------------- found on the way


def test_validate_json_keeps_every_phase_s_jobs_workers_and_slots(tmp_path: Path) -> None:
    from tileiropt.contract.job_timing import JobTiming
    from tileiropt.validate.records import ValidateRun

    def run(jobs: int, workers: int, slots: int) -> ValidateRun:
        return ValidateRun(records=[], backends=["ptx"], workers=workers, slots=slots,
                           jobs=[JobTiming("validate", f"k{i}", "ptx", "local", 1.0) for i in range(jobs)])

    merged = run(2, 1, 2)  # compatibility
    merged.merge(run(3, 2, 4))  # validate: one validate.json keeps both phases' records and costs
    assert (len(merged.jobs), merged.workers, merged.slots) == (5, 3, 4)


def test_in_place_writes_the_optimized_file_in_the_source_s_own_encoding(tmp_path: Path) -> None:
    from tileiropt.bench.records import SAME_CODE, BenchRow, BenchRun, PairedTiming
    from tileiropt.harness.gate import GATE_MARKER
    from tileiropt.validate.records import ValidateRun, ValidationRecord

    source = tmp_path / "k.py"
    text = "# -*- coding: latin-1 -*-\n# poids: 2 µs, café\nVALUE = 1\n"
    source.write_bytes(text.encode("latin-1"))
    spec = KernelSpec(name="k", path=source, entry="k", reference="original", inputs={}, dtypes=[{}])
    optimized_text = text + f"# ({GATE_MARKER})\n# é\n"
    spec.optimized_path.write_bytes(optimized_text.encode("latin-1"))
    pipeline = Settling([spec], in_place=True)
    pipeline.validation = ValidateRun(records=[ValidationRecord("k", "optimized", "ptx", "c", PASS)], backends=["ptx"])
    paired = PairedTiming(rounds=10, a_ms=[1.0] * 10, b_ms=[1.0] * 10, ratio=1.0, ci_low=1.0, ci_high=1.0,
                          threshold=0.05, verdict=SAME_CODE)
    pipeline.bench_run = BenchRun(rows=[BenchRow(kernel="k", variant="optimized", backend="ptx", size=1024,
                                                 status=PASS, paired=paired)])
    pipeline.settle()
    assert pipeline.result.in_place == {str(source): str(source) + ".orig"}
    assert source.read_bytes() == optimized_text.encode("latin-1")  # the declaration stays true
    assert (tmp_path / "k.py.orig").read_bytes() == text.encode("latin-1")


@pytest.mark.parametrize(("header", "kernel"), [
    ("from numba import jit\n", False), ("import numba\n", False),
    ("from triton import jit\n", True), ("import triton as tr\n", True),
])
def test_only_triton_s_decorators_make_a_kernel_file(tmp_path: Path, header: str, kernel: bool) -> None:
    from tileiropt.errors import UserError
    from tileiropt.project.spec import check_capture_target

    decorator = {"import numba\n": "@numba.jit", "import triton as tr\n": "@tr.jit"}.get(header, "@jit")
    path = tmp_path / "k.py"
    path.write_text(f"{header}\n\n{decorator}\ndef f(x):\n    return x\n")
    if kernel:
        check_capture_target(path)
    else:
        with pytest.raises(UserError, match="no Triton kernel"):
            check_capture_target(path)


@pytest.mark.parametrize("command", ["validate", "bench"])
def test_validate_and_bench_judge_against_the_release_asked(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tileiropt.check.machine import Machine
    from tileiropt.cli import app

    asked = []

    def probe(version: str | None = None) -> None:
        asked.append(version)
        raise KeyboardInterrupt  # what was asked is all this test reads

    monkeypatch.setattr(Machine, "probe", staticmethod(probe))
    examples = EXAMPLES / "tileiropt.toml"
    CliRunner().invoke(app, [command, str(examples), "--tileir-version", "13.1"])
    assert asked == ["13.1"]
    bad = CliRunner().invoke(app, [command, str(examples), "--tileir-version", "99.1"])
    assert bad.exit_code == 2 and "unknown CUDA Tile IR release '99.1'" in bad.output


@pytest.mark.parametrize(("launched", "written", "set_aside"), [
    (["k"], False, False),  # the compiler refuses the owner's own body: no worse than the original, kept
    (["k_tileir"], False, True),  # a twin of the tool's ran and was refused: the tool's, set aside
    (["k"], True, True),  # apply wrote a twin (apply.json says so), though this record launched the original
    (["k_tileir_pointer"], False, False),  # the pointer kernel under a dispatch is the owner's body
])
def test_a_tileir_refusal_sets_aside_only_the_tools_own_code(launched: list[str], written: bool,
                                                             set_aside: bool) -> None:
    from tileiropt.harness.provenance import Provenance
    from tileiropt.schema import ERROR, REJECTED_BY_TILEIR, Cause
    from tileiropt.validate.records import ValidationRecord

    spec = KernelSpec(name="k", path=Path("/tmp/k.py"), entry="k", reference="original", inputs={}, dtypes=[{}])
    record = ValidationRecord("k", "optimized", "tileir", "c", ERROR, f"{REJECTED_BY_TILEIR}: tl.math.erf",
                              provenance=Provenance(kernels={name: {} for name in launched}), cause=Cause.COMPILER)
    twins = {(str(spec.optimized_path.resolve()), "k")} if written else set()
    assert (spec.optimized_path in rejections([spec], [record], [], twins)) is set_aside
