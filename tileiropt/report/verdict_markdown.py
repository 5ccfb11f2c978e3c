"""How a verdict of validation records reads in the report: its line, where it came from, what failed and whose
failure it is, with the failing call's last frames."""

from __future__ import annotations

from tileiropt.report.markdown_blocks import bullets
from tileiropt.report.model import Verdict
from tileiropt.report.sections import format_difference
from tileiropt.schema import FAIL, PASS, Cause

VERDICT_TEXT: dict[str, str] = {PASS: "PASSED", FAIL: "FAILED"}  # how a verdict that ran reads in the report


def verdict_word(v: Verdict) -> str:
    """PASSED, FAILED (the kernel's own failure), or FAILED with whose failure it is where it is not the kernel's."""
    if v.status == FAIL and v.cause not in (None, Cause.KERNEL):
        return f"FAILED, not the kernel's: {SHORT_CAUSES[v.cause]}"
    return VERDICT_TEXT[v.status]


def verdict_line(v: Verdict) -> str:
    """"PASSED — Max difference: 3.1e-03" or "not run: <reason>"."""
    if v.status not in VERDICT_TEXT:
        return v.reason or "not run"
    bound = f" (tolerance {v.tolerance})" if v.tolerance else ""
    return f"{verdict_word(v)} — Max difference: {format_difference(v.max_difference)}{bound}"


def verdict_details(v: Verdict) -> list[str]:
    """Where the verdict came from: the backend, what really compiled the kernels, how many configs."""
    if v.status not in VERDICT_TEXT:
        return []
    where = [f"backend: {v.backend_description}", f"compiled by: {v.compiled_by or 'unknown'}"]
    where.append(f"{v.configs} record{'s' if v.configs != 1 else ''} (autotune configs x dtypes)")
    if v.not_run > v.repeats:
        where.append(f"{v.not_run - v.repeats} not run")
    if v.repeats:
        where.append(f"{v.repeats} config(s) repeating another's compiled or computed config, run once (the "
                     "interpreter computes the same whatever the hints; PTX compiles a TileIR config's hints alike)")
    if v.dtypes:
        where.append("dtypes: " + "; ".join(v.dtypes))
    lines = ["; ".join(where)]
    if v.fallback:
        lines.append("**fallback**: some kernels were compiled by another backend than the one asked for")
    lines += [f"failure: {f}" for f in v.failures]
    if v.failures and v.cause is not None:
        lines.append(f"whose failure: {CAUSE_LABELS.get(v.cause, v.cause)}")
    if v.evidence:  # the failing call's last frames (innermost first), or a dead worker's last lines
        lines.append("evidence: " + " <- ".join(f"`{line}`" for line in reversed(v.evidence[-4:])))
    lines += v.notes
    return lines


CAUSE_LABELS = {
    Cause.KERNEL: "the kernel's own (its code raised, or its output is wrong)",
    Cause.REFERENCE: "the project's reference",
    Cause.COMPILER: "a compiler rejected it",
    Cause.ENVIRONMENT: "this machine (a module, driver, device or limit)",
    Cause.TOOL: "tileiropt's own, not the kernel's",
    Cause.NONDETERMINISM: "the original disagrees with itself on the same inputs",
    Cause.TIMEOUT: "it ran past its time limit",
    Cause.OUT_OF_MEMORY: "out of memory",
    Cause.UNKNOWN: "could not be told (the evidence follows)",
}
# ... in a table cell
SHORT_CAUSES = {
    Cause.KERNEL: "the kernel", Cause.REFERENCE: "the reference", Cause.COMPILER: "a compiler",
    Cause.ENVIRONMENT: "this machine", Cause.TOOL: "tileiropt", Cause.NONDETERMINISM: "nondeterminism",
    Cause.TIMEOUT: "a timeout", Cause.OUT_OF_MEMORY: "out of memory", Cause.UNKNOWN: "unknown",
}


def compatibility_md(v: Verdict) -> str:
    details = verdict_details(v)
    return verdict_line(v) + ("\n\n" + bullets(details) if details else "")  # a blank line: a list in every renderer
