"""The `compatibility` and `validate` phases of a run: the original files against their references on the backend
this machine runs first, then the optimized files on every backend it has. Both go into one validate.json; a
kernel with a failed or errored record stops there, and so does one whose optimized file never ran."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from tileiropt.contract.context import RunContext, record_of
from tileiropt.contract.outcome import Outcome, Stop
from tileiropt.contract.policy import live
from tileiropt.engine.progress import phase_progress
from tileiropt.phases import BY_NAME
from tileiropt.project.spec import KernelSpec
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, Cause
from tileiropt.validate.records import ValidateRun, ValidationRecord
from tileiropt.validate.run import tally, validate_project


def failures(run: ValidateRun, phase: str, what: str) -> list[Stop]:
    """A stop for every kernel with a failed or errored record (its first)."""
    stops: dict[str, Stop] = {}
    for record in run.records:
        if record.status in (FAIL, ERROR):
            cause = record.cause or Cause.UNKNOWN
            if cause == Cause.REFERENCE:  # the project's reference, not the kernel's file
                why = (f"the project's reference of {record.kernel} raised on {record.backend}: {record.reason} (fix: "
                       "the kernel's `reference` key)")
            else:
                why = f"{what}: {record.status} on {record.backend} at {record.config}: {record.reason}"
            stops.setdefault(record.kernel, Stop(record.kernel, phase, why, cause))
    return list(stops.values())


def never_validated(specs: Sequence[KernelSpec], records: Sequence[ValidationRecord]) -> list[Stop]:
    """A stop for every kernel whose optimized file did not run on any backend, for a reason the project controls
    (no optimized file, no reference, ...): a run that proved nothing about it must not exit 0. Reasons of the
    machine (no GPU, TileIR not ready) are not the user's: the interpreter or PTX still runs."""
    stops = []
    for spec in specs:
        mine = [r for r in records if r.kernel == spec.name and r.variant == "optimized"]
        if any(r.status != NOT_RUN for r in mine):
            continue
        reasons = list(dict.fromkeys(r.reason for r in mine)) or ["no validation record"]
        stops.append(Stop(spec.name, "validate", "the optimized file was never validated: " + "; ".join(reasons)))
    return stops


def validate_live(context: RunContext, earlier: Sequence[Outcome], phase: str, variants: list[str],
                  backends: list[str] | None = None) -> ValidateRun:
    """`validate_project` over the kernels still going, with the run's machine, workers and reusable records;
    saved at once in validate.json, merged into what the compatibility phase recorded there."""
    request = context.request

    def on_record(record: ValidationRecord) -> None:
        if request.console is None:  # else the progress line says more
            context.on_event(phase, f"{record.kernel} {record.variant} {record.backend}")

    return validate_project(context.project, kernels=[s.name for s in live(context.specs, earlier)],
                            backends=backends, variants=variants, timeout=request.timeout, command=request.command,
                            on_record=on_record, machine=context.the_machine(), executor=request.executor,
                            earlier=context.earlier_validation, journal=True, workers=context.workers,
                            progress=phase_progress(phase, "cases", request.console, context.on_event))


def saved(context: RunContext, merged: ValidateRun) -> ValidateRun:
    context.store.save(ValidateRun, merged)
    if merged.interrupted:
        raise KeyboardInterrupt("interrupted")  # the records that finished are saved
    return merged


class CompatibilityPhase:
    about = BY_NAME["compatibility"]
    needs: tuple[str, ...] = ("check",)

    def wanted(self, context: RunContext) -> bool:
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        backend = "ptx" if context.the_machine().has_gpu else "interpret"
        run = saved(context, validate_live(context, earlier, "compatibility", ["original"], [backend]))
        stops = failures(run, "compatibility", "the original file")
        passed = sum(r.status == PASS for r in run.records)
        if stops:
            status, detail = FAIL, f"{len(stops)} kernel(s) failed on {backend}"
        elif not passed:
            status, detail = NOT_RUN, "no record ran: " + "; ".join(dict.fromkeys(r.reason for r in run.records))
        else:
            status, detail = PASS, f"{passed} record(s) passed on {backend}"
        done = Outcome.of("compatibility", status, detail, record=run, stops=stops)
        done.result.jobs = list(run.jobs)
        return done


class ValidatePhase:
    about = BY_NAME["validate"]
    needs: tuple[str, ...] = ("check", "compatibility", "apply")

    def wanted(self, context: RunContext) -> bool:
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        going = live(context.specs, earlier)
        run = validate_live(context, earlier, "validate", ["optimized"])
        compatibility = record_of(earlier, "compatibility")  # one validate.json holds both phases' records
        merged = copy.deepcopy(compatibility) if isinstance(compatibility, ValidateRun) else None
        if merged is None:
            merged = run
        else:
            merged.merge(run)
        saved(context, merged)
        stops = failures(run, "validate", "the optimized file")
        failed = {s.kernel for s in stops}
        stops += never_validated([s for s in going if s.name not in failed], run.records)
        detail = ", ".join(f"{n} {status}" for status, n in tally(run).items())
        if stops:
            status, detail = FAIL, f"{len(stops)} kernel(s) failed: {detail}"
        else:
            status = PASS if run.counts()[PASS] else NOT_RUN
        done = Outcome.of("validate", status, detail, record=merged, stops=stops)
        done.result.jobs = list(run.jobs)
        return done
