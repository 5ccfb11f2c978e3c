"""Decision tables: each decision users depend on, over every combination of its inputs (or at and around each
threshold). GPU-only outcomes are built from records and stubs, so the CPU suite holds them.

    the TileIR gate          ENABLE_TILE x TileIR backend importable x the harness's surface forced on
    the paired verdict       the 95% interval at and around 1 +- threshold, short kernels
    a record's status        compared ok / not, interpreter / GPU, bf16 / other dtypes
    a kernel's verdict       every state -> bucket, its line, the report's first lines
    a run's exit code        interrupted, failed (each cause), not run here
    overrides                a project's atol/rtol (0 included), a user's release file over the bundled one
"""

from __future__ import annotations

import importlib.machinery
import itertools
import math
import os
import sys
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tileiropt.apply.gate import gate_source
from tileiropt.bench.records import FASTER, SAME, SLOWER, UNCLEAR, paired_ratio
from tileiropt.capture.launch import CapturedLaunch
from tileiropt.classify.rules.base import KernelFinding
from tileiropt.errors import ExitCode, run_exit_code
from tileiropt.project.spec import KernelSpec
from tileiropt.report.markdown import next_steps_md, summary_md
from tileiropt.report.model import Benchmark, Classification, KernelReport, Report, Section, Verdict
from tileiropt.report.verdict import ATTENTION, EMULATED, PROVEN, READY, UNPROVEN, kernel_verdict
from tileiropt.run.decisions import not_proven_not_slower
from tileiropt.run.pipeline import Pipeline
from tileiropt.run.record import RunResult, run_from_dict
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS
from tileiropt.validate.tolerances import DEFAULT_TOLERANCES, tolerances
from tileiropt.validate.worker import compared_status

# --------------------------------------------------------------------------- the gate


def _tileir_backend(monkeypatch: pytest.MonkeyPatch, present: bool) -> None:
    """nvtriton's TileIR backend module importable (simulated) or not."""
    if present:
        fake = types.ModuleType("triton.backends.tileir")
        fake.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir", None)
        monkeypatch.setitem(sys.modules, "triton.backends.tileir", fake)
    else:
        monkeypatch.delitem(sys.modules, "triton.backends.tileir", raising=False)


def _gate(monkeypatch: pytest.MonkeyPatch, enable_tile: str | None, backend: bool) -> dict:
    if enable_tile is None:
        monkeypatch.delenv("ENABLE_TILE", raising=False)
    else:
        monkeypatch.setenv("ENABLE_TILE", enable_tile)
    _tileir_backend(monkeypatch, backend)
    namespace: dict[str, Any] = {}
    exec(compile(gate_source(), "<gate>", "exec"), namespace)  # the gate exactly as apply writes it
    return namespace


@pytest.mark.parametrize(("enable_tile", "backend", "forced"),
                         list(itertools.product([None, "0", "1", "true", " 1"], [False, True], [False, True])))
def test_gate_over_every_combination(monkeypatch: pytest.MonkeyPatch, enable_tile: str | None, backend: bool,
                                     forced: bool) -> None:
    import triton

    from tileiropt.harness.tileir_surface import force_tileir_code, is_stand_in, tileir_code_on

    gate = _gate(monkeypatch, enable_tile, backend)
    tileir_backend = enable_tile == "1" and backend  # both halves: the variable and the backend installed
    assert gate["is_tileir"]() is tileir_backend
    assert tileir_code_on() is tileir_backend  # the harness reads the file's gate the same way
    assert is_stand_in() is False
    if forced:  # the harness in a worker of a forced backend: the TileIR code on, on the backend Triton chose
        monkeypatch.setattr(triton.Config, "__init__", triton.Config.__init__)
        monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
        force_tileir_code()
        assert gate["is_tileir"]() is True and tileir_code_on() is True
        assert is_stand_in() is (not backend)  # nvtriton's module, where it is installed, is never replaced
        config = triton.Config({"BLOCK": 64}, occupancy=4, num_ctas=2, num_stages=3)
        assert config.num_ctas == 1 and config.tileir_dropped == {"occupancy": 4, "num_ctas": 2}
        if not backend:
            sys.modules.pop("triton.backends.tileir", None)


@pytest.mark.parametrize(("hints", "occupancy", "tileir"), [
    ({"occupancy": 2}, None, True),  # given a hint under the harness's surface
    ({}, None, False), (None, None, False),  # the user's own configs
    (None, 1, True), (None, 0, True),  # nvtriton's Config holding an occupancy (even 0 is set)
])
def test_a_config_is_a_tileir_config_when_it_carries_a_hint(hints: dict | None, occupancy: int | None,
                                                             tileir: bool) -> None:
    from tileiropt.harness.tileir_surface import tileir_configs

    config = types.SimpleNamespace(tileir_hints=hints, occupancy=occupancy)
    assert tileir_configs([config]) == ([config] if tileir else [])


def test_the_harness_reads_a_broken_or_marked_backend_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.harness import tileir_surface

    def broken(name: str) -> None:
        raise ValueError("triton.backends.tileir.__spec__ is None")

    monkeypatch.setenv("ENABLE_TILE", "1")
    monkeypatch.delitem(sys.modules, "triton.backends.tileir", raising=False)
    monkeypatch.setattr(tileir_surface.importlib.util, "find_spec", broken)
    assert tileir_surface.tileir_code_on() is False and tileir_surface.is_stand_in() is False
    marked = types.ModuleType("triton.backends.tileir")
    setattr(marked, tileir_surface.STAND_IN_MARK, "stand-in")
    monkeypatch.setitem(sys.modules, "triton.backends.tileir", marked)
    assert tileir_surface.is_stand_in() is True
    monkeypatch.setitem(sys.modules, "triton.backends.tileir", types.ModuleType("triton.backends.tileir"))
    assert tileir_surface.is_stand_in() is False  # nvtriton's own


# --------------------------------------------------------------------------- the paired verdict


def _paired(ratios: list[float], per_call_ms: float = 1.0, threshold: float = 0.05) -> tuple:
    """paired_ratio over rounds whose optimized/original ratios are `ratios`."""
    original = [per_call_ms] * len(ratios)
    return paired_ratio(original, [per_call_ms * r for r in ratios], threshold)


def _spread(low: float, high: float, n: int = 10) -> list[float]:
    return [low + (high - low) * i / (n - 1) for i in range(n)]


@pytest.mark.parametrize(("ratios", "verdict"), [
    (_spread(1.06, 1.10), SLOWER),  # the whole interval above 1.05
    (_spread(1.051, 1.09), SLOWER),  # the interval's lower end just above the threshold
    (_spread(0.99, 1.12), UNCLEAR),  # median 1.055 > 1.05, yet the interval reaches 1.0: not slower
    (_spread(1.02, 1.12), UNCLEAR),  # the lower end within the threshold: not slower
    (_spread(0.97, 1.03), SAME),  # within 1 +- 0.05
    (_spread(0.95, 1.05), SAME),  # touching both bounds: still within
    (_spread(0.90, 0.94), FASTER),  # the whole interval below 0.95
    (_spread(0.88, 0.97), UNCLEAR),  # the upper end within the threshold: not faster
])
def test_paired_verdict_at_and_around_the_threshold(ratios: list[float], verdict: str) -> None:
    middle, low, high, found = _paired(ratios)
    assert found == verdict, (middle, low, high)
    assert low <= middle <= high


def test_paired_interval_is_order_statistics_not_the_range() -> None:
    ratios = [1.2] + [1.0] * 18 + [0.8]  # one disturbed round each way
    _, low, high, verdict = _paired(ratios)
    assert (low, high) == (1.0, 1.0) and verdict == SAME


def test_short_kernels_are_never_judged() -> None:
    assert _paired(_spread(1.5, 1.6), per_call_ms=0.0005)[3] == UNCLEAR
    assert _paired(_spread(0.5, 0.6), per_call_ms=0.0005)[3] == UNCLEAR


# --------------------------------------------------------------------------- a record's status


@pytest.mark.parametrize(("ok", "interpreted", "dtype", "status"), [
    (True, True, "bfloat16", PASS), (True, False, "bfloat16", PASS), (True, True, "float16", PASS),
    (False, True, "bfloat16", NOT_RUN),  # the interpreter's bf16 arithmetic: a GPU decides
    (False, False, "bfloat16", FAIL),  # on a GPU a bf16 mismatch is a failure, never "not run"
    (False, True, "float16", FAIL), (False, True, "float32", FAIL), (False, False, "float16", FAIL),
])
def test_compared_status_per_backend(ok: bool, interpreted: bool, dtype: str, status: str) -> None:
    found, reason = compared_status(ok, "3 of 64 elements differ" if not ok else "", interpreted=interpreted,
                                    dtypes={"x": dtype, "y": "float32"})
    assert found == status
    if status == NOT_RUN:
        assert reason.startswith("not run on the interpreter: bf16") and reason.endswith("3 of 64 elements differ")


# --------------------------------------------------------------------------- a kernel's verdict


def _verdict(status: str, backend: str = "", failures: list[str] | None = None, reason: str = "") -> Verdict:
    return Verdict(status, backend=backend, backend_description=backend, failures=failures or [],
                   reason=reason or ("" if status in (PASS, FAIL, ERROR) else "not run: nvtriton is not installed"),
                   max_difference=0.001 if status in (PASS, FAIL) else None)


def _kernel(name: str = "k", **changes: Any) -> KernelReport:
    """A kernel whose TileIR code passed on the interpreter and nothing else went wrong (PROVEN), changed."""
    report = KernelReport(
        name=name, path=f"/tmp/{name}.py", optimized_path=f"/tmp/{name}_tileir.py", stopped=None,
        classification=Classification(True, kernel_type="element-wise", findings=[]),
        compatibility=_verdict(PASS, "interpret"), transformations=Section(True, lines=["a change"], count=1),
        tileir_validation=_verdict(NOT_RUN), tileir_code=_verdict(PASS, "TileIR code forced on, Triton interpreter"),
        optimized_ptx=_verdict(PASS, "interpret"), benchmark=Benchmark(False, "not run: no GPU"),
        output=Section(True, lines=[f"File: {name}_tileir.py"]))
    for key, value in changes.items():
        setattr(report, key, value)
    return report


ERROR_FINDING = KernelFinding(kernel="k", code="TIR006", severity="error", line=12, message="erf is not supported",
                              hint="use the tanh form")
WARNING_FINDING = replace(ERROR_FINDING, code="TIR101", severity="warning", message="cross-block atomics")
SLOWER_RATIO = {"ratio": 1.2, "within_noise": False, "paired": {"verdict": SLOWER, "ci_low": 1.1, "ci_high": 1.3,
                                                                 "threshold": 0.05}}

# state -> (bucket, words its line must hold)
STATES: dict[str, tuple[dict[str, Any], str, str]] = {
    "proven on the interpreter": ({}, PROVEN, "TileIR code proven correct with the TileIR code forced on"),
    "validated on TileIR": ({"tileir_validation": _verdict(PASS, "tileir")}, READY, "validated on the TileIR backend"),
    "stopped": ({"stopped": {"phase": "compatibility", "reason": "the original fails"}}, ATTENTION,
                "stopped at compatibility: the original fails"),
    "original fails": ({"compatibility": _verdict(FAIL, "ptx", ["BLOCK=64: fail: 3 differ"])}, ATTENTION,
                       "the original fails its own check: BLOCK=64: fail: 3 differ"),
    "original errors": ({"compatibility": _verdict(ERROR, "ptx", ["BLOCK=64: error: boom"])}, ATTENTION,
                        "the original fails its own check"),
    "slower on PTX": ({"benchmark": Benchmark(True, ptx_ratios=[SLOWER_RATIO])}, ATTENTION,
                      "slower than the original on PTX"),
    "TileIR backend wrong": ({"tileir_validation": _verdict(FAIL, "tileir", ["c: fail: 1 differs"])}, ATTENTION,
                             "the TileIR code gives wrong results (tileir): c: fail: 1 differs"),
    "TileIR code wrong": ({"tileir_code": _verdict(FAIL, "forced", ["c: fail: 2 differ"])}, ATTENTION,
                          "the TileIR code gives wrong results (forced): c: fail: 2 differ"),
    "TileIR code errors": ({"tileir_code": _verdict(ERROR, "forced", ["c: error: crash"])}, ATTENTION,
                           "the TileIR code gives wrong results"),
    "error finding": ({"classification": Classification(True, findings=[ERROR_FINDING])}, ATTENTION,
                      "the TileIR compiler would reject it: TIR006 at `k` L12: erf is not supported (fix: use the "
                      "tanh form)"),
    "error finding, TileIR passed": ({"classification": Classification(True, findings=[ERROR_FINDING]),
                                      "tileir_validation": _verdict(PASS, "tileir")}, ATTENTION, "TIR006"),
    "warning finding only": ({"classification": Classification(True, findings=[WARNING_FINDING])}, PROVEN,
                             "TileIR code proven correct"),
    "validated under the emulator": ({"tileir_emulated": _verdict(PASS, "emulated TileIR")}, EMULATED,
                                     "the optimized file passed under the emulated TileIR"),
    "TileIR backend beats the emulator": ({"tileir_validation": _verdict(PASS, "tileir"),
                                           "tileir_emulated": _verdict(PASS, "emulated TileIR")}, READY,
                                          "validated on the TileIR backend"),
    "emulator wrong": ({"tileir_emulated": _verdict(FAIL, "emulated TileIR", ["c: fail: 3 differ"])}, ATTENTION,
                       "the TileIR code gives wrong results (emulated TileIR): c: fail: 3 differ"),
    "emulated compiler refuses": ({"tileir_emulated": _verdict(ERROR, "emulated TileIR", [
        "c: error: rejected by the TileIR compiler: RuntimeError: `tileiras` failed"])}, ATTENTION,
        "the TileIR compiler rejects it (emulated TileIR)"),
    "fell back to PTX": ({"tileir_validation": Verdict(PASS, backend="tileir", compiled_by="cuda", fallback=True)},
                         ATTENTION, "the TileIR backend fell back to PTX for it (tileir; compiled by cuda)"),
    "emulator fell back": ({"tileir_emulated": Verdict(PASS, backend="e", compiled_by="cuda", fallback=True)},
                           ATTENTION, "it never ran on TileIR"),
    "fell back, with an error finding": ({"tileir_validation": Verdict(PASS, backend="tileir", compiled_by="cuda",
                                                                       fallback=True),
                                          "classification": Classification(True, findings=[ERROR_FINDING])},
                                         ATTENTION, "fell back to PTX"),  # measured before predicted
    "emulator not run": ({"tileir_emulated": _verdict(NOT_RUN, reason="not run: no GPU")}, PROVEN,
                         "TileIR code proven correct"),
    "TileIR code never ran": ({"tileir_code": None}, UNPROVEN,
                              "the TileIR code never ran: not run: nvtriton is not installed"),
    "TileIR code not run": ({"tileir_code": _verdict(NOT_RUN, reason="not run: needs a GPU")}, UNPROVEN,
                            "the TileIR code never ran: not run: needs a GPU"),
}


@pytest.mark.parametrize("state", list(STATES))
def test_every_kernel_state_has_one_verdict(state: str) -> None:
    changes, bucket, words = STATES[state]
    verdict = kernel_verdict(_kernel(**changes))
    assert verdict.bucket == bucket
    assert words in verdict.text


def test_set_aside_and_interrupted_verdicts() -> None:
    kernel = _kernel()
    rejected = {str(Path(kernel.optimized_path).resolve()): {"reason": "k: validation fail on ptx"}}
    assert kernel_verdict(kernel, rejected).bucket == ATTENTION
    assert "set aside: k: validation fail on ptx" in kernel_verdict(kernel, rejected).text
    never_ran = _kernel(tileir_code=None)
    interrupted = kernel_verdict(never_ran, interrupted="validate")
    assert (interrupted.bucket, interrupted.text) == (UNPROVEN, "the run was interrupted during validate before its "
                                                      "TileIR code passed (run the same command again to go on)")
    silent = _kernel(tileir_code=None, tileir_validation=Verdict(NOT_RUN))
    assert kernel_verdict(silent).text == "the TileIR code never ran: not run"
    assert kernel_verdict(_kernel(), interrupted="bench").bucket == PROVEN  # what finished still counts


def test_precedence_first_match_wins() -> None:
    both = _kernel(stopped={"phase": "apply", "reason": "apply failed"},
                   classification=Classification(True, findings=[ERROR_FINDING]))
    assert kernel_verdict(both).text.startswith("stopped at apply")


def _report(*kernels: KernelReport, run: dict[str, Any] | None = None) -> Report:
    for k in kernels:
        k.verdict = kernel_verdict(k)
    return Report(artifacts="/tmp/p/.tileiropt", environment={}, run=run, kernels=list(kernels), problems={})


@pytest.mark.parametrize("state", list(STATES))
def test_first_lines_state_the_verdict(state: str) -> None:
    changes, bucket, words = STATES[state]
    run = run_from_dict({"command": ["tileiropt", "run", "k.py"], "cwd": "/tmp/p"})
    text = next_steps_md(_report(_kernel(**changes), run=run))
    heading = {ATTENTION: "Needs attention:", READY: "Ready:", EMULATED: "Ready:", PROVEN: "Ready:",
               UNPROVEN: "Not proven yet:"}[bucket]
    assert heading in text and words in text
    others = {"Needs attention:", "Ready:", "Not proven yet:"} - {heading}
    assert not any(other in text for other in others)  # one kernel, one bucket: said once
    # the Blackwell next step only where the TileIR code was proven or passed under the emulator (never for code
    # that did not run or failed)
    assert ("next, on a Blackwell GPU" in text) is (bucket in (PROVEN, EMULATED))
    assert ("ready to try on TileIR" in text) is (bucket == PROVEN)
    assert ("validated on TileIR (emulated)" in text) is (bucket == EMULATED)


def test_summary_verdict_column_agrees_with_first_lines() -> None:
    report = _report(_kernel("a"), _kernel("b", classification=Classification(True, findings=[ERROR_FINDING])),
                     _kernel("c", tileir_code=None))
    summary = summary_md(report)
    assert "| a | ready to try on TileIR |" in summary
    assert "| b | needs attention |" in summary
    assert "| c | not proven |" in summary


def test_next_step_reruns_the_same_capture_from_its_folder() -> None:
    run = run_from_dict({"command": ["tileiropt", "run", "ops.py", "--json", "--", "pytest", "tests/test ops.py"],
                         "cwd": "/w/my lib"})
    text = next_steps_md(_report(_kernel(), run=run))
    assert "`cd '/w/my lib' && ENABLE_TILE=1 tileiropt run ops.py -- pytest 'tests/test ops.py'`" in text


# --------------------------------------------------------------------------- a run's exit code


@pytest.mark.parametrize(("interrupted", "failed", "not_run_here", "code"), [
    (False, False, False, ExitCode.OK), (False, False, True, ExitCode.NOT_RUN),
    (False, True, False, ExitCode.FAILED), (False, True, True, ExitCode.FAILED),
    (True, False, False, ExitCode.INTERRUPTED), (True, True, True, ExitCode.INTERRUPTED),
])
def test_run_exit_code_table(interrupted: bool, failed: bool, not_run_here: bool, code: ExitCode) -> None:
    assert run_exit_code(interrupted=interrupted, failed=failed, not_run_here=not_run_here) == code


def _pipeline(**state: Any) -> Pipeline:
    pipeline = Pipeline.__new__(Pipeline)  # the decision alone, without a project or workers
    pipeline.result = RunResult(phases=[], kernels=[], stopped={}, artifacts="/tmp/a")
    pipeline.bench_failed = pipeline.capture_failed = False
    for key, value in state.items():
        setattr(pipeline, key, value)
    return pipeline


@pytest.mark.parametrize("cause", ["none", "stopped", "set aside", "bench errored", "program failed"])
def test_each_cause_of_failure_fails_the_run(cause: str) -> None:
    pipeline = _pipeline()
    if cause == "stopped":
        pipeline.result.stopped["k"] = {"phase": "validate", "reason": "wrong"}
    elif cause == "set aside":
        pipeline.result.rejected["/tmp/k_tileir.py"] = {"moved_to": "/tmp/k_tileir.rejected.py", "reason": "slower"}
    elif cause == "bench errored":
        pipeline.bench_failed = True
    elif cause == "program failed":
        pipeline.capture_failed = True
    assert pipeline.failed() is (cause != "none")


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
    pipeline = _pipeline(specs=[spec], validation=None,
                         bench_run=types.SimpleNamespace(rows=[_Row("k", _Paired(*p)) for p in pairs]))
    assert (spec.optimized_path in pipeline.rejections()) is slower


_RAN = {"k": {"config": "BLOCK=128, num_warps=4", "code": "c1"}}


@pytest.mark.parametrize(("original", "optimized", "cause"), [
    (_RAN, {"k": {"config": "BLOCK=128, num_warps=8", "code": "c2"}},
     "the configs differ (original k: BLOCK=128, num_warps=4; optimized k: BLOCK=128, num_warps=8)"),
    (_RAN, {"k": {"config": "BLOCK=128, num_warps=4", "code": "c2"}}, "same config, the compiled code differs: k"),
    (_RAN, {}, "which kernels and configs ran is not known for both rows"),
    (_RAN, _RAN, "the same kernels, configs and compiled code: the difference is outside the kernels (the entry's "
                 "own work around them) or the machine"),
    ({"k": {"config": "B=1", "code": None}}, {"k": {"config": "B=1", "code": None}},
     "same config; the compiled code is not known (no PTX to compare)"),
    (_RAN, _RAN, None),  # a captured launch: the same code at the same config is the machine's, never a set-aside
])
def test_a_set_aside_names_its_cause(original: dict, optimized: dict, cause: str | None) -> None:
    spec = KernelSpec(name="k", path=Path("/tmp/k.py"), entry="k", reference="original", inputs={}, dtypes=[{}],
                      launch=CapturedLaunch("k", "/tmp/k.py", ()) if cause is None else None)
    rows = [_Row("k", None, variant="original", launched=original),
            _Row("k", _Paired(SLOWER, 1.06, 1.2), launched=optimized)]
    pipeline = _pipeline(specs=[spec], validation=None, bench_run=types.SimpleNamespace(rows=rows))
    reasons = pipeline.rejections()
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
    pipeline = _pipeline(bench_run=types.SimpleNamespace(rows=rows))
    reason = pipeline.not_proven_not_slower("k")
    assert reason == not_proven_not_slower(rows, "k")  # the pipeline applies the pure decision over its rows
    assert not_proven_not_slower(rows, "other").startswith("no paired timing")  # another kernel's rows never count
    assert (reason == "") is proven
    if not pairs:
        assert reason == "no paired timing: not run: no GPU"


# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize(("atol", "rtol"), [(None, None), (0.0, None), (None, 0.0), (0.0, 0.0), (1e-3, 2e-3)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_project_tolerances_override_the_dtype_default(atol: float | None, rtol: float | None, dtype: str) -> None:
    spec = KernelSpec(name="k", path=Path("k.py"), entry="k", reference="original", inputs={"x": [4]},
                      dtypes=[{"x": dtype}], atol=atol, rtol=rtol)
    default_atol, default_rtol = DEFAULT_TOLERANCES[dtype]
    assert spec.tolerances({"x": dtype}) == (default_atol if atol is None else atol,
                                             default_rtol if rtol is None else rtol)


@pytest.mark.parametrize(("dtypes", "expected"), [
    ({"x": "float16", "y": "bfloat16"}, DEFAULT_TOLERANCES["bfloat16"]),  # the loosest float dtype
    ({"x": "float32", "i": "int32"}, DEFAULT_TOLERANCES["float32"]),
    ({"i": "int64"}, DEFAULT_TOLERANCES["float32"]),  # no float input: float32's
    ({"x": "float8_e5m2", "y": "float16"}, DEFAULT_TOLERANCES["float8_e5m2"]),
])
def test_default_tolerance_is_the_loosest_dtypes(dtypes: dict[str, str], expected: tuple[float, float]) -> None:
    assert tolerances(dtypes) == expected
    assert tolerances(dtypes, 0.0, 0.0) == (0.0, 0.0)


def test_project_atol_zero_survives_loading(tmp_path: Path) -> None:
    from tileiropt.project.spec import load_project

    (tmp_path / "k.py").write_text("def k(x):\n    return x\n", encoding="utf-8")
    (tmp_path / "tileiropt.toml").write_text(
        '[[kernel]]\nname = "k"\npath = "k.py"\nentry = "k"\nreference = "original"\ninputs = { x = [4] }\n'
        'dtypes = "bfloat16"\natol = 0\nrtol = 0\n', encoding="utf-8")
    spec = load_project(tmp_path / "tileiropt.toml").kernels[0]
    assert spec.tolerances({"x": "bfloat16"}) == (0.0, 0.0)


def test_a_users_release_file_wins_over_the_bundled_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.releases import RELEASES_ENV, get_release

    bundled = Path(__import__("tileiropt.releases", fromlist=["x"]).__file__).parent / "13.4.toml"
    text = bundled.read_text(encoding="utf-8")
    assert 'version = "13.4"' in text
    mine = text.replace('title = "', 'title = "my own ', 1)
    assert mine != text
    folder = tmp_path / "releases"
    folder.mkdir()
    (folder / "13.4.toml").write_text(mine, encoding="utf-8")
    assert get_release("13.4").path == str(bundled)
    monkeypatch.setenv(RELEASES_ENV, str(folder))
    chosen = get_release("13.4")
    assert chosen.path == str(folder / "13.4.toml") and chosen.title.startswith("my own ")


# --------------------------------------------------------------------------- the one-line errors


@pytest.mark.parametrize(("error", "text"), [
    (dict(message="bad"), "bad"),
    (dict(message="bad", file="k.py"), "k.py: bad"),
    (dict(message="bad", file="k.py", line=12), "k.py:12: bad"),
    (dict(message="bad", file="k.py", line=12, hint="fix it"), "k.py:12: bad (fix: fix it)"),
    (dict(message="bad", line=12, hint="fix it"), "bad (fix: fix it)"),  # a line without a file names nothing
])
def test_user_error_is_one_line_naming_file_line_and_fix(error: dict[str, Any], text: str) -> None:
    from tileiropt.errors import UserError

    assert str(UserError(**error)) == text
    assert UserError("x").code == ExitCode.BAD_INPUT


@pytest.mark.parametrize(("value", "ok"), [(1, True), (0.5, True), (7 * 24 * 3600.0, True), (0, False),
                                           (-1, False), (float("nan"), False), (float("inf"), False),
                                           (7 * 24 * 3600.0 + 1, False), (True, False), ("5", False)])
def test_durations_are_checked(value: Any, ok: bool) -> None:
    from tileiropt.errors import UserError, check_seconds

    if ok:
        assert check_seconds("--timeout", value) == float(value)
    else:
        with pytest.raises(UserError, match=r"--timeout must be a number of seconds in \(0, 604800\]"):
            check_seconds("--timeout", value)


# --------------------------------------------------------------------------- the verdict's words


def test_verdict_words() -> None:
    assert KernelFinding.from_json(None, {"code": "TIR006", "message": "erf"}).text() == "TIR006: erf"  # none made up
    two = Classification(True, findings=[ERROR_FINDING, replace(ERROR_FINDING, code="TIR007")])
    assert kernel_verdict(_kernel(classification=two)).text.endswith("(fix: use the tanh form) (and 1 more error "
                                                                     "finding(s))")
    long = Classification(True, findings=[replace(ERROR_FINDING, message="m" * 500)])
    text = kernel_verdict(_kernel(classification=long)).text
    assert text == "the TileIR compiler would reject it: " + ("TIR006 at `k` L12: " + "m" * 500)[:399] + "…"
    unclassified = Classification(False, reason="not run: no classify.json", findings=[ERROR_FINDING])
    assert kernel_verdict(_kernel(classification=unclassified)).bucket == PROVEN
    fast = _kernel(tileir_validation=_verdict(PASS, "tileir"), benchmark=Benchmark(True, tileir_speedups=[1.5, 1.25]))
    assert kernel_verdict(fast).text == "validated on the TileIR backend; 1.25x-1.50x the PTX original"
    assert kernel_verdict(_kernel(tileir_validation=_verdict(PASS, "tileir"))).text == \
        "validated on the TileIR backend"
    unknown = _kernel(tileir_code=Verdict(PASS, backend="tileir-code-on-ptx", max_difference=None))
    assert kernel_verdict(unknown).text == "TileIR code proven correct with the tileir-code-on-ptx (max difference n/a)"
    assert kernel_verdict(unknown).proven_on == "tileir-code-on-ptx"
    proven = kernel_verdict(_kernel())
    assert proven.text == "TileIR code proven correct with the TileIR code forced on, Triton interpreter (max " \
                          "difference 1.0e-03)"
    wrong = _kernel(tileir_code=Verdict(FAIL, backend="tileir-code-on-ptx", failures=[]))
    assert kernel_verdict(wrong).text == "the TileIR code gives wrong results (tileir-code-on-ptx): fail"
    assert kernel_verdict(_kernel(benchmark=Benchmark(True, ptx_ratios=[SLOWER_RATIO]))).text == \
        "its optimized file is slower than the original on PTX beyond the threshold (see its benchmark): it is not kept"
    stopped = _kernel(stopped={"phase": "apply", "reason": "r" * 300})
    assert kernel_verdict(stopped).text == "stopped at apply: " + "r" * 159 + "…"
    exact = _kernel(stopped={"phase": "apply", "reason": "r" * 160})  # at the limit: whole
    assert kernel_verdict(exact).text == "stopped at apply: " + "r" * 160
    kept = _kernel(optimized_path="")
    assert kernel_verdict(kept, {str(Path("").resolve()): {"reason": "x"}}).bucket == PROVEN


# --------------------------------------------------------------------------- which release a run follows


@pytest.mark.parametrize(("requested", "detected", "version", "origin"), [
    ("13.1", "13.4.0", "13.1", "requested"),  # asked for wins over detected
    (None, "13.4.1", "13.4", "detected 13.4.1"),
    (None, "13.3", "13.1", "detected 13.3, following 13.1"),  # the newest known not newer than it
    (None, "99.0", None, "detected 99.0, following {newest}"),  # newer than any known: the newest known
    (None, "12.0", None, "newest known; none detected"),  # older than every known
    (None, None, None, "newest known; none detected"),
])
def test_release_choice(requested: str | None, detected: str | None, version: str | None, origin: str) -> None:
    from tileiropt.releases import newest, resolve_release

    choice = resolve_release(requested, detected)
    assert choice.release.version == (version or newest().version)
    assert choice.origin == origin.format(newest=newest().version)


def test_users_releases_from_several_folders_and_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.releases import RELEASES_ENV, get_release, newest

    bundled = Path(get_release("13.4").path)
    folders = []
    for version in ("13.5", "13.6"):
        folder = tmp_path / version
        folder.mkdir()
        (folder / f"{version}.toml").write_text(bundled.read_text(encoding="utf-8").replace(
            'version = "13.4"', f'version = "{version}"', 1), encoding="utf-8")
        folders.append(str(folder))
    monkeypatch.setenv(RELEASES_ENV, os.pathsep.join(folders))
    assert get_release("13.5").version == "13.5" and newest().version == "13.6"


def test_unknown_release_and_bad_folder_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.errors import UserError
    from tileiropt.releases import RELEASES_ENV, get_release, known_releases

    with pytest.raises(UserError, match=r"unknown CUDA Tile IR release '9.9'; known: 13.1, 13.4, 13.5 \(fix: pick a "
                                        r"known release, or describe it in a TOML file in a folder named by "
                                        r"TILEIROPT_RELEASES\)"):
        get_release(" 9.9 ")
    assert get_release(" 13.4 ").version == "13.4"
    assert list(known_releases()) == sorted(known_releases(), key=lambda v: tuple(map(int, v.split("."))))
    monkeypatch.setenv(RELEASES_ENV, str(tmp_path / "missing"))
    with pytest.raises(UserError, match=r"TILEIROPT_RELEASES names .*missing, which is not a folder \(fix: point it "
                                        r"at a folder of release TOML files, or unset it\)"):
        get_release("13.4")


def test_paired_ratio_values_exactly() -> None:
    from tileiropt.bench.records import _order_statistic

    assert paired_ratio([2.0, 2.0, 2.0], [2.0, 4.0, 6.0])[0] == 2.0  # B/A per round, the middle one (odd n)
    assert paired_ratio([1.0, 1.0], [1.0, 4.0])[0] == 2.0  # even n: the geometric mean of the two middle ones
    assert paired_ratio([1.0, 0.0, 1.0, 1.0], [1.0, 5.0, 0.0, 3.0])[0] == pytest.approx(3 ** 0.5)  # zeros dropped
    with pytest.raises(ValueError, match="^no positive paired timing$"):
        paired_ratio([0.0, 1.0], [1.0, 0.0])
    ratios = [1.0 + i / 100 for i in range(20)]
    k = _order_statistic(20)
    _, low, high, _ = _paired(ratios)
    assert (low, high) == (ratios[k - 1], ratios[20 - k]) and 1 < k < 10


# The 95% distribution-free interval of the median, as printed in tables of it: (n, k) with [x_(k), x_(n+1-k)].
ORDER_STATISTIC_TABLE = {2: 1, 5: 1, 6: 1, 8: 1, 9: 2, 11: 2, 12: 3, 14: 3, 15: 4, 16: 4, 17: 5, 19: 5, 20: 6, 25: 8,
                         30: 10, 40: 14}


@pytest.mark.parametrize("n", range(2, 41))
def test_order_statistic_is_the_widest_95_percent_interval(n: int) -> None:
    from tileiropt.bench.records import _order_statistic

    def covers(k: int) -> bool:  # P(x_(k) <= median <= x_(n+1-k)) >= 95%, counted in whole binomial terms
        return 20 * sum(math.comb(n, i) for i in range(k, n - k + 1)) >= 19 * 2 ** n

    k = _order_statistic(n)
    assert k == max([j for j in range(1, n // 2 + 1) if covers(j)], default=1)
    if n in ORDER_STATISTIC_TABLE:
        assert k == ORDER_STATISTIC_TABLE[n]


def test_judged_at_the_floor_itself_and_by_the_middle_round() -> None:
    from tileiropt.bench.records import MIN_JUDGED_MS, judged

    assert judged([MIN_JUDGED_MS] * 3)
    assert not judged([MIN_JUDGED_MS * 0.999] * 3)
    assert judged([0.0, 0.0, MIN_JUDGED_MS, 1.0, 1.0])  # the middle of five is the third, at the floor
    assert not judged([0.0, 0.0, 0.0, 1.0, 1.0])
    assert not judged([])


def test_same_at_exactly_the_bounds_and_the_middle_of_five() -> None:
    ratios = [0.95, 0.96, 1.0, 1.04, 1.05]  # n = 5: the interval is the whole range, [0.95, 1.05]
    ratio, low, high, verdict = _paired(ratios)
    assert (ratio, low, high, verdict) == (1.0, 0.95, 1.05, SAME)
    assert _paired([0.95] * 5)[3] == SAME and _paired([1.05] * 5)[3] == SAME
    assert _paired([2.0, 3.0, 5.0, 7.0, 11.0])[0] == 5.0  # the third of five, not the second


def test_paired_bounds_are_strict() -> None:
    assert _paired([1.05] * 5 + [1.08] * 5)[3] != SLOWER  # the lower end at 1 + threshold: not beyond it
    assert _paired([0.90] * 5 + [0.95] * 5)[3] != FASTER  # the upper end at 1 - threshold: not beyond it


# --------------------------------------------------------------------------- the user's program: what failed, where

PY_TRACEBACK = """collected nothing
Traceback (most recent call last):
  File "/work/proj/two.py", line 27, in <module>
    main()
  File "/work/proj/two.py", line 20, in main
    scale(x)
  File "{torch}/functional.py", line 9, in scale
    raise NotImplementedError("scale is not finished")
NotImplementedError: scale is not finished
"""
PYTEST_OUTPUT = """==== ERRORS ====
tests/test_ops.py:3: in <module>
    import missing_pkg
E   ModuleNotFoundError: No module named 'missing_pkg'
1 error in 3.09s
"""


@pytest.mark.parametrize(("output", "code", "summary", "needs_gpu"), [
    ("", 1, "exit status 1 (no output)", False),
    ("first\nlast line\n\n", 2, "exit status 2 (last line)", False),
    ("", -9, "killed by SIGKILL (no output)", False),
    ("", -11, "killed by SIGSEGV (no output)", False),
    ("", None, "no exit status (no output)", False),
    (PYTEST_OUTPUT, 2, "ModuleNotFoundError: No module named 'missing_pkg' at tests/test_ops.py:3 (exit status 2; "
     "the program needs it: pip install missing_pkg)", False),
    ("ModuleNotFoundError: No module named 'pkg.sub'\n", 1,
     "ModuleNotFoundError: No module named 'pkg.sub' (exit status 1; the program needs it: pip install pkg)", False),
    ("RuntimeError: Found no NVIDIA driver on your system\n", 1,
     "RuntimeError: Found no NVIDIA driver on your system (exit status 1)", True),
    ("AssertionError: Torch not compiled with CUDA enabled\n", 1,
     "AssertionError: Torch not compiled with CUDA enabled (exit status 1)", True),
])
def test_program_failure_summary(output: str, code: int | None, summary: str, needs_gpu: bool) -> None:
    from tileiropt.capture.program_failure import read_failure

    failure = read_failure(output, code, "/work/proj")
    assert (failure.summary(), failure.needs_gpu) == (summary, needs_gpu)


def test_program_failure_names_the_innermost_frame_outside_installed_packages() -> None:
    import sysconfig

    from tileiropt.capture.program_failure import read_failure

    output = PY_TRACEBACK.format(torch=sysconfig.get_paths()["purelib"] + "/torch")
    failure = read_failure(output, 1, "/work/proj")
    assert failure.summary() == "NotImplementedError: scale is not finished at two.py:20 (exit status 1)"
    assert failure.output[-1] == "NotImplementedError: scale is not finished"
    assert read_failure(output, 1, "/elsewhere").where == "/work/proj/two.py:20"


def test_program_failure_never_names_the_tools_own_recorder_as_the_place() -> None:
    from pathlib import Path

    import tileiropt
    from tileiropt.capture.program_failure import read_failure

    hook = Path(tileiropt.__file__).parent / "capture" / "hook.py"
    output = (f'Traceback (most recent call last):\n  File "/work/proj/07.py", line 40, in <module>\n    run()\n'
              f'  File "{hook}", line 384, in recording\n    return launch()\n'
              "FileNotFoundError: [Errno 2] No such file or directory: 'libdevice.10.bc'\n")
    assert read_failure(output, 1, "/work/proj").where == "07.py:40"


@pytest.mark.parametrize(("atomics", "backend", "status"), [
    (False, "ptx", "fail"), (False, "interpret", "fail"),
    (True, "interpret", "fail"),  # the interpreter runs programs one after another: its atomics are deterministic
    (True, "ptx", "pass"),  # on a GPU a self-check summing through atomics may fail on one run only
])
def test_an_optimized_file_whose_own_self_check_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       atomics: bool, backend: str, status: str) -> None:
    from tileiropt.harness import stand_ins
    from tileiropt.harness.backends import BACKENDS
    from tileiropt.harness.provenance import Provenance
    from tileiropt.validate.cases import Case
    from tileiropt.validate.worker import CaseRunner

    original = tmp_path / "k.py"
    # a kernel's atomic call decides, not the word
    update = "tl.atomic_add(p, 1)" if atomics else "tl.store(p, 1)  # no atomic_add here"
    original.write_text(f"import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(p):\n    {update}\n")
    monkeypatch.setattr(stand_ins, "raised_only_in", lambda path, orig: [("AssertionError", "k_tileir.py:9")])
    case = Case(id=0, kernel="k", variant="optimized", path=str(tmp_path / "k_tileir.py"), entry="k",
                reference="original", shapes={}, dtypes={}, atol=0.0, rtol=0.0, original_path=str(original))
    record = CaseRunner(case, BACKENDS[backend], False, Provenance(), None).record("cfg", "pass")
    assert record["status"] == status
    assert record["reason"].startswith("the optimized file's own top-level call raised where the original's did not: "
                                       "AssertionError (at k_tileir.py:9)")
    assert ("not counted as a failure" in record["reason"]) is (status == "pass")


# --------------------------------------------------------------------------- sequential paired rounds


def _false_alarm(rounds: int) -> float:
    """The exact chance that an identical copy is ever called slower (one side) by the sequential rule: every
    pattern of rounds above/below 1 (each 1/2 under no difference, the worst case of a threshold near 0)."""
    from tileiropt.bench.records import _order_statistic, sequential_looks

    looks = {**sequential_looks(rounds), rounds: _order_statistic(rounds)}
    alarms = 0
    for pattern in range(2 ** rounds):
        below = 0
        for index in range(rounds):
            below += (pattern >> index) & 1
            k = looks.get(index + 1)
            if k is not None and below < k:  # the k-th smallest ratio is above 1: the interval lies above
                alarms += 1
                break
    return alarms / 2 ** rounds


@pytest.mark.parametrize("rounds", [6, 8, 10, 12, 14, 16])  # from 6 rounds a 95% interval exists
def test_the_sequential_rule_keeps_the_false_alarm_rate_within_5_percent(rounds: int) -> None:
    assert 2 * _false_alarm(rounds) <= 0.05  # both sides


def test_the_interim_looks_of_the_default_rounds() -> None:
    from tileiropt.bench.records import PAIRED_ROUNDS, sequential_looks

    assert sequential_looks(PAIRED_ROUNDS) == {8: 1}  # one interim look, after 4 ABBA blocks: [min, max] of 8
    assert sequential_looks(20) == {12: 1, 14: 2, 16: 2, 18: 3}
    assert sequential_looks(3) == {} and sequential_looks(6) == {}
    # one side: 8 above at the look (4/1024), or at most 1 of 10 below at the end (11/1024), less both (3/1024)
    assert _false_alarm(PAIRED_ROUNDS) == 12 / 1024


def test_a_decided_interim_look_stops_the_rounds_and_an_undecided_one_goes_on(monkeypatch) -> None:
    from tileiropt.bench import worker

    class Prepared:
        def __init__(self, times: list[float]):
            self.times, self.method, self.call, self.sets = times, "do_bench", None, []
            self.input_sets, self.fn, self.tuned = 1, None, {}
            self.provenance = types.SimpleNamespace(launched={})  # no compiled code to compare: timed

    def fake_time(prepared, warmup, rep):
        return types.SimpleNamespace(median_ms=prepared.times.pop(0))

    def run(a_times: list[float], b_times: list[float]) -> object:
        prepared = iter([Prepared(list(a_times)), Prepared(list(b_times))])
        monkeypatch.setattr(worker.Measurement, "prepare", lambda self: next(prepared))
        monkeypatch.setattr(worker, "time_prepared", fake_time)
        monkeypatch.setattr(worker, "gpu_state", lambda: {})
        item = worker.BenchItem(id=0, kernel="k", variant="original", backend="ptx", path="", entry="k",
                                reference=None, size=None, dims={}, shapes={}, dtypes={})
        return worker.run_pair(item, item, None, 10, 0.05)

    slower = run([1.0] * 10, [1.10] * 10)
    assert (slower.verdict, slower.rounds, slower.planned_rounds) == ("slower", 8, 10)
    same = run([1.0] * 10, [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 1.0, 1.0])
    assert (same.verdict, same.rounds) == ("same", 8)
    wobbly = [1.0, 1.10, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 1.0, 1.0]  # one round outside: [min, max] undecided
    late = run([1.0] * 10, wobbly)
    assert (late.verdict, late.rounds) == ("same", 10)  # the final 95% interval drops the one round


# --------------------------------------------------------------------------- found on the way


def test_validate_json_keeps_every_phase_s_jobs_workers_and_slots(tmp_path: Path) -> None:
    from tileiropt.engine.job_timing import JobTiming
    from tileiropt.validate.records import ValidateRun

    def run(jobs: int, workers: int, slots: int) -> ValidateRun:
        return ValidateRun(records=[], backends=["ptx"], workers=workers, slots=slots,
                           jobs=[JobTiming("validate", f"k{i}", "ptx", "local", 1.0) for i in range(jobs)])

    pipeline = _pipeline(validation=None, artifacts=tmp_path)
    pipeline.save_validation(run(2, 1, 2))  # compatibility
    pipeline.save_validation(run(3, 2, 4))  # validate
    merged = pipeline.validation
    assert (len(merged.jobs), merged.workers, merged.slots) == (5, 3, 4)


def test_in_place_writes_the_optimized_file_in_the_source_s_own_encoding(tmp_path: Path) -> None:
    from tileiropt.apply.gate import GATE_MARKER
    from tileiropt.bench.records import SAME_CODE
    from tileiropt.validate.records import ValidationRecord

    source = tmp_path / "k.py"
    text = "# -*- coding: latin-1 -*-\n# poids: 2 µs, café\nVALUE = 1\n"
    source.write_bytes(text.encode("latin-1"))
    spec = KernelSpec(name="k", path=source, entry="k", reference="original", inputs={}, dtypes=[{}])
    optimized_text = text + f"# ({GATE_MARKER})\n# é\n"
    spec.optimized_path.write_bytes(optimized_text.encode("latin-1"))
    validation = types.SimpleNamespace(records=[ValidationRecord("k", "optimized", "ptx", "c", PASS)])
    row = _Row("k", _Paired(SAME_CODE, 1.0, 1.0))
    pipeline = _pipeline(specs=[spec], validation=validation, in_place=True, on_event=lambda *a: None,
                         bench_run=types.SimpleNamespace(rows=[row], exit_code=lambda: 0))
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
    examples = Path(__file__).parent.parent / "examples" / "tileiropt.toml"
    CliRunner().invoke(app, [command, str(examples), "--tileir-version", "13.1"])
    assert asked == ["13.1"]
    bad = CliRunner().invoke(app, [command, str(examples), "--tileir-version", "99.1"])
    assert bad.exit_code == 2 and "unknown CUDA Tile IR release '99.1'" in bad.output
