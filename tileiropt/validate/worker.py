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
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import libcst as cst

from tileiropt.capture import replay
from tileiropt.check.environment import (
    TILEIR_BACKEND,
    check_environment,
    probe_active_backend,
    probe_emulated_tileir,
)
from tileiropt.engine.worker_io import Emitter
from tileiropt.errors import PINNING_ERROR
from tileiropt.harness import harness, loading, stand_ins
from tileiropt.harness.autotuners import autotuners, find_autotuner, own_run, pruned_reason
from tileiropt.harness.backends import EMULATOR_SETUP, TILEIR_CODE_ON_PTX, Backend
from tileiropt.harness.configs import ConfigItem, config_items, first_configs, label_after_run, pinned_item
from tileiropt.harness.exception_sites import exception_location
from tileiropt.harness.gate import extended_autotuners
from tileiropt.harness.gate_off import gate_off
from tileiropt.harness.launches import LaunchRecorder
from tileiropt.harness.loading import EntryCall, package_folder
from tileiropt.harness.provenance import Provenance, fallback_note
from tileiropt.harness.tileir_surface import tileir_code_on, tileir_configs
from tileiropt.schema import (
    AUTOTUNED,
    ERROR,
    FAIL,
    NOT_RUN,
    PASS,
    REFERENCE_RAISED,
    REJECTED_BY_TILEIR,
    SAME_ON_INTERPRETER,
    SAME_ON_PTX,
)
from tileiropt.validate import reference_cache
from tileiropt.validate.cases import Case, record_for
from tileiropt.validate.records import NONE, PREPARE, Measures
from tileiropt.validate.shards import compile_cost, owners

if TYPE_CHECKING:
    from triton import Config
    from typing_extensions import Unpack

OWN_RUN = object()  # prepared["expected"] of a case whose one run is its own reference (`_own_reference`)
OWN_RUN_REASON = "one run: on the interpreter the original is its own reference (a second run gives the same bits)"
_POISONED = re.compile(r"illegal memory access|device-side assert|CUDA error|unspecified launch failure",
                       re.IGNORECASE)


def compared_status(ok: bool, reason: str, *, interpreted: bool, dtypes: dict[str, str]) -> tuple[str, str]:
    """The status of a record whose output was compared: PASS or FAIL, except a bf16 mismatch under the
    interpreter, which computes bf16 on raw bit patterns (kernels that upcast to fp32 are exact): it says nothing
    about the kernel, so it is NOT_RUN there and a GPU backend decides. On a GPU a mismatch is always FAIL."""
    if ok:
        return PASS, reason
    if interpreted and "bfloat16" in dtypes.values():
        return NOT_RUN, f"not run on the interpreter: bf16 arithmetic (it operates on bf16 bit patterns): {reason}"
    return FAIL, reason

def not_attached(module: ModuleType, path: str) -> dict[str, str]:
    """Kernel name -> why the TileIR configs the file's TileIR blocks add are not in its autotuner's list (a
    package's autotuner keeping its list fixed): read after the import, with the TileIR code on or off."""
    if not tileir_code_on():
        return {}
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    missing = {}
    for name in sorted(extended_autotuners(source)):
        tuner = find_autotuner(getattr(module, name, None))
        if tuner is None:
            missing[name] = "no autotuner found"
        elif not tileir_configs(tuner.configs):
            missing[name] = f"its autotuner ({type(tuner).__name__}) does not take new configs"
    return missing


def interpreted_duplicates(module: ModuleType, items: list[ConfigItem]) -> dict[int, int]:
    """Item index -> the earlier item it repeats under the interpreter: the same autotuner config's meta-parameters
    and pre-hook (what the interpreter computes with), the hints aside. Item 0 holds every autotuner's first config."""
    return _duplicates(module, items, _computed_with)


def _computed_with(name: str, config: Config) -> tuple[str, str, int]:
    return name, repr(sorted((getattr(config, "kwargs", None) or {}).items())), id(getattr(config, "pre_hook", None))


def dropped_hint_duplicates(module: ModuleType, items: list[ConfigItem]) -> dict[int, int]:
    """Item index -> the earlier item it repeats on PTX with the TileIR code forced on: the config Triton gets,
    its TileIR hints dropped or raised (`tileir_surface`), equal in every field Triton compiles with, so the same
    code. Item 0 holds every autotuner's first config."""
    return _duplicates(module, items, _compiled_with)


def _compiled_with(name: str, config: Config) -> tuple[Any, ...]:
    options = tuple(getattr(config, option, None) for option in ("num_warps", "num_stages", "num_ctas", "maxnreg"))
    return (*_computed_with(name, config), options, getattr(config, "ir_override", None))


def item_costs(module: ModuleType, items: list[ConfigItem]) -> list[float]:
    """Per item, its config's `compile_cost` (the deal's order across a case's jobs); an item that pins no config
    (the autotuner's own choice, a launch) counts as the costliest: it may compile any of them."""
    tuners = autotuners(module)
    costs = []
    for item in items:
        tuner = tuners.get(item.autotuner) if item.pin and item.autotuner is not None else None
        if tuner is None or item.index >= len(tuner.configs):
            costs.append(math.inf)
            continue
        config = tuner.configs[item.index]
        costs.append(compile_cost(getattr(config, "kwargs", None) or {}, getattr(config, "num_warps", None)))
    return costs


def _duplicates(module: ModuleType, items: list[ConfigItem],
                key: Callable[[str, Config], tuple[object, ...]]) -> dict[int, int]:
    tuners = autotuners(module)
    seen: dict[Any, int] = {}
    for name, tuner in tuners.items():
        seen.setdefault(key(name, tuner.configs[0]), 0)
    found = {}
    for index, item in enumerate(items):
        if not item.pin or item.autotuner is None or item.autotuner not in tuners:
            continue
        computed = key(item.autotuner, tuners[item.autotuner].configs[item.index])
        if computed in seen:
            found[index] = seen[computed]
        else:
            seen[computed] = index
    return found


# Python's own words for a call whose arguments do not bind: what a kernel launched without the arguments its
# package's tuner binds raises before anything is compiled
_UNBOUND = re.compile(r"TypeError: \S+\(\) (missing \d+ required (positional|keyword-only) argument"
                      r"|got multiple values for argument|got an unexpected keyword argument)")


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

    def record(self, config: str, status: str, reason: str = "", provenance: Provenance | None = None,
               **measures: Unpack[Measures]) -> dict[str, Any]:
        case = self.case
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
                    status, reason = FAIL, raised
        note = "; ".join(filter(None, [stand_ins.note(self.scopes(), self.own_files()), self.noise_note,
                                       self.arithmetic_note()]))
        launched = provenance.kernels if provenance is not None else {}
        missing = {name: why for name, why in self.not_attached.items() if name in launched}
        if missing:  # only for kernels this record launched
            attached = "TileIR code not attached at import: " + "; ".join(
                f"{name} ({why})" for name, why in sorted(missing.items()))
            note = f"{note}; {attached}" if note else attached
        if note:
            reason = f"{reason}; {note}" if reason else note
        return asdict(record_for(self.case, self.backend.name, config, status, reason,
                                 provenance or Provenance(**asdict(self.base)), **measures))

    def arithmetic_note(self) -> str:
        """What the interpreter computes wrongly for this case's inputs (bf16 products), or ""."""
        if not self.backend.interpreted or "bfloat16" not in self.case.dtypes.values():
            return ""
        from tileiropt.harness.interpreter_probe import BF16_NOTE, bf16_products_wrong  # imports Triton

        return BF16_NOTE if bf16_products_wrong() else ""

    def run(self) -> bool:
        """Run the case; False when the worker must exit (the CUDA context is unusable)."""
        case, emit = self.case, self.emit
        stand_ins.begin()  # its records name the stand-ins its own code reached, not an earlier case's
        try:  # the reference first: with reference "original", a package's original is imported, then replaced
            with self.part("prepare"):
                prepared = self.prepare()
        except Exception as exc:
            self.emit_prepare_failure(exc, "reference")
            return not _POISONED.search(str(exc))
        try:
            with self.part("import"):
                module = self.load(case.path)
                self.not_attached = not_attached(module, case.path) if case.variant == "optimized" else {}
                entry = self.entry(module)
        except Exception as exc:
            self.emit_prepare_failure(exc, "import")
            return not _POISONED.search(str(exc))
        # a captured launch runs at its own config (its grid was computed for it)
        items = [ConfigItem(replay.label(case.launch), pin=False)] if case.launch else \
            config_items(module, self.best_config)
        emit("plan", id=case.id, labels=[item.label for item in items])
        same_as = interpreted_duplicates(module, items) if self.backend.interpreted else \
            dropped_hint_duplicates(module, items) if self.backend.name == TILEIR_CODE_ON_PTX.name else {}
        owner = owners(len(items), same_as, case.shards, item_costs(module, items) if case.shards > 1 else None)
        launched_known: set[str] | None = None
        for index in range(case.start_item, len(items)):
            if owner[index] != case.shard:  # another job of this case runs it (`validate.shards`)
                continue
            item = items[index]
            if item.autotuner is not None and launched_known is not None and item.autotuner not in launched_known:
                emit("skip", id=case.id, item=index)
                continue
            emit("start", id=case.id, item=index)
            if index in same_as:  # it would compute, or compile, exactly what that item did
                earlier = items[same_as[index]].label
                reason = (f"{SAME_ON_INTERPRETER} `{earlier}` (its record above); num_warps, num_stages, num_ctas "
                          "and occupancy do not change what the interpreter computes") if self.backend.interpreted \
                    else (f"{SAME_ON_PTX} `{earlier}` (its record above); occupancy and 2-CTA mode are TileIR's, "
                          "num_warps only a hint to it, and PTX compiles the same code for both")
                emit("record", id=case.id, item=index, record=self.record(item.label, NOT_RUN, reason))
                continue
            if self.unpinnable and item.pin and item.autotuner == self.unpinnable[0]:
                emit("record", id=case.id, item=index, record=self.record(item.label, NOT_RUN, (
                    f"not run: {self.unpinnable[1]}; its record above ran it as the user runs it")))
                continue
            with self.part("items"):
                record, launched, poisoned = self.run_item(module, entry, item, prepared)
                if record["status"] in (FAIL, ERROR) and not poisoned:
                    record, launched, poisoned = self.as_the_user_runs_it(module, entry, item, prepared, record,
                                                                          (launched, poisoned))
            if launched is not None:
                launched_known = launched
            if item.autotuner is not None and launched is not None and item.autotuner not in launched:
                emit("skip", id=case.id, item=index)
                continue
            emit("record", id=case.id, item=index, record=record)
            if poisoned:
                return False
        emit("job_done", id=case.id, parts=self.parts)
        return True

    def as_the_user_runs_it(self, module: ModuleType, entry: EntryCall, item: ConfigItem, prepared: dict[str, Any],
                            record: dict[str, Any], ran: tuple[set[str] | None, bool]
                            ) -> tuple[dict[str, Any], set[str] | None, bool]:
        """A project entry's config item whose launch, pinned to a package's own autotuner (a subclass with its own
        `run`), could not even bind its kernel's arguments (`_UNBOUND`: the tuner binds arguments of its own, which a
        launch of its kernel alone lacks): run once more as the user runs it, the autotuner choosing. When that
        passes, the pinning was the tool's failure: the record is that run's, saying so, and the autotuner's other
        items are not run (`unpinnable`: none of them can be pinned either). A config that ran and gave wrong values,
        or did not compile, keeps its own failure."""
        tuners = autotuners(module)
        name = item.autotuner or next((n for n, t in tuners.items() if own_run(t)), None)  # item 0: every first
        tuner = tuners.get(name or "")
        if not item.pin or self.case.launch is not None or tuner is None or not own_run(tuner) or \
                record["status"] != ERROR or not _UNBOUND.search(record["reason"] or ""):
            return (record, *ran)  # a config that ran and failed, or failed to compile, is that config's failure
        again, launched, poisoned = self.run_item(module, entry, ConfigItem(AUTOTUNED, pin=False), prepared)
        if again["status"] != PASS:
            return (record, *ran)
        why = (f"{type(tuner).__name__}, the package's own autotuner of {name}, cannot be pinned to one "
               f"config from outside (pinned, {record['reason'] or record['status']})")
        self.unpinnable = (name or "", why)
        again["reason"] = "; ".join(filter(None, [f"run as the user runs it, its autotuner choosing: {why}",
                                                  again.get("reason")]))
        return again, launched, poisoned

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
        status, reason = self.classify_failure(exc, stage)
        self.emit("record", id=self.case.id, item=None, record=self.record(PREPARE, status, reason))
        self.emit("job_done", id=self.case.id, parts=self.parts)

    def own_files(self) -> list[str]:
        """The case's kernel files: the validated one and its original."""
        return [str(Path(p).resolve()) for p in (self.case.path, self.case.original_path) if p]

    def scopes(self) -> list[str]:
        """The files (and, for a package, its folder) whose skipped and emulated calls this case's records name."""
        case = self.case
        folder = package_folder(Path(case.original_path or case.path), case.module)
        return self.own_files() + ([str(folder)] if folder else [])

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

    def prepare(self) -> dict[str, Any]:
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
            return {"inputs": inputs, "expected": expected, "reference_inputs": used, "structure": expected,
                    "check_dtype": True}
        if self._own_reference():
            return {"inputs": inputs, "expected": OWN_RUN, "key": key}
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
        return {"inputs": inputs, "expected": expected, "reference_inputs": used,
                "structure": structure, "check_dtype": check_dtype}

    def classify_failure(self, exc: BaseException, stage: str) -> tuple[str, str]:
        """(status, reason) of an exception raised at `stage` ("import", "reference" or "kernel"): NOT_RUN
        when this machine cannot run the code (no GPU, a limit of the interpreter), ERROR otherwise."""
        text = harness.describe_exception(exc)
        location = exception_location(exc)
        if location:
            text = f"{text} (at {location})"
        rejection = harness.tileir_rejection(exc)
        if rejection:  # before the interpreter's limits: the emulated compiler refuses inline asm there too
            return ERROR, f"{REJECTED_BY_TILEIR}: {rejection}"  # raised in the compiler: no line of the user's
        if harness.needs_cuda(exc):
            return NOT_RUN, f"not run: needs a GPU ({text})"
        limit = harness.interpreter_limit(exc) if self.backend.interpreted else None
        if limit:
            return NOT_RUN, f"not run on the interpreter: {limit} ({text})"
        if stage == "import":
            missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
            if missing:
                return ERROR, (f"cannot import the kernel file: it needs the module {missing!r}, which is not "
                               f"installed (pip install {missing.split('.')[0]}) ({text})")
            return ERROR, f"cannot import the kernel file: {text}"
        if stage == "reference":
            if self.case.reference == "original":
                return ERROR, f"the original kernel raised: {text}"
            return ERROR, f"{REFERENCE_RAISED}: {text}"
        return ERROR, text

    def run_item(self, module: ModuleType, entry: EntryCall, item: ConfigItem, prepared: dict[str, Any]
                 ) -> tuple[dict[str, Any], set[str] | None, bool]:
        """(record, autotuners launched or None when the call raised, CUDA context poisoned)."""
        case = self.case
        started = time.perf_counter()
        inputs = harness.clone_inputs(prepared["inputs"])
        output, failure = None, None
        with pinned_item(module, item), LaunchRecorder(module) as launches:
            try:
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
                return self.record(label, NOT_RUN, reason, provenance, seconds=seconds), None, False
            status, reason = self.classify_failure(failure, "kernel")
            record = self.record(label, status, reason, provenance, seconds=seconds)
            return record, None, bool(_POISONED.search(str(failure)))

        if prepared["expected"] is OWN_RUN:  # the original's own run: kept as the reference of the later cases
            reference_cache.save(self.reference_folder, prepared["key"], output, inputs)
            return self.record(label, PASS, OWN_RUN_REASON, provenance, seconds=time.perf_counter() - started), \
                launches.autotuners, False
        expected, structure = prepared["expected"], prepared["structure"]
        path = "out"
        if output is None and expected is None:  # in-place kernel and reference: compare the inputs
            output, expected, structure = inputs, prepared["reference_inputs"], None
        elif output is None:  # an in-place kernel: its output is the one input it wrote
            written = harness.written_inputs(prepared["inputs"], inputs)
            if len(written) == 1:
                path = f"{written[0]} (written in place)"
                output = inputs[written[0]]
        problem = harness.check_structure(output, structure, path, check_dtype=prepared["check_dtype"]) \
            if structure is not None else None
        if problem:
            seconds = time.perf_counter() - started
            return self.record(label, FAIL, problem, provenance, seconds=seconds), launches.autotuners, False
        result = harness.compare(output, expected, case.atol, case.rtol, path)
        whose = ""
        if not result.ok and self.exact and path == "out":  # bit-exact expected: whose difference is it?
            result, whose = self.second_look(output, expected, prepared, path, result)
            if whose.startswith(PINNING_ERROR):
                return self.record(label, ERROR, whose, provenance, seconds=time.perf_counter() - started), \
                    launches.autotuners, False
        seconds = time.perf_counter() - started
        reason = "; ".join(filter(None, [result.reason, whose]))
        if provenance.fallback:
            note = fallback_note(provenance.compiled_backend, self.backend.expected_backend, provenance)
            if note is not None:  # always, where `provenance.fallback` is set (see `provenance`)
                reason = f"{reason}; {note}" if reason else note
        status, reason = compared_status(result.ok, reason, interpreted=self.backend.interpreted,
                                         dtypes=case.dtypes)
        record = self.record(label, status, reason, provenance, max_abs=result.max_abs,
                             max_rel=result.max_rel, mismatches=result.mismatches, elements=result.elements,
                             first_mismatch=result.first_mismatch, mismatch_in=result.mismatch_in, seconds=seconds)
        return record, launches.autotuners, False

    def second_look(self, output: object, expected: object, prepared: dict[str, Any], path: str,
                    result: harness.Comparison) -> tuple[harness.Comparison, str]:
        """A replay expected bit-exact differs: (the comparison to keep, whose difference it is). The original runs
        once more on the same inputs: if it differs from itself, the kernel disagrees with itself (a race, an
        order of updates not fixed) and the comparison is within twice its own spread; if it does not and the
        kernel's code is the same in both files, the difference is the tool's replay, never the optimized file's
        (a reason starting with PINNING_ERROR). Otherwise the comparison stands."""
        case = self.case
        try:
            spread = own_spread(self.original_call(), expected, prepared["inputs"], case)
        except Exception:  # noqa: BLE001 - no second look: the first comparison stands
            return result, ""
        if spread > 0:
            widened = harness.compare(output, expected, 2 * spread, 0.0, path)
            return widened, (f"the kernel disagrees with itself: the original run twice on the same inputs differs "
                             f"by up to {spread:.3g}; compared within {2 * spread:.3g}")
        if case.variant == "optimized" and case.launch and same_kernel_code(case.path, case.original_path,
                                                                            case.launch.kernel):
            return result, (f"{PINNING_ERROR} {case.launch.kernel} alike on both sides: its code is the same in the "
                            f"optimized file and the original, which gives the same bits every run, yet the two "
                            f"replays differ ({result.reason})")
        return result, ""

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
        provenance.compiled_backend = launches.backend_summary()
        if self.backend.expected_backend == "tileir" and provenance.compiled_backend:
            provenance.fallback = fallback_note(provenance.compiled_backend, "tileir", provenance) is not None
        return provenance


def own_spread(function: Callable[..., Any], expected: object, inputs: dict[str, Any], case: Case) -> float:
    """How far the original, run once more on the same inputs, lands from its first run (`expected`; comparing
    reads the values, which waits for the device)."""
    again, _ = harness.evaluate_reference(function, "original", inputs, case.args, case.dims)
    return harness.compare(again, expected, 0.0, 0.0).max_abs or 0.0


def same_kernel_code(path: str, original: str | None, kernel: str) -> bool:
    """Whether the kernel's function is the same source in both files (or the files are byte-identical), the
    optimized one read as the gate off compiles it (an in-place rewrite `a if TILEIR else b` read as `b`)."""
    import ast

    if not original:
        return False
    try:
        texts = [Path(p).read_text(encoding="utf-8") for p in (path, original)]
        texts[0] = gate_off(texts[0]) if texts[0] != texts[1] else texts[0]
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
        return False
    if texts[0] == texts[1]:
        return True

    def source(text: str) -> str | None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        found = [ast.get_source_segment(text, node) for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef) and node.name == kernel]
        return found[0] if len(found) == 1 else None

    first = source(texts[0])
    return first is not None and first == source(texts[1])


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
        record = record_for(case, backend.name, NONE, NOT_RUN, f"not run: {blocked}", base)
        emit("record", id=case.id, item=None, record=record)
        emit("job_done", id=case.id, parts={})
        return True
    return CaseRunner(case, backend, bool(job.get("best_config")), base, emit, job.get("reference_cache")).run()
