"""Phase 4: validate every kernel, variant, dtype set, backend and autotune config.

`validate_project(project, ...)` is the API (`tileiropt validate` and `tileiropt run` call it).
Each backend runs in its own worker subprocesses, because the backend is fixed when Triton and the
kernel module are imported; each case is a job of the engine (`tileiropt.engine.engine`,
`case_jobs.py`), and the slots (`executors.py`) take them from one pool. The parent enforces a
timeout per record: a hanging or crashing kernel costs its own record, and a new worker goes on
with the rest.
"""

from __future__ import annotations

import collections
import datetime as _dt
import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.check.machine import Machine, environment_summary, versions
from tileiropt.classify.model import FileModel
from tileiropt.engine.engine import JobPool, RunWorkers, run_jobs
from tileiropt.engine.executors import Executor, validate_per_gpu
from tileiropt.engine.progress import Progress
from tileiropt.engine.resume import Earlier, Journal, input_key, read_journal, tool_digest
from tileiropt.errors import UserError, check_seconds
from tileiropt.harness.backends import BACKENDS, Backend
from tileiropt.harness.entry_ref import reference_kind
from tileiropt.harness.provenance import digest_memo, file_digest
from tileiropt.harness.scaling import scale_for_interpreter
from tileiropt.project.spec import REFERENCE_ORIGINAL, KernelSpec, Project
from tileiropt.schema import ERROR, NOT_RUN
from tileiropt.validate.case_jobs import CaseJobs, RecordCallback
from tileiropt.validate.cases import Case, record_for
from tileiropt.validate.records import (
    NONE,
    VARIANTS,
    ValidateRun,
    ValidationRecord,
    load_validate_run,
    record_from_dict,
)
from tileiropt.validate.shards import ShardCount, autotuned, shard_count, split_cases

REPEATED = "hint-only repeats"  # the progress line's word for such records (run once: the schema says why)


def tally(run: ValidateRun) -> dict[str, int]:
    """The records by status, the hint-only repeats apart from the other records not run (no one need look into
    them), as the progress line and the closing lines count them; statuses without a record left out."""
    counts = run.counts()
    repeats = sum(r.hint_only_repeat for r in run.records)
    shown = {**counts, NOT_RUN: counts[NOT_RUN] - repeats, REPEATED: repeats}
    return {status: n for status, n in shown.items() if n}

# --------------------------------------------------------------------------- planning


def _choose_backends(names: list[str] | None, machine: Machine) -> list[Backend]:
    if not names:
        names = machine.default_backends()
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise UserError(f"--backend: unknown backend {unknown[0]!r}", hint=f"choose among: {', '.join(BACKENDS)}")
    return [BACKENDS[n] for n in dict.fromkeys(names)]


def _variants_for(spec: KernelSpec, variants: list[str] | None) -> list[str]:
    if variants:
        bad = [v for v in variants if v not in VARIANTS]
        if bad:
            raise UserError(f"unknown variant {bad[0]!r}", hint="use original, optimized or both")
        return [v for v in VARIANTS if v in variants]
    return ["original", "optimized"] if spec.optimized_path.is_file() else ["original"]


def _check_reference(spec: KernelSpec, project: Project) -> None:
    if spec.reference is None or spec.reference.strip() == REFERENCE_ORIGINAL:
        return  # nothing to parse
    try:  # read without torch: the workers have not started yet
        reference_kind(spec.reference)
    except ValueError as exc:
        raise UserError(str(exc), file=str(project.file) if project.file else None,
                        hint=f"fix the reference of kernel {spec.name!r}") from None


@dataclass
class Plan:
    """The cases per backend, and the records already decided (not run) before any worker."""

    cases: dict[str, list[Case]] = field(default_factory=dict)
    timeouts: dict[int, float] = field(default_factory=dict)
    keys: dict[int, tuple[int, ...]] = field(default_factory=dict)  # case id -> sort key
    records: list[tuple[tuple[int, ...], ValidationRecord]] = field(default_factory=list)
    inputs: dict[int, str] = field(default_factory=dict)  # case id -> input key
    reused: int = 0  # records taken from an earlier run
    instant: list[str] = field(default_factory=list)  # per case decided here (not run, or reused): its kernel


def case_inputs(case: Case, backend: Backend, best_config: bool, machine: Machine, versions: dict[str, Any],
                digest: Callable[[str | None], str | None] = file_digest) -> str:
    """The input key of a case: the job, the backend, the files' SHA-256, the tool, Triton, torch, the GPU."""
    job = {k: v for k, v in case.to_json().items() if k not in ("id", "start_item", "shard", "shards")}
    return input_key({"job": job, "backend": backend.name, "best_config": best_config,
                      "files": [digest(case.path), digest(case.original_path)],
                      "tool": tool_digest(), "versions": versions,
                      "device": machine.device.key()})


def file_uses_atomics(path: str) -> bool:
    """Whether a kernel file's JIT functions update memory atomically (its results' summation order differs from
    run to run): read once in the parent, carried by each case."""
    try:
        return FileModel.read(path).uses_atomics()
    except (UserError, RecursionError, OSError):
        return False


def plan_cases(project: Project, specs: list[KernelSpec], backends: list[Backend], machine: Machine,
               variants: list[str] | None, timeout: float | None, best_config: bool = False,
               earlier: Earlier[ValidationRecord] | None = None, release: str | None = None) -> Plan:
    plan = Plan(cases={b.name: [] for b in backends})
    installed = versions(release)
    digest = digest_memo()
    atomics = functools.cache(file_uses_atomics)
    next_id = 0
    for s_index, spec in enumerate(specs):
        _check_reference(spec, project)
        for v_index, variant in enumerate(_variants_for(spec, variants)):
            path = spec.path if variant == "original" else spec.optimized_path
            reference = spec.reference
            if variant == "optimized" and reference is None:
                reference = REFERENCE_ORIGINAL  # the untransformed file is the reference
            for d_index, dtypes in enumerate(spec.dtypes):
                atol, rtol = spec.tolerances(dtypes)
                for b_index, backend in enumerate(backends):
                    if backend.optimized_only and variant != "optimized":
                        continue
                    key = (s_index, v_index, d_index, b_index)
                    scaled = scale_for_interpreter(spec.inputs, spec.dims, spec.flops) \
                        if backend.interpreted and not spec.launch else None  # a launch keeps its shapes
                    case = Case(
                        id=next_id, kernel=spec.name, variant=variant, path=str(path), entry=spec.entry,
                        reference=reference or "", shapes=scaled.shapes if scaled else spec.shapes(),
                        dtypes=dict(dtypes), atol=atol, rtol=rtol, original_path=str(spec.path),
                        dims=scaled.dims if scaled else dict(spec.dims), args=dict(spec.args),
                        ranges={k: list(v) for k, v in spec.ranges.items()}, seed=spec.seed,
                        search_paths=[str(project.root)], scaled_from=scaled.scaled_from if scaled else None,
                        module=spec.module, call=spec.call, launch=spec.launch,
                        file_atomics=atomics(str(spec.path)),
                    )
                    next_id += 1
                    reason = _not_runnable(spec, variant, path, reference, backend, machine)
                    if reason:
                        case.scaled_from = None
                        case.shapes = spec.shapes()
                        plan.records.append((key + (-1,), record_for(case, backend.name, NONE, NOT_RUN, reason)))
                        plan.instant.append(spec.name)
                        continue
                    picks = best_config and not backend.interpreted
                    inputs = case_inputs(case, backend, picks, machine, installed, digest)
                    reused = earlier.reusable(inputs, lambda r: r.status == ERROR) if earlier is not None else None
                    if reused is not None:
                        plan.records += [(key + (index,), record) for index, record in enumerate(reused)]
                        plan.reused += len(reused)
                        plan.instant.append(spec.name)
                        continue
                    plan.inputs[case.id] = inputs
                    plan.cases[backend.name].append(case)
                    plan.timeouts[case.id] = float(timeout if timeout is not None else spec.timeout)
                    plan.keys[case.id] = key
    return plan


def spread_cases(plan: Plan, backends: list[Backend], slots: int, has_gpu: bool) -> ShardCount:
    """Split each case of an autotuned kernel on a GPU backend into jobs of its own (`validate.shards`) when the
    phase's cases leave slots idle; each job takes its case's timeout, sort key and input key. What counts each
    input key's jobs."""
    memo: dict[str, bool] = {}
    by_name = {backend.name: backend for backend in backends}
    candidates = {name: [case for case in cases if case.launch is None and by_name[name].needs_gpu and has_gpu
                         and autotuned(case.path, memo)] for name, cases in plan.cases.items()}
    shards = shard_count(sum(map(len, candidates.values())), slots, sum(map(len, plan.cases.values())))
    next_id = 1 + max((case.id for cases in plan.cases.values() for case in cases), default=0)
    for name, cases in plan.cases.items():
        chosen = {case.id for case in candidates[name]}
        if shards <= 1 or not chosen:
            continue
        spread: list[Case] = []
        for case in cases:  # a case's jobs side by side, where the case was
            jobs, part_of = split_cases([case], shards, next_id) if case.id in chosen else ([case], {})
            next_id += len(part_of)
            for job, whole in part_of.items():
                plan.timeouts[job], plan.keys[job] = plan.timeouts[whole], plan.keys[whole]
                if whole in plan.inputs:
                    plan.inputs[job] = plan.inputs[whole]
            spread += jobs
        plan.cases[name] = spread
    return ShardCount((plan.inputs[case.id], case.shards) for cases in plan.cases.values() for case in cases
                      if case.shard == 0 and case.id in plan.inputs)


def earlier_validation(artifacts: Path | str) -> Earlier[ValidationRecord]:
    """What a re-run may reuse: the records of validate.json, then (superseding them per input key) those of
    an unfinished run's journal."""
    earlier: Earlier[ValidationRecord] = Earlier()
    try:
        run = load_validate_run(Path(artifacts))
    except UserError:
        run = None
    if run is not None:
        earlier.source = run.started
        complete = set(run.complete)
        for record in run.records:
            earlier.add(record.inputs, record, done=record.inputs in complete)
    journal: dict[str, list[ValidationRecord]] = {}
    done: set[str] = set()
    for entry in read_journal(artifacts, "validate"):
        try:
            if "record" in entry:
                record = record_from_dict(entry["record"])
                if record.inputs:
                    journal.setdefault(record.inputs, []).append(record)
            elif isinstance(entry.get("done"), str):
                done.add(entry["done"])
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
    for key, records in journal.items():
        earlier.results[key] = records
        earlier.complete.discard(key)
    earlier.complete |= {key for key in done if key in earlier.results}
    if journal and not earlier.source:
        earlier.source = "an unfinished run"
    return earlier


def _not_runnable(spec: KernelSpec, variant: str, path: Path, reference: str | None, backend: Backend,
                  machine: Machine) -> str | None:
    if not path.is_file():
        return f"not run: no optimized file {path.name} (run `tileiropt apply` first)"
    if not reference:
        return ("not run: no reference (set `reference` to a torch expression or \"pkg.mod:fn\"; "
                "the optimized file is compared with this one)")
    if reference == REFERENCE_ORIGINAL and variant == "original" and not spec.launch:
        return 'not run: reference is "original", the file itself (validate the optimized variant)'
    return machine.blocks(backend)


# --------------------------------------------------------------------------- the API


def progress_word(record: ValidationRecord) -> str:
    """What the progress line counts a record as: a hint-only repeat is no "not run" a user must look into, whether
    it ran now or was reused from an earlier run."""
    return REPEATED if record.hint_only_repeat else record.status


class _Listener:
    """What happens as the workers' records and cases finish: the journal, the progress line, the caller's callback,
    and the input keys whose cases finished (`complete`)."""

    def __init__(self, plan: Plan, jobs_left: ShardCount, log: Journal | None, progress: Progress | None,
                 on_record: RecordCallback | None):
        self.plan, self.jobs_left, self.log, self.progress, self.on_record = plan, jobs_left, log, progress, on_record
        self.lock = threading.Lock()
        self.complete: list[str] = []

    def record(self, record: ValidationRecord) -> None:
        if self.log is not None and record.inputs:
            self.log.append("record", record)
        if self.progress is not None:
            self.progress.record(record.kernel, progress_word(record))
        if self.on_record:
            with self.lock:
                self.on_record(record)

    def case_done(self, case: Case, finished: bool) -> None:
        key = self.plan.inputs.get(case.id)
        if key and self.jobs_left.ended(key, finished):  # the last job of its case (`validate.shards`)
            self.complete.append(key)
            if self.log is not None:
                self.log.append("done", key)
        if self.progress is not None:
            self.progress.finished(case.kernel)


def _announce(plan: Plan, progress: Progress | None, on_record: RecordCallback | None) -> None:
    """Tell the progress line what the plan holds, and pass on the records decided before any worker (reused, or
    not run here)."""
    if progress is not None:
        units = collections.Counter(plan.instant)
        units.update(case.kernel for cases in plan.cases.values() for case in cases)
        progress.plan(dict(units))
    for _, record in plan.records:
        if progress is not None:
            progress.record(record.kernel, progress_word(record))
        if on_record:
            on_record(record)
    if progress is not None:
        for kernel in plan.instant:
            progress.finished(kernel, reused=True)


def _in_plan_order(plan: Plan, cases: CaseJobs) -> list[ValidationRecord]:
    """Every record, those decided before the workers and those they made, in the plan's order of cases and items."""
    keyed = list(plan.records)
    for (case_id, item), record in list(cases.records):
        keyed.append((plan.keys[case_id] + (item,), record))
    keyed.sort(key=lambda pair: pair[0])
    return [record for _, record in keyed]


def validate_project(
    project: Project,
    kernels: list[str] | None = None,
    backends: list[str] | None = None,
    variants: list[str] | None = None,
    all_configs: bool = True,
    timeout: float | None = None,
    *,
    command: list[str] | None = None,
    on_record: RecordCallback | None = None,
    parallel: int | None = None,
    machine: Machine | None = None,
    executor: Executor | None = None,
    earlier: Earlier[ValidationRecord] | None = None,
    journal: bool = False,
    progress: Progress | None = None,
    workers: RunWorkers | None = None,
) -> ValidateRun:
    """Validate the project's kernels; every record is returned (validate.json is the caller's to save).

    `backends` defaults by machine (`backends.default_backends`); `variants` defaults to both when the
    optimized file exists. `all_configs=False` validates only the config the autotuner picks (GPU
    backends; the interpreter cannot benchmark, so it still pins each). Workers run in the `executor`'s
    slots (default: this host, every visible GPU); without a GPU, `parallel` workers at once (default:
    the CPU cores). With `journal`, each finished record goes at once
    to the artifacts folder's journal; with `earlier` (`earlier_validation(artifacts)`), a case whose inputs
    did not change reuses its earlier records. Ctrl-C or SIGTERM ends every worker; the run returned then
    holds what finished (`interrupted`). `workers`: what the run's workers share (the CUDA Tile IR release, the
    Triton caches, the workers kept between phases); default: the project's release, fresh caches for this call.
    """
    started = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    check_seconds("--timeout", timeout) if timeout is not None else None
    own_workers = workers is None
    workers = workers or RunWorkers(project.tileir_version)
    machine = machine or Machine.probe(workers.release)
    workers.judged(machine.tileir_blockers)  # the workers take this judgement instead of probing again
    executor = (executor or Executor()).check()
    specs = project.select(kernels)
    chosen = _choose_backends(backends, machine)
    plan = plan_cases(project, specs, chosen, machine, variants, timeout, best_config=not all_configs,
                      earlier=earlier, release=workers.release)
    notes = ["--best-config needs a GPU to benchmark; interpreter backends validate every config"] \
        if not all_configs and any(b.interpreted for b in chosen) else []
    notes += [f"{plan.reused} record(s) reused from the run of {earlier.source if earlier else '?'} (inputs "
              "unchanged; --fresh redoes them)"] if plan.reused else []
    launchers = executor.slots(gpu_work=any(b.needs_gpu for b in chosen) and machine.has_gpu,
                               per_gpu=validate_per_gpu(memory_gib=machine.device.memory_gib),
                               cpu_slots=parallel or os.cpu_count() or 1)
    listener = _Listener(plan, spread_cases(plan, chosen, len(launchers), machine.has_gpu),
                         Journal(project.artifacts, "validate") if journal else None, progress, on_record)
    _announce(plan, progress, on_record)
    cases = CaseJobs(plan.timeouts, best_config=not all_configs, on_record=listener.record, inputs=plan.inputs,
                     on_case_done=listener.case_done, reference_cache=workers.scratch)
    slots = workers.slots(JobPool(plan.cases), {b.name: b for b in chosen}, cases)
    try:
        interrupted = not run_jobs(slots, launchers)
    finally:
        if own_workers:
            workers.close()
    complete = listener.complete + [r.inputs for _, r in plan.records if r.inputs]
    if interrupted:
        notes.append("interrupted: the records that finished are kept; run again to go on (finished cases are "
                     "reused)")
    return ValidateRun(
        records=_in_plan_order(plan, cases),
        backends=[b.name for b in chosen],
        command=list(command) if command is not None else list(sys.argv),
        environment=machine.environment or environment_summary(workers.release),
        project=str(project.file) if project.file else None,
        started=started_at,
        seconds=round(time.monotonic() - started, 3),
        notes=notes,
        complete=sorted(set(complete)),
        reused=plan.reused,
        interrupted=interrupted,
        slots=len(launchers),
        workers=slots.workers_started,
        jobs=list(slots.timings),
    )
