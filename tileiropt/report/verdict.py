"""One verdict per kernel: the single decision every line of the report, the summary table and `--json` read.

A kernel lands in one bucket, first match wins:

    attention  it stopped; its optimized file was set aside; the original fails its own check; the optimized
               file is slower on PTX beyond the threshold; the TileIR code gives wrong results or the TileIR
               compiler rejects it; the lint has an error-severity finding for the release (the TileIR
               compiler would reject it); or the TileIR backend fell back to PTX for it
    ready      validated on the TileIR backend itself
    emulated   validated under the tests' emulated nvtriton (its own gate on, standard Triton underneath): the
               TileIR path runs, the TileIR compiler never did
    untuned    the TileIR code passed (forced on, or emulated) but apply changed nothing for this kernel: compatible
               with TileIR, not tuned (the reason apply gives); never said in the words of a tuned kernel
    proven     the TileIR code was forced on under PTX or the interpreter and passed: ready to try on TileIR
    unproven   nothing above: the TileIR code never ran (the reason is the kernel's own)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tileiropt.bench.records import SLOWER
from tileiropt.classify.rules.base import KernelFinding
from tileiropt.errors import ExitCode, cause_exit_code
from tileiropt.schema import ERROR, FAIL, PASS, Cause

if TYPE_CHECKING:
    from tileiropt.report.model import KernelReport, Verdict

ATTENTION, READY, EMULATED, PROVEN, UNTUNED, UNPROVEN = \
    "attention", "ready", "emulated", "proven", "untuned", "unproven"
BUCKETS = (ATTENTION, READY, EMULATED, PROVEN, UNTUNED, UNPROVEN)
BUCKET_LABELS = {ATTENTION: "needs attention", READY: "validated on TileIR", EMULATED: "validated on TileIR (emulated)",
                 PROVEN: "ready to try on TileIR", UNTUNED: "compatible with TileIR, not tuned", UNPROVEN: "not proven"}

# What a failed check of the original says first, by whose failure it is
ORIGINAL_FAILS = {
    Cause.KERNEL: "the original fails its own check",
    Cause.REFERENCE: "the project's reference raised, not the kernel (fix: the kernel's `reference` key)",
    Cause.COMPILER: "the compiler rejects the original",
    Cause.ENVIRONMENT: "this machine cannot run the original",
    Cause.TOOL: "tileiropt could not replay the original: an error of tileiropt, not of the kernel",
    Cause.NONDETERMINISM: "the original disagrees with itself on the same inputs",
    Cause.TIMEOUT: "the original's check did not finish in the time allowed",
    Cause.OUT_OF_MEMORY: "the original's check ran out of memory",
    Cause.UNKNOWN: "the original's check failed, and whose failure it is could not be told",
}
# ... and a failed check of the TileIR code
TILEIR_FAILS = {
    Cause.KERNEL: "the TileIR code gives wrong results",
    Cause.REFERENCE: "the project's reference raised, not the kernel (fix: the kernel's `reference` key)",
    Cause.COMPILER: "the TileIR compiler rejects it",
    Cause.ENVIRONMENT: "this machine cannot run its TileIR code",
    Cause.TOOL: "tileiropt could not replay it: an error of tileiropt, not of the kernel",
    Cause.NONDETERMINISM: "the original disagrees with itself on the same inputs, beyond what the TileIR code is "
                          "compared within",
    Cause.TIMEOUT: "its TileIR code did not finish in the time allowed",
    Cause.OUT_OF_MEMORY: "its TileIR code ran out of memory",
    Cause.UNKNOWN: "its TileIR code failed, and whose failure it is could not be told",
}


@dataclass
class KernelVerdict:
    bucket: str  # one of BUCKETS
    text: str  # the one line that says it, without the kernel's name
    proven_on: str = ""  # PROVEN: the backend the TileIR code passed on
    max_difference: float | None = None  # PROVEN: the largest difference from the original's output
    agrees_only: bool = False  # PROVEN on the interpreter where its bfloat16 products are wrong: the files agree
    cause: Cause | None = None  # ATTENTION from a failed check: whose failure it is; else a caveat, or None
    evidence: list[str] = field(default_factory=list)  # what that cause was told from (the failing call's frames)
    caveats: list[str] = field(default_factory=list)  # what a verdict that is no failure must still say

    @property
    def exit_code(self) -> ExitCode:
        """The exit code this verdict alone gives a run (`errors.cause_exit_code`; README: exit codes)."""
        if self.bucket != ATTENTION:
            return ExitCode.OK
        return cause_exit_code(self.cause)


def error_findings(findings: list[KernelFinding]) -> list[KernelFinding]:
    """The lint findings of error severity: what the release's compiler rejects."""
    return [f for f in findings if f.severity == "error"]


def _short(text: object, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


SLOWER_KEPT = ("; its optimized file timed slower than the original on PTX, with no evidence that it ran other code "
               "(the same code at the same config, or which code ran is not known): kept, not set aside; see its "
               "benchmark")
NONDETERMINISM_CAVEAT = ("; the original disagrees with itself on the same inputs (nondeterminism): its code was "
                         "compared within twice the original's own spread")


def kernel_verdict(k: KernelReport, rejected: dict[str, dict[str, Any]] | None = None,
                   interrupted: str | None = None) -> KernelVerdict:
    """The verdict of one kernel (a `report.build.KernelReport`); `rejected`: run.json's set-aside files, keyed by
    resolved path; `interrupted`: the phase the run was interrupted in, if it was. A verdict that is no failure says
    the caveat its passes carry (NONDETERMINISM: passed within the original's own spread)."""
    verdict = _verdict_of(k, rejected, interrupted)
    if verdict.bucket != ATTENTION and any((r.get("paired") or {}).get("verdict") == SLOWER
                                           for r in k.benchmark.ptx_ratios):
        verdict.text += SLOWER_KEPT  # set aside where it ran other code (`run.decisions`); here it did not
        verdict.caveats.append(SLOWER_KEPT.removeprefix("; "))
    if verdict.bucket == ATTENTION or verdict.cause is not None:
        return verdict
    sections = [getattr(k, name, None) for name in ("tileir_validation", "tileir_emulated", "tileir_code",
                                                     "optimized_ptx", "compatibility")]
    if any(v is not None and v.status == PASS and getattr(v, "cause", None) == Cause.NONDETERMINISM for v in sections):
        verdict.text += NONDETERMINISM_CAVEAT
        verdict.caveats.append(NONDETERMINISM_CAVEAT.removeprefix("; "))
        verdict.cause = Cause.NONDETERMINISM
    return verdict


def _verdict_of(k: KernelReport, rejected: dict[str, dict[str, Any]] | None, interrupted: str | None
                ) -> KernelVerdict:
    set_aside = (rejected or {}).get(str(Path(k.optimized_path).resolve())) if k.optimized_path else None
    code = k.tileir_code
    if k.stopped:
        return _stopped(k.stopped)
    if set_aside:
        return KernelVerdict(ATTENTION, f"its optimized file was set aside: {_short(set_aside.get('reason'))}")
    if k.compatibility.status in (FAIL, ERROR):
        return _failed(k.compatibility, ORIGINAL_FAILS, where=False)
    emulated = k.tileir_emulated
    wrong = next((v for v in (k.tileir_validation, emulated, code) if v is not None and v.status in (FAIL, ERROR)),
                 None)
    if wrong is not None:
        return _failed(wrong, TILEIR_FAILS, where=True)
    fell_back = next((v for v in (k.tileir_validation, emulated) if v is not None and v.status == PASS and v.fallback),
                     None)
    if fell_back is not None:  # it passed, but PTX compiled it: it never ran on TileIR, and nothing said so
        on = fell_back.backend_description or fell_back.backend
        return KernelVerdict(ATTENTION, f"the TileIR backend fell back to PTX for it ({on}; compiled by "
                                        f"{fell_back.compiled_by}): it never ran on TileIR; run without "
                                        "TRITON_TILEIR_RUNTIME_FALLBACK=1 to see why TileIR refuses it")
    errors = error_findings(k.classification.findings if k.classification.ran else [])
    if errors:
        more = f" (and {len(errors) - 1} more error finding(s))" if len(errors) > 1 else ""
        return KernelVerdict(ATTENTION, f"the TileIR compiler would reject it: {_short(errors[0].text(), 400)}"
                                        f"{more}")
    if k.tileir_validation.status == PASS:
        speeds = k.benchmark.tileir_speedups
        speed = f"; {min(speeds):.2f}x-{max(speeds):.2f}x the PTX original" if speeds else ""
        return KernelVerdict(READY, f"validated on the TileIR backend{speed}")
    untuned = not_tuned(k) or "; ".join(getattr(k, "hint_unreached", None) or []) or None
    passed = next((v for v in (emulated, code) if v is not None and v.status == PASS), None)
    if untuned is not None and passed is not None:
        on = passed.backend_description or passed.backend
        return KernelVerdict(UNTUNED, f"compatible with TileIR, not tuned: {_short(untuned, 300)} (its code passed "
                                      f"with the {on})", proven_on=on)
    if emulated is not None and emulated.status == PASS:
        on = emulated.backend_description or emulated.backend
        return KernelVerdict(EMULATED, f"the optimized file passed under the {on} (max difference "
                                       f"{_difference(emulated)}); the TileIR compiler never ran",
                             proven_on=emulated.backend_description or emulated.backend)
    if code is not None and code.status == PASS:
        on = code.backend_description or code.backend
        if getattr(code, "agrees_only", False):  # what the interpreter computes there is not the truth
            return KernelVerdict(PROVEN, f"TileIR code agrees with the original with the {on} (max difference "
                                         f"{_difference(code)}), whose bfloat16 products are wrong: a GPU proves it "
                                         "right", proven_on=on, max_difference=code.max_difference, agrees_only=True)
        return KernelVerdict(PROVEN, f"TileIR code proven correct with the {on} (max difference {_difference(code)})",
                             proven_on=on, max_difference=code.max_difference)
    if interrupted:
        return KernelVerdict(UNPROVEN, f"the run was interrupted during {interrupted} before its TileIR code passed "
                                       "(run the same command again to go on)")
    reason = (code.reason if code is not None else "") or k.tileir_validation.reason or "not run"
    return KernelVerdict(UNPROVEN, f"the TileIR code never ran: {_short(reason)}")


def _stopped(stopped: dict[str, str]) -> KernelVerdict:
    """A kernel a phase stopped: where a failed record stopped it, in the words of its cause (the original's check at
    compatibility, the TileIR code's at validate)."""
    phase, reason = stopped.get("phase"), _short(stopped.get("reason"))
    cause = Cause(stopped["cause"]) if stopped.get("cause") in set(Cause) else None
    if cause is None:
        return KernelVerdict(ATTENTION, f"stopped at {phase}: {reason}")
    words = ORIGINAL_FAILS if phase == "compatibility" else TILEIR_FAILS
    return KernelVerdict(ATTENTION, f"{words[cause]} (stopped at {phase}): {reason}", cause=cause)


def _failed(failed: Verdict, words: dict[Cause, str], *, where: bool) -> KernelVerdict:
    """The verdict of a failed check, in the words of its cause (an errored record whose kernel raised is said so,
    never as wrong results)."""
    cause = failed.cause or Cause.UNKNOWN
    what = words[cause]
    if cause == Cause.KERNEL and failed.failed_status == ERROR:
        what = "the original raises in its own code" if words is ORIGINAL_FAILS else "the TileIR code raises"
    on = f" ({failed.backend_description or failed.backend})" if where else ""
    return KernelVerdict(ATTENTION, f"{what}{on}: {_short(_first_failure(failed))}", cause=cause,
                         evidence=list(failed.evidence))


def not_tuned(k: KernelReport) -> str | None:
    """Why apply made no TileIR change for the kernel (what it left alone, or that nothing was to change), or None
    when it made one (or did not run)."""
    section = getattr(k, "transformations", None)
    if section is None or not section.ran or section.count:
        return None
    alone = getattr(section, "left_alone", [])
    return "; ".join(dict.fromkeys(alone)) if alone else "apply found nothing to change for TileIR"


def _difference(verdict: Verdict) -> str:
    return "n/a" if verdict.max_difference is None else f"{verdict.max_difference:.1e}"


def _first_failure(verdict: Verdict) -> str:
    return verdict.failures[0] if verdict.failures else (verdict.reason or verdict.status)
