"""The validation of one case in a worker of the job engine (`tileiropt.run.job_worker`).

A case's job, `{"kind": "case", "id": 3, "case": Case, "best_config": false}`, runs every config item of the case
and answers, besides the engine's own events:

    {"event": "plan", "id": 3, "labels": [...]}         its config items, in order
    {"event": "start", "id": 3, "item": 0}              an item begins (the parent times it)
    {"event": "record", "id": 3, "item": 0, "record": {...}}
    {"event": "skip", "id": 3, "item": 2}               an item of an autotuner the entry never launches
    {"event": "job_done", "id": 3, "parts": {"prepare": 0.2, "import": 0.4, "items": 1.3}}

A failure before the first item (importing, the reference) is one "prepare" record.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tileiropt.capture import replay
from tileiropt.check.environment import (
    TILEIR_BACKEND,
    check_environment,
    probe_active_backend,
    probe_emulated_tileir,
)
from tileiropt.engine.worker_io import Emitter
from tileiropt.errors import PINNING_ERROR
from tileiropt.harness import fault_injection, harness, loading, stand_ins
from tileiropt.harness.autotuners import autotuners, own_run, pruned_reason
from tileiropt.harness.backends import EMULATOR_SETUP, TILEIR_CODE_ON_PTX, Backend
from tileiropt.harness.blame import IMPORT_STAGE, KERNEL_STAGE, REFERENCE_STAGE
from tileiropt.harness.configs import ConfigItem, config_items, first_configs, label_after_run, pinned_item
from tileiropt.harness.launches import LaunchRecorder
from tileiropt.harness.loading import EntryCall
from tileiropt.harness.provenance import Provenance, fallback_note
from tileiropt.schema import (
    AUTOTUNED,
    ERROR,
    FAIL,
    NOT_RUN,
    PASS,
    SAME_ON_INTERPRETER,
    SAME_ON_PTX,
    Cause,
    Repeat,
)
from tileiropt.validate import reference_cache
from tileiropt.validate.cases import Case, record_for, user_paths
from tileiropt.validate.config_repeats import dropped_hint_duplicates, interpreted_duplicates, item_costs, not_attached
from tileiropt.validate.judge import Judged, judge_comparison, judge_failure
from tileiropt.validate.records import NONE, PREPARE, Measures
from tileiropt.validate.second_look import SecondLook, own_spread, same_kernel_code
from tileiropt.validate.shards import owners

if TYPE_CHECKING:
    from typing_extensions import Unpack

OWN_RUN_REASON = "one run: on the interpreter the original is its own reference (a second run gives the same bits)"
_POISONED = re.compile(r"illegal memory access|device-side assert|CUDA error|unspecified launch failure",
                       re.IGNORECASE)  # a third party's words for a CUDA context that cannot be used again


@dataclass
class Prepared:
    """A case's inputs and what its output must equal, made once before its items run."""

    inputs: dict[str, Any]
    expected: Any = None
    reference_inputs: Any = None  # the inputs after the reference ran (an in-place reference wrote them)
    structure: Any = None  # the expected output's structure (dtypes, shapes); None: compare the inputs
    check_dtype: bool = True
    own_run_key: str | None = None  # the original's one run is its own reference: saved under this key
    own_run: bool = False


@dataclass
class ItemResult:
    """One item's record, the autotuners its call launched (None when it raised), and whether the CUDA context is
    still usable."""

    record: dict[str, Any]
    launched: set[str] | None
    poisoned: bool = False

    @property
    def status(self) -> str:
        return str(self.record["status"])


class CaseRunner:
    """Runs every config item of one case and emits a record for each."""

    def __init__(self, case: Case, backend: Backend, best_config: bool, base: Provenance, emit: Emitter,
                 reference_folder: str | None = None):
        self.case, self.backend, self.best_config, self.base, self.emit = case, backend, best_config, base, emit
        self.reference_folder = reference_folder  # the run's saved references (`reference_cache`)
        self.not_attached: dict[str, str] = {}  # the gate's account of TileIR code it could not attach
        self.noise_note = ""  # a tolerance widened to the original's own run-to-run difference
        self.unpinnable: tuple[str, str] | None = None  # (autotuner, why) that cannot be pinned: run unpinned
        self.parts: dict[str, float] = {}  # seconds by part of the job: prepare, import, items
        self.exact = self._exact_replay()
        if self.exact:
            case.atol = case.rtol = 0.0

    def record(self, config: str, judged: Judged, provenance: Provenance | None = None,
               **measures: Unpack[Measures]) -> dict[str, Any]:
        """The record of an item as `judged`, with the notes every record of the case carries."""
        case = self.case
        status, reason, cause = judged.status, judged.reason, judged.cause
        if status == PASS and case.variant == "optimized" and case.original_path and case.path != case.original_path:
            extra = stand_ins.raised_only_in(case.path, case.original_path)
            if extra:  # the optimized file's own module-level code fails where the original's does not
                raised = "the optimized file's own top-level call raised where the original's did not: " + \
                    "; ".join(stand_ins.described(*failure) for failure in extra)
                if case.file_atomics and not self.backend.interpreted:
                    # its self-check sums through atomics, in an order that changes from run to run: one run of
                    # each is no evidence; the kernels' own comparison (this record) decides, and this is said
                    reason = f"{raised} (its kernels use atomics: a self-check may fail on one run and pass on " \
                             "the next; not counted as a failure)"
                else:
                    status, reason, cause = FAIL, raised, Cause.KERNEL
        bf16_note = self.arithmetic_note()
        note = "; ".join(filter(None, [stand_ins.note(self.scopes(), self.own_files()), self.noise_note, bf16_note]))
        if self.noise_note and status == PASS and cause is None:
            cause = Cause.NONDETERMINISM  # a pass within the original's own spread: said as its caveat
        launched = provenance.kernels if provenance is not None else {}
        missing = {name: why for name, why in self.not_attached.items() if name in launched}
        if missing:  # only for kernels this record launched
            attached = "TileIR code not attached at import: " + "; ".join(
                f"{name} ({why})" for name, why in sorted(missing.items()))
            note = f"{note}; {attached}" if note else attached
        if note:
            reason = f"{reason}; {note}" if reason else note
        return asdict(record_for(self.case, self.backend.name, config, status, reason,
                                 provenance or Provenance(**asdict(self.base)), cause=cause,
                                 evidence=judged.evidence, repeat=judged.repeat,
                                 bf16_wrong=bool(bf16_note) and status == PASS, **measures))

    def arithmetic_note(self) -> str:
        """What the interpreter computes wrongly for this case's inputs (bf16 products), or ""."""
        if not self.backend.interpreted or "bfloat16" not in self.case.dtypes.values():
            return ""
        from tileiropt.harness.interpreter_probe import BF16_NOTE, bf16_products_wrong  # imports Triton

        return BF16_NOTE if bf16_products_wrong() else ""

    def run(self) -> bool:
        """Run the case; False when the worker must exit (the CUDA context is unusable)."""
        case = self.case
        stand_ins.begin()  # its records name the stand-ins its own code reached, not an earlier case's
        try:  # the reference first: with reference "original", a package's original is imported, then replaced
            with self.part("prepare"):
                prepared = self.prepare()
        except Exception as exc:
            self.emit_prepare_failure(exc, REFERENCE_STAGE)
            return not _POISONED.search(str(exc))
        try:
            with self.part("import"):
                module = self.load(case.path)
                self.not_attached = not_attached(module, case.path) if case.variant == "optimized" else {}
                entry = self.entry(module)
        except Exception as exc:
            self.emit_prepare_failure(exc, IMPORT_STAGE)
            return not _POISONED.search(str(exc))
        if not self.run_items(module, entry, prepared):
            return False
        self.emit("job_done", id=case.id, parts=self.parts)
        return True

    def run_items(self, module: ModuleType, entry: EntryCall, prepared: Prepared) -> bool:
        """Run the case's config items this job owns; False when the CUDA context became unusable."""
        case, emit = self.case, self.emit
        # a captured launch runs at its own config (its grid was computed for it)
        items = [ConfigItem(replay.label(case.launch), pin=False)] if case.launch else \
            config_items(module, self.best_config)
        emit("plan", id=case.id, labels=[item.label for item in items])
        same_as = interpreted_duplicates(module, items) if self.backend.interpreted else \
            dropped_hint_duplicates(module, items) if self.backend.name == TILEIR_CODE_ON_PTX.name else {}
        owner = owners(len(items), same_as, case.shards, item_costs(module, items) if case.shards > 1 else None)
        launched_known: set[str] | None = None
        for index in range(case.start_item, len(items)):
            item = items[index]
            if owner[index] != case.shard:  # another job of this case runs it (`validate.shards`)
                continue
            if item.autotuner is not None and launched_known is not None and item.autotuner not in launched_known:
                emit("skip", id=case.id, item=index)
                continue
            emit("start", id=case.id, item=index)
            if index in same_as or (self.unpinnable and item.pin and item.autotuner == self.unpinnable[0]):
                earlier = items[same_as[index]].label if index in same_as else ""
                emit("record", id=case.id, item=index, record=self.record(item.label, self.not_again(earlier)))
                continue
            with self.part("items"):
                result = self.run_item(module, entry, item, prepared)
                if result.status == ERROR and not result.poisoned:
                    result = self.as_the_user_runs_it(module, entry, item, prepared, result)
            if result.launched is not None:
                launched_known = result.launched
            if item.autotuner is not None and result.launched is not None and item.autotuner not in result.launched:
                emit("skip", id=case.id, item=index)
                continue
            emit("record", id=case.id, item=index, record=result.record)
            if result.poisoned:
                return False
        return True

    def not_again(self, earlier: str) -> Judged:
        """An item not run: it repeats `earlier` (what the interpreter computes, or PTX compiles), or its autotuner
        cannot be pinned (`unpinnable`: its record above ran it as the user runs it)."""
        if not earlier:
            assert self.unpinnable is not None
            return Judged(NOT_RUN, f"not run: {self.unpinnable[1]}; its record above ran it as the user runs it")
        if self.backend.interpreted:
            return Judged(NOT_RUN, f"{SAME_ON_INTERPRETER} `{earlier}` (its record above); num_warps, num_stages, "
                                   "num_ctas and occupancy do not change what the interpreter computes",
                          repeat=Repeat.INTERPRETER)
        return Judged(NOT_RUN, f"{SAME_ON_PTX} `{earlier}` (its record above); occupancy and 2-CTA mode are TileIR's, "
                               "num_warps only a hint to it, and PTX compiles the same code for both",
                      repeat=Repeat.PTX)

    def as_the_user_runs_it(self, module: ModuleType, entry: EntryCall, item: ConfigItem, prepared: Prepared,
                            pinned: ItemResult) -> ItemResult:
        """A project entry's config item that raised while pinned to a package's own autotuner (a subclass with its
        own `run`, which may bind arguments, keep a cache or choose in ways a pin from outside breaks): run once more
        as the user runs it, the autotuner choosing. When that passes, the pinning was the tool's failure (TOOL): the
        record is that run's, saying so, and the autotuner's other items are not run (`unpinnable`). When it fails
        too, the pinned failure stands, its cause as observed. A config that ran and gave wrong values keeps its
        own failure."""
        tuners = autotuners(module)
        name = item.autotuner or next((n for n, t in tuners.items() if own_run(t)), None)  # item 0: every first
        tuner = tuners.get(name or "")
        if not item.pin or self.case.launch is not None or tuner is None or not own_run(tuner):
            return pinned
        again = self.run_item(module, entry, ConfigItem(AUTOTUNED, pin=False), prepared)
        if again.status != PASS:
            return pinned
        why = (f"{type(tuner).__name__}, the package's own autotuner of {name}, cannot be pinned to one "
               f"config from outside (pinned, {pinned.record['reason'] or pinned.status})")
        self.unpinnable = (name or "", why)
        again.record["reason"] = "; ".join(filter(None, [f"run as the user runs it, its autotuner choosing: {why}",
                                                         again.record.get("reason")]))
        again.record["cause"] = Cause.TOOL  # the pinned run's failure was the tool's; this run passed
        again.record["evidence"] = pinned.record.get("evidence") or []
        return again

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        """Add the seconds spent inside to the job's `name` part (reported with "job_done")."""
        began = time.perf_counter()
        try:
            yield
        finally:
            self.parts[name] = self.parts.get(name, 0.0) + time.perf_counter() - began

    def emit_prepare_failure(self, exc: BaseException, stage: str) -> None:
        """One (prepare) record: not run when the cause is this machine, an error otherwise."""
        judged = self.judge_failure(exc, stage)
        self.emit("record", id=self.case.id, item=None, record=self.record(PREPARE, judged))
        self.emit("job_done", id=self.case.id, parts=self.parts)

    def judge_failure(self, exc: BaseException, stage: str) -> Judged:
        """What an exception raised at `stage` is, and whose (`validate.judge.judge_failure`)."""
        return judge_failure(exc, stage, self.scopes(), interpreted=self.backend.interpreted,
                             reference_is_original=self.case.reference == "original")

    def own_files(self) -> list[str]:
        """The case's kernel files: the validated one and its original."""
        return [str(Path(p).resolve()) for p in (self.case.path, self.case.original_path) if p]

    def scopes(self) -> list[str]:
        """The files (and, for a package, its folder) whose skipped and emulated calls this case's records name,
        and whose frames make a failure the user's code's."""
        return user_paths(self.case)

    def entry(self, module: ModuleType) -> EntryCall:
        """The call of (inputs, args, dims): the project's entry, or the captured launch's replay."""
        if self.case.launch:
            return replay.launcher(module, self.case.launch)
        return loading.entry_call(module, self.case.entry, self.case.call)

    def _exact_replay(self) -> bool:
        """A replayed launch through unchanged code (the PTX path, the interpreter) must be bit-exact,
        unless it accumulates with atomics (their order is not fixed on a GPU)."""
        case = self.case
        backend = self.backend
        return bool(case.launch and not backend.optimized_only and backend.expected_backend != "tileir" and not (
            case.launch.atomics and not backend.interpreted))

    def _own_reference(self) -> bool:
        """The original file replayed on the interpreter against the original: its one run is the reference too.
        The interpreter runs a grid's programs one after another, so a second run would give the same bits."""
        case = self.case
        return bool(case.launch) and self.backend.interpreted and case.variant == "original" and \
            case.reference == "original" and bool(case.original_path) and \
            os.path.realpath(case.path) == os.path.realpath(str(case.original_path))

    def widen_to_noise(self, function: Callable[..., Any], expected: object, inputs: dict[str, Any]) -> None:
        """A kernel accumulating with atomics differs from itself between runs (the order of its updates is not
        fixed): run the original once more and widen the tolerance to twice its own run-to-run difference."""
        spread = own_spread(function, expected, inputs, self.case)
        if spread > 0 and 2 * spread > self.case.atol:
            self.case.atol = 2 * spread
            self.noise_note = (f"atomics: the original differs from itself by up to {spread:.3g} between runs; "
                               f"atol widened to {self.case.atol:.3g}")

    def load(self, path: str) -> Any:
        """The kernel file's module; for a captured launch, a script's definitions only (its program ran in the
        capture, which recorded every launch it made: `harness.ModuleCalls`)."""
        case = self.case
        with harness.MODULE_CALLS.only_definitions(bool(case.launch) or case.shard > 0):
            return loading.load_kernel_module(path, case.original_path or case.path, case.module, case.entry,
                                              case.search_paths, case.launch.bare_packages if case.launch else ())

    def prepare(self) -> Prepared:
        """Inputs, the reference output, and the expected output structure (dtypes, shapes)."""
        case = self.case
        if case.launch:
            inputs = replay.build_inputs(case.launch, case.seed, self.backend.device)
        else:
            inputs = harness.build_inputs(case.shapes, case.dtypes, seed=case.seed, ranges=case.ranges,
                                          device=self.backend.device)
        reference = harness.Reference.parse(case.reference)
        key = reference_cache.cache_key(case.original_path or "", case.launch, case.seed, self.base.device,
                                        self.backend.expected_backend) \
            if reference.kind == "original" and case.launch else None
        saved = reference_cache.load(self.reference_folder, key, self.backend.device)
        if saved is not None:  # computed by an earlier case of this run on this device
            expected, used = saved
            return Prepared(inputs, expected, used, expected)
        if self._own_reference():
            return Prepared(inputs, own_run_key=key, own_run=True)
        if reference.kind == "original":
            original_module = self.original_module()
            function = reference.resolve(self.entry(original_module))
            # a captured launch pins its own config (replay.launcher): the first config, which the kernel's pruner
            # may drop for these very arguments, is not asked for
            with contextlib.nullcontext() if case.launch else first_configs(original_module):
                expected, used = harness.evaluate_reference(function, reference.kind, inputs, case.args, case.dims)
                if case.launch and case.launch.atomics and not self.backend.interpreted:
                    self.widen_to_noise(function, expected, inputs)
            structure, check_dtype = expected, True
        else:
            function = reference.resolve()
            expected, used = harness.evaluate_reference(function, reference.kind, inputs, case.args, case.dims)
            structure = harness.expected_structure(function, inputs, case.args, case.dims)
            check_dtype = structure is not None
            if structure is None:
                structure = expected  # shapes still checked; the dtype is the upcast one
        harness.synchronize(self.backend.device)
        reference_cache.save(self.reference_folder, key, expected, used)  # no key: not to be cached (atomics)
        return Prepared(inputs, expected, used, structure, check_dtype)

    def run_item(self, module: ModuleType, entry: EntryCall, item: ConfigItem, prepared: Prepared) -> ItemResult:
        """Run one item (the tool's own call of the entry, observed) and judge what it gave."""
        case = self.case
        started = time.perf_counter()
        inputs = harness.clone_inputs(prepared.inputs)
        output, failure = None, None
        with pinned_item(module, item), LaunchRecorder(module) as launches:
            try:
                fault_injection.before_call(case.kernel)  # a test hook: the tool's own call fails, as asked
                output = entry(inputs, case.args, case.dims)
                harness.synchronize(self.backend.device)
            except Exception as exc:
                failure = exc
        label = item.label if case.launch else label_after_run(module, item, launches.autotuners)
        provenance = self.provenance(launches)
        if failure is not None:
            seconds = time.perf_counter() - started
            pruned = pruned_reason(failure)
            skipped = harness.autotuner_skip(failure)
            if pruned or skipped:  # the autotuner would not run it either: nothing to validate here
                reason = f"not run: {pruned}" if pruned else \
                    f"not run: skipped by the autotuner: {skipped} ({harness.describe_exception(failure)})"
                return ItemResult(self.record(label, Judged(NOT_RUN, reason), provenance, seconds=seconds), None)
            judged = self.judge_failure(failure, KERNEL_STAGE)
            return ItemResult(self.record(label, judged, provenance, seconds=seconds), None,
                              bool(_POISONED.search(str(failure))))
        if prepared.own_run:  # the original's own run: kept as the reference of the later cases
            reference_cache.save(self.reference_folder, prepared.own_run_key, output, inputs)
            return ItemResult(self.record(label, Judged(PASS, OWN_RUN_REASON), provenance,
                                          seconds=time.perf_counter() - started), launches.autotuners)
        record = self.compared(label, output, inputs, prepared, provenance, started)
        return ItemResult(record, launches.autotuners)

    def compared(self, label: str, output: object, inputs: dict[str, Any], prepared: Prepared,
                 provenance: Provenance, started: float) -> dict[str, Any]:
        """The record of an item whose call returned: its output (or the input it wrote) against the expected."""
        case = self.case
        expected, structure = prepared.expected, prepared.structure
        path = "out"
        if output is None and expected is None:  # in-place kernel and reference: compare the inputs
            output, expected, structure = inputs, prepared.reference_inputs, None
        elif output is None:  # an in-place kernel: its output is the one input it wrote
            written = harness.written_inputs(prepared.inputs, inputs)
            if len(written) == 1:
                path = f"{written[0]} (written in place)"
                output = inputs[written[0]]
        problem = harness.check_structure(output, structure, path, check_dtype=prepared.check_dtype) \
            if structure is not None else None
        if problem:
            return self.record(label, Judged(FAIL, problem, Cause.KERNEL), provenance,
                               seconds=time.perf_counter() - started)
        result = harness.compare(output, expected, case.atol, case.rtol, path)
        look = SecondLook(result)
        if not result.ok and path == "out" and case.reference == "original":  # whose difference is it?
            look = self.second_look(output, expected, prepared, path, result)
            if look.tool_error:
                return self.record(label, Judged(ERROR, look.note, Cause.TOOL), provenance,
                                   seconds=time.perf_counter() - started)
        result = look.result
        reason = "; ".join(filter(None, [result.reason, look.note]))
        if provenance.fallback:
            note = fallback_note(provenance.compiled_backend, self.backend.expected_backend, provenance)
            if note is not None:  # always, where `provenance.fallback` is set (see `provenance`)
                reason = f"{reason}; {note}" if reason else note
        judged = judge_comparison(result.ok, reason, interpreted=self.backend.interpreted, dtypes=case.dtypes,
                                  nondeterministic=look.spread > 0)
        return self.record(label, judged, provenance, max_abs=result.max_abs, max_rel=result.max_rel,
                           mismatches=result.mismatches, elements=result.elements,
                           first_mismatch=result.first_mismatch, mismatch_in=result.mismatch_in,
                           seconds=time.perf_counter() - started)

    def second_look(self, output: object, expected: object, prepared: Prepared, path: str,
                    result: harness.Comparison) -> SecondLook:
        """An output differs from the original's: whose difference is it? The original runs once more on the same
        inputs: if it differs from itself, the kernel disagrees with itself (a race, an order of updates not fixed:
        NONDETERMINISM) and the comparison is within twice its own spread; if it does not, the replay was expected
        bit-exact and the kernel's code is the same in both files, the difference is the tool's replay, never the
        optimized file's (TOOL). Otherwise the comparison stands."""
        case = self.case
        try:
            spread = own_spread(self.original_call(), expected, prepared.inputs, case)
        except Exception:  # noqa: BLE001 - no second look: the first comparison stands
            return SecondLook(result)
        if spread > 0:
            widened = harness.compare(output, expected, 2 * spread, 0.0, path)
            return SecondLook(widened, f"the kernel disagrees with itself: the original run twice on the same inputs "
                                       f"differs by up to {spread:.3g}; compared within {2 * spread:.3g}", spread)
        if self.exact and case.variant == "optimized" and case.launch and \
                same_kernel_code(case.path, case.original_path, case.launch.kernel):
            return SecondLook(result, f"{PINNING_ERROR} {case.launch.kernel} alike on both sides: its code is the "
                                      f"same in the optimized file and the original, which gives the same bits every "
                                      f"run, yet the two replays differ ({result.reason})", tool_error=True)
        return SecondLook(result)

    def original_module(self) -> Any:
        """The untransformed kernel file's module (the reference "original")."""
        if not self.case.original_path:
            raise harness.HarnessError('reference "original" needs the untransformed kernel file')
        return self.load(self.case.original_path)

    def original_call(self) -> Any:
        """The original's call of (inputs, args, dims): its entry, or the captured launch's replay."""
        return harness.Reference.parse("original").resolve(self.entry(self.original_module()))

    def provenance(self, launches: LaunchRecorder) -> Provenance:
        provenance = Provenance(**asdict(self.base))
        provenance.kernels = dict(launches.kernels)
        provenance.launched = dict(launches.launched)
        if not self.case.launch:  # a replay launches below the package's wrappers, with the hints itself: no measure
            provenance.options = {name: sorted(options) for name, options in launches.received.items()}
        provenance.compiled_backend = launches.backend_summary()
        if self.backend.expected_backend == "tileir" and provenance.compiled_backend:
            provenance.fallback = fallback_note(provenance.compiled_backend, "tileir", provenance) is not None
        return provenance




def backend_blocked(backend: Backend, release: str | None = None, judged: list[str] | None = None) -> str | None:
    """Why `backend` cannot run in this process, or None when it can. The TileIR backend: where the parent judged
    the machine (`judged`: `Machine.judge`'s blockers, empty when TileIR can run), that judgement, and only what
    this process alone can tell (Triton's active backend under the ENABLE_TILE=1 it was started with); else TileIR
    ready for the CUDA Tile IR `release`, probed here. An emulated TileIR backend needs the emulator installed here
    (ENABLE_TILE=1 with tests/emulated_nvtriton on PYTHONPATH), and never takes the real one for it."""
    if backend.name == "tileir" and judged is not None:
        if judged:
            return "; ".join(judged)
        active, error = probe_active_backend()
        return None if active == TILEIR_BACKEND else f"active backend is {active or error!r}, not {TILEIR_BACKEND!r}"
    if backend.name == "tileir":
        report = check_environment(release=release)
        return None if report.tileir_ready else "; ".join(report.reasons)
    if backend.emulated and not probe_emulated_tileir():
        return f"the emulated TileIR backend is not installed in this worker ({EMULATOR_SETUP})"
    return None


def run_case_job(job: dict[str, Any], backend: Backend, base: Provenance, emit: Emitter, blocked: str | None) -> bool:
    """Validate the job's case; False when the worker must exit (the CUDA context is unusable). `blocked`: why
    the backend cannot run in this process (one "not run" record)."""
    case = Case.from_json(job["case"])
    if blocked:
        record = record_for(case, backend.name, NONE, NOT_RUN, f"not run: {blocked}", base, cause=Cause.ENVIRONMENT)
        emit("record", id=case.id, item=None, record=record)
        emit("job_done", id=case.id, parts={})
        return True
    return CaseRunner(case, backend, bool(job.get("best_config")), base, emit, job.get("reference_cache")).run()
