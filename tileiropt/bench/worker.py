"""A kernel's measurements in a worker of the job engine (`tileiropt.run.job_worker`).

A bench job, `{"kind": "bench", "id": 7, "items": [BenchItem, ...], "pairs": [[0, 1]], "rounds": 10,
"threshold": 0.05, "start_item": 0, "passed": []}`, times its items in order, then each original/optimized pair
(`pairs`, by item index) whose rows both timed, in turns, while the compiled kernels are still in memory. Items
are numbered rows first, then pairs: the item of pair p is `len(items) + p`. Besides the engine's own events:

    {"event": "plan", "id": 7, "labels": [...]}
    {"event": "start", "id": 7, "item": 0}              an item begins (the parent times it out)
    {"event": "row", "id": 7, "item": 0, "row": {...}}  its BenchRow
    {"event": "pair", "id": 7, "item": 3, "paired": {...}}   a pair's PairedTiming (or "error": "...")
    {"event": "job_done", "id": 7, "parts": {"import": ..., "inputs": ..., "first_call": ..., "measure": ...,
                                             "pairs": ...}}

Each item: import the file (or resolve the torch reference), build seeded inputs on the GPU, make one first call
with every autotuner's cache emptied (compile + autotune, timed apart), then time the steady state with
`triton.testing.do_bench` or its CUDA-graph variant, rotating among copies of the inputs when they fit in L2. A
kernel file's own bare top-level calls (its self-test) are not run when bench imports it: the capture or the
validation ran them. After an error that leaves the CUDA context unusable the worker exits; the parent starts a
new one for the remaining items.
"""

from __future__ import annotations

import inspect
import math
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from types import ModuleType
from typing import Any

from tileiropt.bench.gpu_state import gpu_state
from tileiropt.bench.items import BenchItem
from tileiropt.bench.records import (
    CUDAGRAPH,
    DO_BENCH,
    FASTER,
    MIN_JUDGED_MS,
    QUANTILES,
    REFERENCE,
    SAME,
    SAME_CODE,
    SLOWER,
    AutotuneInfo,
    BenchRow,
    PairedTiming,
    Timing,
    judged,
    mark_fallback,
    paired_ratio,
    sequential_looks,
    summarize,
    summarize_quantiles,
)
from tileiropt.capture import replay
from tileiropt.engine.worker_io import Emitter
from tileiropt.harness import harness, loading
from tileiropt.harness.autotuners import CONFIG_LIST, autotuners, config_label, mapped_cache, tuner_caches
from tileiropt.harness.backends import Backend
from tileiropt.harness.blame import KERNEL_STAGE, blame_exception
from tileiropt.harness.host_code import same_host_code
from tileiropt.harness.launches import LaunchRecorder
from tileiropt.harness.provenance import Provenance
from tileiropt.schema import ERROR, NOT_RUN, PASS

ROTATE_FACTOR = 3  # rotate enough input copies to cover 3x the L2 cache
MAX_INPUT_SETS = 512
POISONED = re.compile(r"illegal memory access|device-side assert|CUDA error|unspecified launch failure",
                      re.IGNORECASE)
CAPTURE_ERROR = re.compile(r"captur|StreamCapture", re.IGNORECASE)  # the graph capture failed, not the context


def poisons_worker(message: str) -> bool:
    """A CUDA error that leaves the context unusable; an invalidated graph capture does not."""
    return bool(POISONED.search(message)) and not CAPTURE_ERROR.search(message)


# --------------------------------------------------------------------------- timing (Triton version guards)


def _call_bench(function: Callable[..., Any], fn: Callable[[], Any], method: str, **kwargs: float) -> Timing:
    """Call a `triton.testing` benchmark function, asking for every sample where this Triton
    allows (``return_mode="all"``), else for quantiles."""
    params = inspect.signature(function).parameters
    known = {k: v for k, v in kwargs.items() if k in params}
    extra: dict[str, Any] = {"warmup_ms": known.get("warmup"), "rep_ms": known.get("rep")}
    if "return_mode" in params:
        try:
            result = function(fn, return_mode="all", **known)
        except AssertionError:  # a Triton whose return_mode has no "all"
            result = None
        if hasattr(result, "tolist"):
            result = result.tolist()
        if isinstance(result, (list, tuple)) and result:
            return summarize(list(result), method, **extra)
    if "quantiles" in params:
        return summarize_quantiles(list(function(fn, quantiles=list(QUANTILES), **known)), method, **extra)
    value = function(fn, **known)
    return Timing(method=method, median_ms=float(value), note="this Triton returns only one summary value "
                  "(its mean), kept as median_ms", **extra)


def run_do_bench(fn: Callable[[], Any], warmup_ms: float, rep_ms: float) -> Timing:
    """`triton.testing.do_bench`: events around each run, L2 cleared before each run."""
    from triton.testing import do_bench

    timing = _call_bench(do_bench, fn, DO_BENCH, warmup=warmup_ms, rep=rep_ms)
    timing.l2_flush = True
    return timing


def run_cudagraph(fn: Callable[[], Any], rep_ms: float) -> Timing:
    """`triton.testing.do_bench_cudagraph` on a side stream (older Triton refuses the default one)."""
    import torch
    from triton.testing import do_bench_cudagraph

    with torch.cuda.stream(torch.cuda.Stream()):
        timing = _call_bench(do_bench_cudagraph, fn, CUDAGRAPH, rep=rep_ms)
    torch.cuda.synchronize()
    return timing


def choose_method(requested: str, io_bytes: int, l2_bytes: int) -> str:
    """auto: the CUDA-graph variant when the tensors fit in L2 (short kernels, where launch gaps
    would dominate), do_bench (which clears L2 before each run) otherwise."""
    if requested in (DO_BENCH, CUDAGRAPH):
        return requested
    return CUDAGRAPH if io_bytes < l2_bytes else DO_BENCH


def input_set_count(io_bytes: int, l2_bytes: int) -> int:
    """How many copies of the inputs to rotate so that repeated runs do not just hit in L2."""
    if io_bytes <= 0 or io_bytes >= l2_bytes:
        return 1
    return max(1, min(MAX_INPUT_SETS, math.ceil(ROTATE_FACTOR * l2_bytes / io_bytes)))


def tensor_bytes(value: object) -> int:
    """Bytes of every tensor in a (nested) value."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


def rotating(sets: list[dict[str, Any]], call: Callable[[dict[str, Any]], Any]) -> Callable[[], None]:
    """A no-argument function that calls `call` on the next input set each time."""
    state = {"next": 0}

    def fn() -> None:
        inputs = sets[state["next"] % len(sets)]
        state["next"] += 1
        call(inputs)

    return fn


# --------------------------------------------------------------------------- one measurement


class Measurement:
    """Times one item in this process."""

    def __init__(self, item: BenchItem, base: Provenance, parts: dict[str, float] | None = None,
                 tuned: dict[str, dict[str, dict[Any, Any]]] | None = None,
                 twin: tuple[BenchItem, BenchRow] | None = None):
        """`tuned`: the autotuners' caches (autotuner name -> `tuner_caches`) the original's row left in this worker:
        the optimized file's autotuners start from them, so both sides run the config the original chose.
        `twin`: the original's item and row, timed in this worker: where this row compiles to the same code at the same
        config, its timing is the twin's (`reused_timing`), not measured again."""
        self.item, self.base = item, base
        self.tuned, self.twin = tuned, twin
        self.parts = parts if parts is not None else {}  # seconds by part: import, inputs, first_call, measure
        self.prepared: Prepared | None = None  # once `run` prepared it: a pair of this item reuses it

    def _add(self, part: str, began: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + time.perf_counter() - began

    def callable(self) -> tuple[Callable[[dict[str, Any]], Any], Any]:
        """(call taking the inputs, the kernel module or None for the torch reference)."""
        item = self.item
        if item.variant == REFERENCE:
            reference = harness.Reference.parse(item.reference or "").resolve()
            return (lambda inputs: reference(inputs, item.args, item.dims)), None
        module = loading.load_kernel_module(item.path, item.original_path or item.path, item.module, item.entry,
                                            item.search_paths, item.launch.bare_packages if item.launch else ())
        if item.launch:
            entry = replay.launcher(module, item.launch)
        else:
            entry = loading.entry_call(module, item.entry, item.call)
        return (lambda inputs: entry(inputs, item.args, item.dims)), module

    def prepare(self) -> Prepared:
        """Import, build inputs, make the first call (compile + autotune from empty caches), and choose how to
        time it: everything but the timing."""
        import torch

        item = self.item
        began = time.perf_counter()
        call, module = self.callable()
        self._add("import", began)
        began = time.perf_counter()
        if item.launch:
            inputs = replay.build_inputs(item.launch, item.seed, "cuda")
        else:
            inputs = harness.build_inputs(item.shapes, item.dtypes, seed=item.seed, ranges=item.ranges,
                                          device="cuda")
        self._add("inputs", began)
        warm = module is not None and compiled_before(module)
        tuners = autotuners(module) if module is not None else {}
        for tuner in tuners.values():  # the first call must tune from an empty cache
            tuner.cache = {}
            for attribute in ("bench_time", "configs_timings"):
                vars(tuner).pop(attribute, None)
        pinned_to = start_from(tuners, self.tuned) if self.tuned else {}
        provenance = Provenance(**asdict(self.base))
        torch.cuda.synchronize()
        started = time.perf_counter()
        if module is not None:
            with LaunchRecorder(module) as launches:
                output = call(inputs)
                torch.cuda.synchronize()
            provenance.kernels = dict(launches.kernels)
            provenance.launched = dict(launches.launched)
            provenance.compiled_backend = launches.backend_summary()
            launched = launches.autotuners
        else:
            output = call(inputs)
            torch.cuda.synchronize()
            launched = set()
        first_call_ms = (time.perf_counter() - started) * 1e3
        self._add("first_call", started)

        autotune = []
        for name, tuner in tuners.items():
            if name not in launched or name in pinned_to:  # pinned: it did not tune (the original's row did)
                continue
            timings = getattr(tuner, "configs_timings", None)
            best = getattr(tuner, "best_config", None)
            seconds = getattr(tuner, "bench_time", None)
            autotune.append(AutotuneInfo(name=name, configs=len(tuner.configs),
                                         benchmarked=len(timings) if isinstance(timings, dict) else None,
                                         best_config=config_label(best) if best is not None else None,
                                         seconds=float(seconds) if seconds is not None else None))

        input_bytes, output_bytes = tensor_bytes(inputs), tensor_bytes(output)
        del output
        l2_bytes = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        io_bytes = input_bytes + output_bytes
        count = input_set_count(io_bytes, l2_bytes)
        began = time.perf_counter()
        sets = [inputs] + [harness.clone_inputs(inputs) for _ in range(count - 1)]
        self._add("inputs", began)
        return Prepared(fn=rotating(sets, call), method=choose_method(item.method, io_bytes, l2_bytes),
                        input_sets=count, provenance=provenance, first_call_ms=first_call_ms, autotune=autotune,
                        input_bytes=input_bytes, output_bytes=output_bytes, call=call, sets=sets, warm=warm,
                        tuned={name: tuner_caches(tuner) for name, tuner in tuners.items()})

    def run(self) -> BenchRow:
        item = self.item
        prepared = self.prepared = self.prepare()
        timing = reused_timing(self.twin, item, prepared.provenance)
        if timing is None:
            began = time.perf_counter()
            timing = time_prepared(prepared, item.warmup_ms, item.rep_ms)
            self._add("measure", began)
        autotune = prepared.autotune
        seconds = [a.seconds for a in autotune if a.seconds is not None]
        autotune_ms, source = None, None
        if seconds:
            autotune_ms, source = 1e3 * sum(seconds), "Autotuner.bench_time"
        elif any(a.benchmarked is None and a.configs > 1 for a in autotune):
            autotune_ms, source = max(0.0, prepared.first_call_ms - timing.median_ms), "first call - median"
        row = item.row(PASS, "", prepared.provenance, timing=timing, first_call_ms=prepared.first_call_ms,
                       autotune_ms=autotune_ms, autotune_source=source, autotuners=autotune,
                       first_call_warm=prepared.warm,
                       input_bytes=prepared.input_bytes, output_bytes=prepared.output_bytes, gpu_state=gpu_state())
        mark_fallback(row)
        return row


def reused_timing(twin: tuple[BenchItem, BenchRow] | None, item: BenchItem, ran: Provenance) -> Timing | None:
    """The twin row's timing, said to be its, where this row ran the same code at the same config as the twin
    (`pair_same_code`: a captured launch, or an entry whose host code is the author's): timing it again would
    measure the same kernels on the same inputs. None where it must be measured."""
    if twin is None:
        return None
    twin_item, twin_row = twin
    if twin_row.timing is None or twin_row.status != PASS:
        return None
    same = pair_same_code(twin_item, item, (twin_row.provenance, ran))
    if same is None:
        return None
    note = f"the {twin_row.variant} row's timing, not measured again: {same.removesuffix(': not timed')}"
    return replace(twin_row.timing, note="; ".join(filter(None, [twin_row.timing.note, note])),
                   reused_from=twin_row.variant)


def compiled_before(module: ModuleType) -> bool:
    """Whether a kernel of `module` holds compiled code in this process already (a worker that validated the file
    before timing it): its first call then autotunes without compiling."""
    for value in list(vars(module).values()):
        function = value
        for _ in range(4):  # an autotuner or heuristics wrapper holds the JIT function in `.fn`
            if hasattr(function, "device_caches") or not hasattr(function, "fn"):
                break
            function = function.fn
        caches = getattr(function, "device_caches", None)
        if isinstance(caches, dict) and any(entry and entry[0] for entry in caches.values()
                                            if isinstance(entry, tuple)):
            return True
    return False


@dataclass
class Prepared:
    """A measurement ready to be timed: its no-argument call (rotating input copies) and what the first call
    showed."""

    fn: Callable[[], None]
    method: str
    input_sets: int
    provenance: Provenance
    first_call_ms: float
    autotune: list[AutotuneInfo]
    input_bytes: int
    output_bytes: int
    warm: bool = False  # the worker had compiled the file's kernels before (it validated them): no compile here
    call: Callable[[dict[str, Any]], Any] | None = None  # the call on one input set
    sets: list[dict[str, Any]] = field(default_factory=list)  # the input copies it rotates
    tuned: dict[str, dict[str, dict[Any, Any]]] = field(default_factory=dict)  # tuner_caches after the first call


def start_from(tuners: dict[str, Any], tuned: dict[str, dict[str, dict[Any, Any]]]) -> dict[str, int]:
    """Give each autotuner the caches of the original's autotuner of the same name (see `tuner_caches`: Triton's
    `cache` and a package autotuner's own): it runs the original's choice without tuning. Name -> entries given; a
    config it does not hold (it was not kept for PTX) leaves that cache to tune as usual."""
    given: dict[str, int] = {}
    for name, caches in tuned.items():
        tuner = tuners.get(name)
        if tuner is None:
            continue
        for attribute, cache in caches.items():
            mapped = mapped_cache(cache, getattr(tuner, "configs", []), tuned_configs=caches.get(CONFIG_LIST))
            if attribute != CONFIG_LIST and cache and mapped is not None:
                setattr(tuner, attribute, mapped)
                given[name] = given.get(name, 0) + len(mapped)
    return given


def time_prepared(prepared: Prepared, warmup_ms: float, rep_ms: float) -> Timing:
    """Time a prepared call with its method; an invalidated CUDA-graph capture falls back to do_bench."""
    import torch


    timing, note = None, ""
    if prepared.method == CUDAGRAPH:
        try:
            timing = run_cudagraph(prepared.fn, rep_ms)
        except Exception as exc:
            # an operation a graph cannot hold (a host sync, an allocation) invalidates the capture, not the
            # context: time it with do_bench; any other CUDA error poisons the worker
            if poisons_worker(str(exc)):
                raise
            torch.cuda.synchronize()
            note = f"CUDA graph capture failed, timed with do_bench instead ({harness.describe_exception(exc)})"
    if timing is None:
        timing = run_do_bench(prepared.fn, warmup_ms, rep_ms)
    timing.input_sets = prepared.input_sets
    timing.note = "; ".join(n for n in (timing.note, note) if n)
    return timing


def run_pair(a: BenchItem, b: BenchItem, base: Provenance, rounds: int, threshold: float,
             prepared: tuple[Prepared, Prepared] | None = None,
             ran: tuple[Provenance, Provenance] | None = None) -> PairedTiming:
    """Original (a) and optimized (b) in one process: both prepared (or as their rows prepared them: compiled,
    autotuned, inputs built), then timed in turns, ABBA, at most `rounds` times, on the same input tensors; each
    turn a short benchmark with the original's method. The rounds stop at an interim look whose interval already
    decides (`sequential_looks`: the false-alarm rate stays within 5%). `ran`: what the two rows compiled, where
    they were not kept prepared: the same code is then known before preparing both again (a launch of gigabytes
    takes longer to build than to time)."""
    if prepared is not None:
        ran = (prepared[0].provenance, prepared[1].provenance)
    same = pair_same_code(a, b, ran) if ran is not None else None
    if same is None and prepared is None:
        first = Measurement(a, base).prepare()
        second = Measurement(b, base, tuned=first.tuned).prepare()
        if ran is None:
            same = pair_same_code(a, b, (first.provenance, second.provenance))
    elif prepared is not None:
        first, second = prepared
    if same is not None:  # the compiler produced the same code at the same config: there is nothing to time
        return PairedTiming(rounds=0, a_ms=[], b_ms=[], ratio=1.0, ci_low=1.0, ci_high=1.0, threshold=threshold,
                            verdict=SAME_CODE, note=same, planned_rounds=rounds)
    second.method = first.method  # the same timing method for both, or the ratio compares methods
    if second.call is not None and len(second.sets) == len(first.sets):
        # the same tensors for both: placement and alignment of the inputs never differ between A and B
        second.fn, second.input_sets = rotating(first.sets, second.call), first.input_sets
    # each turn follows a turn of the other file on the same GPU, clocks up: a short warm-up, a fifth of the rows' rep
    warmup, rep = max(1.0, a.warmup_ms / 25), max(5.0, a.rep_ms / 5)
    looks = sequential_looks(rounds)
    before = gpu_state()
    a_ms: list[float] = []
    b_ms: list[float] = []
    k = None  # the order statistic of the interval reported: the final look's, or the interim look's that decided
    for index in range(rounds):
        turns = ((first, a_ms), (second, b_ms)) if index % 2 == 0 else ((second, b_ms), (first, a_ms))
        for turn, sink in turns:
            sink.append(time_prepared(turn, warmup, rep).median_ms)
        if index == 1 and not judged(a_ms):
            break  # launch-bound: no number of rounds makes the ratio judged (one ABBA block is reported)
        look = looks.get(index + 1)
        if look is not None and paired_ratio(a_ms, b_ms, threshold, look)[3] in (SAME, SLOWER, FASTER):
            k = look
            break
    ratio, low, high, verdict = paired_ratio(a_ms, b_ms, threshold, k)
    note = "" if judged(a_ms) else (f"{1e3 * sorted(a_ms)[len(a_ms) // 2]:.1f} us per call: launch-bound, below "
                                    f"{1e3 * MIN_JUDGED_MS:g} us a paired ratio is not judged")
    return PairedTiming(rounds=len(a_ms), a_ms=a_ms, b_ms=b_ms, ratio=ratio, ci_low=low, ci_high=high,
                        threshold=threshold, verdict=verdict, method=first.method,
                        gpu={"before": before, "after": gpu_state()}, note=note, planned_rounds=rounds)


def pair_same_code(a: BenchItem, b: BenchItem, ran: tuple[Provenance, Provenance]) -> str | None:
    """`same_code` where it decides the pair: a captured launch is the kernel alone, so the same code at the same
    config is the same work; an entry is too where its host code is the author's with the gate off
    (`same_host_code`), else its wrapper is timed."""
    if (a.launch and b.launch) or (not a.launch and not b.launch and same_host_code(b.path, a.path)):
        return same_code(*ran)
    return None


def same_code(a: Provenance, b: Provenance) -> str | None:
    """"PTX code identical: ..." when both sides launched the same kernels at the same configs and each compiled to
    the same PTX (debug locations aside); None when that cannot be said (a difference, or no code to compare)."""
    if not a.launched or a.launched.keys() != b.launched.keys():
        return None
    for name, ran in a.launched.items():
        other = b.launched[name]
        if not ran.get("code") or ran.get("code") != other.get("code") or ran.get("config") != other.get("config"):
            return None
    configs = "; ".join(f"{name}: {ran.get('config') or 'no meta-parameters'}" for name, ran in a.launched.items())
    return f"PTX code identical ({len(a.launched)} kernel(s) at the same config: {configs}): not timed"


# --------------------------------------------------------------------------- the job


class KeptPrepared:
    """The prepared measurements of a job's rows that a pair will time again, up to `KEEP_BYTES` of tensors (a
    sweep's largest sizes are prepared again by their pair instead of all staying in memory at once)."""

    KEEP_BYTES = 2 * 2**30

    def __init__(self) -> None:
        self.prepared: dict[int, Prepared] = {}
        self.bytes = 0

    @staticmethod
    def size(prepared: Prepared) -> int:
        return (prepared.input_bytes + prepared.output_bytes) * max(1, prepared.input_sets)

    def add(self, index: int, prepared: Prepared) -> None:
        if self.bytes + self.size(prepared) <= self.KEEP_BYTES:
            self.prepared[index] = prepared
            self.bytes += self.size(prepared)

    def pair(self, a: int, b: int) -> tuple[Prepared, Prepared] | None:
        """Both prepared measurements of a pair (given back: the pair is their last use), or None."""
        first, second = self.prepared.pop(a, None), self.prepared.pop(b, None)
        for done in (first, second):
            if done is not None:
                self.bytes -= self.size(done)
        return (first, second) if first is not None and second is not None else None


def both_ran(ran: dict[int, Provenance], a: int, b: int) -> tuple[Provenance, Provenance] | None:
    """What rows `a` and `b` compiled in this job, or None where either row ran in an earlier worker (a job
    resumed after its worker died): the pair then prepares both to know."""
    return (ran[a], ran[b]) if a in ran and b in ran else None


def labels(items: list[BenchItem], pairs: list[list[int]]) -> list[str]:
    """The job's items as the parent's records name them: rows, then pairs."""
    rows = [f"{item.variant} {item.backend}" + (f" size {item.size}" if item.size is not None else "")
            for item in items]
    return rows + [f"paired timing of {rows[b]}" for _, b in pairs]


def run_bench_job(job: dict[str, Any], backend: Backend, base: Provenance, emit: Emitter,
                  blocked: str | None) -> bool:
    """Time the job's items, then its pairs; False when the worker must exit (the CUDA context is unusable)."""
    ident = job["id"]
    items = [BenchItem.from_json(i) for i in job["items"]]
    pairs = [list(pair) for pair in job.get("pairs") or []]
    start = int(job.get("start_item") or 0)
    parts: dict[str, float] = {}
    emit("plan", id=ident, labels=labels(items, pairs))
    passed = set(job.get("passed") or [])
    paired = {index for pair in pairs for index in pair}
    kept = KeptPrepared()  # the rows' prepared measurements, for their pairs
    ran: dict[int, Provenance] = {}  # what each passed row compiled: a pair of the same code is not prepared again
    tuned: dict[int, dict[str, dict[str, dict[Any, Any]]]] = {}  # an original row's tuner_caches, for its optimized row
    rows: dict[int, BenchRow] = {}  # an original row that passed, for its optimized row (`reused_timing`)
    original_of = {b: a for a, b in pairs}
    measurement: Measurement | None  # dropped once its row is out (`kept` holds what a pair needs)
    with harness.MODULE_CALLS.only_definitions():  # a script's own program: the capture or the validation ran it
        for index in range(start, len(items)):
            item = items[index]
            emit("start", id=ident, item=index)
            if blocked:
                emit("row", id=ident, item=index, row=item.row(NOT_RUN, f"not run: {blocked}", base))
                continue
            original = original_of.get(index, -1)
            twin = (items[original], rows[original]) if original in rows else None
            measurement = Measurement(item, base, parts, tuned=tuned.get(original), twin=twin)
            try:
                row = measurement.run()
            except Exception as exc:
                rejection = harness.tileir_rejection(exc)
                blame = blame_exception(exc, [p for p in (item.path, item.original_path) if p], stage=KERNEL_STAGE)
                reason = f"rejected by the TileIR compiler: {rejection}" if rejection else \
                    f"{harness.describe_exception(exc)}; {blame.why}"
                emit("row", id=ident, item=index, row=item.row(ERROR, reason, base, cause=blame.cause,
                                                               evidence=blame.evidence))
                if POISONED.search(str(exc)):
                    return False
                continue
            if row.status == PASS:
                passed.add(index)
                ran[index] = row.provenance
                if measurement.prepared is not None and index in original_of.values():
                    tuned[index] = measurement.prepared.tuned
                    rows[index] = row
                if index in paired and measurement.prepared is not None:
                    kept.add(index, measurement.prepared)
            emit("row", id=ident, item=index, row=row)
            measurement = None  # its tensors live on only in `kept`, for a pair
        rounds, threshold = int(job.get("rounds", 10)), float(job.get("threshold", 0.05))
        for p, (a, b) in enumerate(pairs):
            index = len(items) + p
            if index < start or a not in passed or b not in passed:
                continue
            emit("start", id=ident, item=index)
            began = time.perf_counter()
            try:
                emit("pair", id=ident, item=index, paired=run_pair(items[a], items[b], base, rounds, threshold,
                                                                    kept.pair(a, b), both_ran(ran, a, b)))
            except Exception as exc:
                emit("pair", id=ident, item=index, error=harness.describe_exception(exc))
                if poisons_worker(str(exc)):
                    return False
            finally:
                parts["pairs"] = parts.get("pairs", 0.0) + time.perf_counter() - began
    emit("job_done", id=ident, parts=parts)
    return True
