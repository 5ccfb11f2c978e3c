"""A kernel's verdict: every state -> bucket, its line, the report's first lines;
the verdict's words.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tileiropt.bench.records import SLOWER
from tileiropt.classify.rules.base import KernelFinding
from tileiropt.records.run import run_from_dict
from tileiropt.report.markdown import next_steps_md, summary_md
from tileiropt.report.model import Benchmark, Classification, KernelReport, Report, Section, Verdict
from tileiropt.report.verdict import ATTENTION, EMULATED, PROVEN, READY, UNPROVEN, kernel_verdict
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, Cause

# --------------------------------------------------------------------------- a kernel's verdict


def _verdict(status: str, backend: str = "", failures: list[str] | None = None, reason: str = "",
             cause: Cause | None = None) -> Verdict:
    """A section's verdict; a failed one (FAIL, or ERROR: the record raised) is the kernel's unless `cause` says."""
    failed = status in (FAIL, ERROR)
    return Verdict(FAIL if failed else status, backend=backend, backend_description=backend, failures=failures or [],
                   reason=reason or ("" if status in (PASS, FAIL, ERROR) else "not run: nvtriton is not installed"),
                   max_difference=0.001 if status in (PASS, FAIL) else None,
                   cause=(cause or Cause.KERNEL) if failed else cause, failed_status=status if failed else "")


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
                        "the original raises in its own code: BLOCK=64: error: boom"),
    # slower with evidence that it ran other code: set aside (run.json), the verdict below; without: kept, said
    "slower on PTX, no evidence against the file": ({"benchmark": Benchmark(True, ptx_ratios=[SLOWER_RATIO])},
                                                    PROVEN, "timed slower than the original on PTX, with no evidence"),
    "TileIR backend wrong": ({"tileir_validation": _verdict(FAIL, "tileir", ["c: fail: 1 differs"])}, ATTENTION,
                             "the TileIR code gives wrong results (tileir): c: fail: 1 differs"),
    "TileIR code wrong": ({"tileir_code": _verdict(FAIL, "forced", ["c: fail: 2 differ"])}, ATTENTION,
                          "the TileIR code gives wrong results (forced): c: fail: 2 differ"),
    "TileIR code errors": ({"tileir_code": _verdict(ERROR, "forced", ["c: error: crash"])}, ATTENTION,
                           "the TileIR code raises (forced): c: error: crash"),
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
        "c: error: rejected by the TileIR compiler: RuntimeError: `tileiras` failed"], cause=Cause.COMPILER)},
        ATTENTION,
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
    assert "| b | needs attention (" in summary  # with whose failure and its exit code
    assert "| c | not proven |" in summary


def test_summary_says_a_kernel_once_when_its_launches_agree() -> None:
    same = [_kernel(f"k#{n}", output=Section(True, lines=["File: k_tileir.py"])) for n in (1, 2, 3)]
    differs = [_kernel(f"m#{n}", output=Section(True, lines=["File: m_tileir.py"])) for n in (1, 2)]
    differs[1].classification = Classification(True, findings=[ERROR_FINDING])
    summary = summary_md(_report(same[0], differs[0], same[1], differs[1], same[2]))
    rows = [line for line in summary.splitlines() if line.startswith("| k") or line.startswith("| m")]
    assert [row.split(" | ")[0] for row in rows] == ["| k (3 launches)", "| m#1", "| m#2"]  # in first-seen order


def test_a_column_saying_the_same_not_run_reason_in_every_row_is_said_once_below() -> None:
    timed = Benchmark(True, reason="not run: nvtriton is not installed", ptx_ratios=[{"ratio": 0.98}])
    summary = summary_md(_report(_kernel("a", benchmark=timed), _kernel("b", benchmark=timed)))
    assert "TileIR speedup" not in summary.splitlines()[0] and "PTX time" in summary.splitlines()[0]
    assert "The same for every row, so left out of the table: TileIR speedup: not run: nvtriton is not " \
           "installed." in summary
    one = summary_md(_report(_kernel("a", benchmark=timed)))  # a single row keeps its columns
    assert "TileIR speedup" in one.splitlines()[0]


def test_next_step_reruns_the_same_capture_from_its_folder() -> None:
    run = run_from_dict({"command": ["tileiropt", "run", "ops.py", "--json", "--", "pytest", "tests/test ops.py"],
                         "cwd": "/w/my lib"})
    text = next_steps_md(_report(_kernel(), run=run))
    assert "`cd '/w/my lib' && ENABLE_TILE=1 tileiropt run ops.py -- pytest 'tests/test ops.py'`" in text


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
    wrong = _kernel(tileir_code=Verdict(FAIL, backend="tileir-code-on-ptx", failures=[], cause=Cause.KERNEL,
                                        failed_status=FAIL))
    assert kernel_verdict(wrong).text == "the TileIR code gives wrong results (tileir-code-on-ptx): fail"
    assert kernel_verdict(_kernel(benchmark=Benchmark(True, ptx_ratios=[SLOWER_RATIO]))).text.endswith(
        "; its optimized file timed slower than the original on PTX, with no evidence that it ran other code (the "
        "same code at the same config, or which code ran is not known): kept, not set aside; see its benchmark")
    stopped = _kernel(stopped={"phase": "apply", "reason": "r" * 300})
    assert kernel_verdict(stopped).text == "stopped at apply: " + "r" * 159 + "…"
    exact = _kernel(stopped={"phase": "apply", "reason": "r" * 160})  # at the limit: whole
    assert kernel_verdict(exact).text == "stopped at apply: " + "r" * 160
    kept = _kernel(optimized_path="")
    assert kernel_verdict(kept, {str(Path("").resolve()): {"reason": "x"}}).bucket == PROVEN




def test_an_interruption_before_the_ptx_rows_is_why_nothing_was_timed() -> None:
    from tileiropt.bench.records import BenchKernel, BenchRow, BenchRun
    from tileiropt.contract.outcome import PhaseResult
    from tileiropt.records.run import RunResult
    from tileiropt.report.artifacts import Artifacts
    from tileiropt.report.benchmark import benchmark_for

    kernel = BenchKernel("k", "/tmp/k.py", "/tmp/k_tileir.py", "k")
    tileir_only = BenchRun(rows=[BenchRow("k", "optimized", "tileir", 1024, NOT_RUN, "not run: nvtriton is not "
                                          "installed")])
    interrupted = RunResult(phases=[PhaseResult("bench", NOT_RUN, detail="interrupted", interrupted=True)],
                            kernels=[kernel], stopped={}, artifacts="/tmp", exit_code=130)
    cut = benchmark_for(kernel, Artifacts(Path("/tmp"), bench=tileir_only, run=interrupted), None)
    assert cut.reason == "not run: the run was interrupted during bench"
    whole = benchmark_for(kernel, Artifacts(Path("/tmp"), bench=tileir_only), None)  # no interruption: the machine's
    assert whole.reason == "not run: nvtriton is not installed"


def test_a_summary_of_no_kernel_is_a_sentence_not_an_empty_table() -> None:
    assert summary_md(_report()) == "No kernel in the records: nothing was validated or timed (why: at the top)."
