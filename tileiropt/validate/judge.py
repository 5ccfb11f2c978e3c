"""What a validation item's outcome is, as pure decisions: the status and cause of a compared output, and of a call
that raised. The worker observes (runs, compares, catches); these functions judge what it observed. Their decision
tables: `tests/decisions/test_record_status.py` and `tests/decisions/test_cause_decisions.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tileiropt.harness import harness
from tileiropt.harness.blame import IMPORT_STAGE, REFERENCE_STAGE, Blame, blame_exception
from tileiropt.harness.exception_sites import exception_location
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, Cause, Repeat, Status


@dataclass(frozen=True)
class Judged:
    """An item's status, whose failure it is (None for a plain pass or a not-run that is no failure), the reason
    people read, and the evidence the cause was told from."""

    status: Status
    reason: str = ""
    cause: Cause | None = None
    evidence: list[str] = field(default_factory=list)
    repeat: Repeat | None = None  # not run: it repeats an earlier config


def compared_status(ok: bool, reason: str, *, interpreted: bool, dtypes: dict[str, str]) -> tuple[Status, str]:
    """The status of a record whose output was compared: PASS or FAIL, except a bf16 mismatch under the
    interpreter, which computes bf16 on raw bit patterns (kernels that upcast to fp32 are exact): it says nothing
    about the kernel, so it is NOT_RUN there and a GPU backend decides. On a GPU a mismatch is always FAIL."""
    if ok:
        return PASS, reason
    if interpreted and "bfloat16" in dtypes.values():
        return NOT_RUN, f"not run on the interpreter: bf16 arithmetic (it operates on bf16 bit patterns): {reason}"
    return FAIL, reason


def judge_comparison(ok: bool, reason: str, *, interpreted: bool, dtypes: dict[str, str],
                     nondeterministic: bool = False) -> Judged:
    """A compared output: wrong values are the kernel's (NONDETERMINISM where the original was seen to disagree with
    itself on the same inputs: then no comparison tells a wrong kernel from its own spread); a pass within a
    tolerance widened to that spread keeps NONDETERMINISM as its caveat."""
    status, reason = compared_status(ok, reason, interpreted=interpreted, dtypes=dtypes)
    if status == PASS:
        return Judged(PASS, reason, Cause.NONDETERMINISM if nondeterministic else None)
    if status == FAIL:
        return Judged(FAIL, reason, Cause.NONDETERMINISM if nondeterministic else Cause.KERNEL)
    return Judged(status, reason, Cause.ENVIRONMENT)


def judge_failure(exc: BaseException, stage: str, own: list[str], *, interpreted: bool, reference_is_original: bool
                  ) -> Judged:
    """An exception raised at `stage` ("import", "reference" or "kernel") of a case whose user files are `own`:
    NOT_RUN where this machine cannot run the code (no GPU, a limit of the interpreter), else ERROR, with the cause
    told by the exception's type and frames (`harness.blame`)."""
    text = harness.describe_exception(exc)
    blame = blame_exception(exc, own, stage=stage, reference_is_original=reference_is_original)
    rejected = harness.tileir_rejection(exc) is not None  # before the interpreter's limits: the emulated compiler
    # refuses inline asm there too
    if not rejected and harness.needs_cuda(exc):
        return Judged(NOT_RUN, f"not run: needs a GPU ({text})", Cause.ENVIRONMENT, blame.evidence)
    limit = harness.interpreter_limit(exc) if interpreted and not rejected else None
    if limit:
        location = exception_location(exc)
        where = f" (at {location})" if location else ""
        return Judged(NOT_RUN, f"not run on the interpreter: {limit} ({text}{where})", Cause.ENVIRONMENT,
                      blame.evidence)
    reason = failure_reason(exc, stage, text, blame, reference_is_original, own)
    return Judged(ERROR, reason, blame.cause, blame.evidence)


def failure_reason(exc: BaseException, stage: str, text: str, blame: Blame, reference_is_original: bool,
                   own: list[str]) -> str:
    """The words of an errored record: what failed, then whose failure it is."""
    rejection = harness.tileir_rejection(exc)
    if rejection:
        return f"rejected by the TileIR compiler: {rejection}"
    if stage == IMPORT_STAGE:
        missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
        if missing and blame.cause == Cause.ENVIRONMENT:
            top = missing.split(".")[0]
            if any(Path(p).name == top for p in own):  # a module of the user's own package: an extension not built
                return (f"cannot import the kernel file: its package's module {missing!r} is not there (an extension "
                        f"not built on this machine? build the package first) ({text})")
            return (f"cannot import the kernel file: it needs the module {missing!r}, which is not installed (pip "
                    f"install {top}) ({text})")
        return f"cannot import the kernel file: {text}; {blame.why}"
    if stage == REFERENCE_STAGE:
        what = "the original kernel raised" if reference_is_original else "the reference raised"
        return f"{what}: {text}; {blame.why}"
    return f"{text}; {blame.why}"
