"""Benchmark records: one row per (kernel, variant, backend, dtypes, size), saved for `report`.

`BenchRun` is what `tileiropt bench` writes to ``<artifacts>/bench.json``; `load_bench_run`
reads it back. The pure functions here -- statistics, derived metrics, speedups, the fallback
flag -- take recorded timings and never touch a GPU, so they are tested with fixtures. The
schema is documented in ``docs/bench.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from tileiropt.contract.job_timing import JobTiming, timings_from_list
from tileiropt.contract.store import Store
from tileiropt.errors import ExitCode
from tileiropt.harness.provenance import Provenance, fallback_note
from tileiropt.output import dataclass_from_dict, load_record_file
from tileiropt.project.metric_expressions import evaluate
from tileiropt.schema import ERROR, PASS, SCHEMA_VERSION, Cause, StrEnum, count_statuses, read_cause, read_status

if TYPE_CHECKING:
    from typing_extensions import Unpack

BENCH_FILE = "bench.json"

# Statuses (tileiropt.schema): PASS: measured; ERROR: it could not be timed (import error, exception,
# timeout, crash); NOT_RUN: it cannot run here (no GPU, TileIR not ready, no optimized file, no torch reference).

ORIGINAL, OPTIMIZED, REFERENCE = "original", "optimized", "reference"
PTX, TILEIR, TORCH = "ptx", "tileir", "torch"
# The optimized file timed under the tests' emulated nvtriton (runtime.backends.EMULATED_TILEIR): PTX's compiler
# underneath, so its time is never a TileIR time and its row has no speedup.
TILEIR_EMULATED = "tileir-emulated"

DO_BENCH = "do_bench"
CUDAGRAPH = "do_bench_cudagraph"
METHODS = ("auto", DO_BENCH, CUDAGRAPH)

NOISE_FLOOR = 0.03  # relative time differences below 3% are noise even when the spread is tighter
THRESHOLD = 0.05  # the safe-modification rule: an optimized file more than 5% slower on PTX is set aside
PAIRED_ROUNDS = 10
# Below this per-call time (launch-bound kernels, a few microseconds) two identical files measured in one process
# differed by up to 13% on an H100, reproducibly within the process and not across processes: not judged.
MIN_JUDGED_MS = 0.010

# Paired verdicts: the 95% interval of the optimized/original time ratio against 1 +- the threshold.
SLOWER, FASTER, SAME, UNCLEAR = "slower", "faster", "same", "unclear"
SAME_CODE = "same code"  # both sides compiled to the same PTX at the same config: proven, not timed

# (variant, backend) in the order rows are run and shown.
ROW_KINDS = ((ORIGINAL, PTX), (OPTIMIZED, PTX), (ORIGINAL, TILEIR), (OPTIMIZED, TILEIR), (REFERENCE, TORCH))
EMULATED_ROW_KINDS = ((OPTIMIZED, TILEIR_EMULATED),)  # only where the run is under the emulated nvtriton


def row_kinds(emulated: bool) -> tuple[tuple[str, str], ...]:
    """The (variant, backend) rows of a kernel, in order: with the emulated TileIR row under the emulator."""
    return ROW_KINDS[:4] + EMULATED_ROW_KINDS + ROW_KINDS[4:] if emulated else ROW_KINDS


ROW_LABELS = {
    (ORIGINAL, PTX): "PTX (ENABLE_TILE=0), original",
    (OPTIMIZED, PTX): "PTX (ENABLE_TILE=0), optimized",
    (ORIGINAL, TILEIR): "TileIR (ENABLE_TILE=1), original",
    (OPTIMIZED, TILEIR): "TileIR (ENABLE_TILE=1), optimized",
    (OPTIMIZED, TILEIR_EMULATED): "emulated TileIR (not the TileIR compiler), optimized",
    (REFERENCE, TORCH): "torch reference",
}

SHORT_LABELS = {
    (ORIGINAL, PTX): "original PTX",
    (OPTIMIZED, PTX): "optimized PTX",
    (ORIGINAL, TILEIR): "original TileIR",
    (OPTIMIZED, TILEIR): "optimized TileIR",
    (OPTIMIZED, TILEIR_EMULATED): "optimized emulated TileIR",
    (REFERENCE, TORCH): "torch reference",
}


@dataclass
class Timing:
    """Kernel time over many runs (milliseconds), and how it was measured."""

    method: str  # DO_BENCH or CUDAGRAPH
    median_ms: float
    p20_ms: float | None = None
    p80_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    mean_ms: float | None = None
    samples: int | None = None  # timings behind the statistics (None when Triton only gave quantiles)
    warmup_ms: float | None = None
    rep_ms: float | None = None
    input_sets: int = 1  # input sets rotated between runs (more than one when the tensors fit in L2)
    l2_flush: bool = False  # do_bench clears L2 before every run; CUDA-graph replays do not
    note: str = ""  # e.g. why the CUDA-graph variant was not used
    reused_from: str = ""  # not measured: the row whose timing this is (the same PTX code at the same config)

    @property
    def spread(self) -> float | None:
        """(p80 - p20) / median: the relative noise of this measurement."""
        if self.p20_ms is None or self.p80_ms is None or not self.median_ms:
            return None
        return (self.p80_ms - self.p20_ms) / self.median_ms


@dataclass
class PairedTiming:
    """Original (A) and optimized (B) timed in turns in one process on one GPU: rounds of A then B, then B then
    A (ABBA), each time a short benchmark; the ratio is B/A per round, summarised on a log scale."""

    rounds: int
    a_ms: list[float]  # per-round medians of the original
    b_ms: list[float]  # per-round medians of the optimized
    ratio: float  # median of b/a over the rounds
    ci_low: float  # distribution-free 95% interval of that median (order statistics of the round ratios)
    ci_high: float
    threshold: float
    verdict: str  # SLOWER | FASTER | SAME | UNCLEAR
    method: str = ""  # DO_BENCH or CUDAGRAPH, as the original row chose
    gpu: dict[str, Any] = field(default_factory=dict)  # SM clock, power, throttle reasons before and after
    note: str = ""  # why the verdict is UNCLEAR although the interval is narrow (too short a kernel to judge)
    planned_rounds: int = 0  # the ceiling; more than `rounds` when an interim look decided (`sequential_looks`)


def paired_ratio(a_ms: list[float], b_ms: list[float], threshold: float = THRESHOLD,
                 k: int | None = None) -> tuple[float, float, float, str]:
    """(ratio, ci_low, ci_high, verdict) of B/A from per-round times: the median of the per-round ratios and a
    distribution-free 95% interval for it (order statistics), so one disturbed round (a clock change) does not
    widen it. A difference is real only when the whole interval lies beyond 1 +- threshold: SLOWER above, FASTER
    below; SAME when it lies within; else UNCLEAR. Kernels faster than MIN_JUDGED_MS per call are UNCLEAR
    whatever the interval (see `judged`). `k`: the order statistic of the interval (an interim look of
    `sequential_looks` uses a wider one); default: the 95% one."""
    ratios = sorted(b / a for a, b in zip(a_ms, b_ms) if a > 0 and b > 0)
    if not ratios:
        raise ValueError("no positive paired timing")
    n = len(ratios)
    middle = ratios[n // 2] if n % 2 else math.sqrt(ratios[n // 2 - 1] * ratios[n // 2])
    k = _order_statistic(n) if k is None else k
    low, high = ratios[k - 1], ratios[n - k]
    if not judged(a_ms):
        verdict = UNCLEAR
    elif low > 1 + threshold:
        verdict = SLOWER
    elif high < 1 - threshold:
        verdict = FASTER
    elif low >= 1 - threshold and high <= 1 + threshold:
        verdict = SAME
    else:
        verdict = UNCLEAR
    return middle, low, high, verdict


def _order_statistic(n: int) -> int:
    """The largest k (1-based) such that [x_(k), x_(n+1-k)] holds the median with at least 95% probability
    (binomial, p = 1/2); 1 (the whole range) when n is too small for 95%."""
    best = 1
    for k in range(1, n // 2 + 1):
        below = sum(math.comb(n, i) for i in range(k)) / 2 ** n  # P(X < k)
        if 1 - 2 * below >= 0.95:
            best = k
    return best


def _coverage(n: int, k: int) -> float:
    """P([x_(k), x_(n+1-k)] holds the median) for n draws (binomial, p = 1/2)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n


def sequential_looks(rounds: int, level: float = 0.95) -> dict[int, int]:
    """The interim looks of a paired timing of `rounds` rounds: rounds done -> the order statistic k of the interval
    judged then; the timing stops at a look whose interval decides (SAME, SLOWER or FASTER). The final look keeps
    its 95% interval; the interim ones share what that leaves of the 5% false-alarm budget (Bonferroni), so the
    chance that an identical copy is ever called slower or faster stays within 5% however many looks there are.
    Looks come every ABBA block (2 rounds), from the first count whose interval can meet its share."""
    if rounds < 4:
        return {}
    final = _order_statistic(rounds)
    spare = (1 - level) - (1 - _coverage(rounds, final))  # the budget the final look does not use
    candidates = list(range(4, rounds - 1, 2))
    looks: dict[int, int] = {}
    while candidates:
        share = spare / len(candidates)
        feasible = [n for n in candidates if _coverage(n, 1) >= 1 - share]
        if feasible == candidates:
            for n in candidates:
                looks[n] = max(k for k in range(1, n // 2 + 1) if _coverage(n, k) >= 1 - share)
            break
        candidates = candidates[1:]  # the smallest cannot meet its share: drop it, which enlarges the others'
    return looks


def judged(a_ms: list[float]) -> bool:
    """Whether the original's per-call time is long enough for a paired verdict (MIN_JUDGED_MS)."""
    ordered = sorted(a_ms)
    return bool(ordered) and ordered[len(ordered) // 2] >= MIN_JUDGED_MS


@dataclass
class AutotuneInfo:
    """What one autotuner did on its first call with an empty cache."""

    name: str  # module attribute of the autotuner
    configs: int  # configs it held
    benchmarked: int | None = None  # configs it timed (after pruning); None when it did not benchmark
    best_config: str | None = None  # `Autotuner.best_config`, as a label
    seconds: float | None = None  # `Autotuner.bench_time`: benchmarking (and compiling) the configs


class RowValues(TypedDict, total=False):
    """What a row measured, given by keyword to `BenchItem.row` (the fields of `BenchRow` of that name)."""

    timing: Timing | None
    first_call_ms: float | None
    first_call_warm: bool
    autotune_ms: float | None
    autotune_source: str | None
    autotuners: list[AutotuneInfo]
    input_bytes: int | None
    output_bytes: int | None
    gpu_state: dict[str, Any]


@dataclass
class BenchRow:
    kernel: str
    variant: str  # ORIGINAL | OPTIMIZED | REFERENCE
    backend: str  # PTX | TILEIR | TORCH
    size: int | None  # the bench size given to the swept dims; None when the kernel sweeps nothing
    status: str  # PASS | ERROR | NOT_RUN
    reason: str = ""
    path: str = ""  # the kernel file, or the reference text for torch rows
    dims: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    timing: Timing | None = None
    first_call_ms: float | None = None  # first call, empty autotuner cache, the run's Triton cache: compile + tune
    first_call_warm: bool = False  # the kernels were compiled before in that worker (it validated them): tune only
    autotune_ms: float | None = None  # autotuning alone (sum of `bench_time`), else first call - median
    autotune_source: str | None = None  # "Autotuner.bench_time" | "first call - median"
    autotuners: list[AutotuneInfo] = field(default_factory=list)
    input_bytes: int | None = None
    output_bytes: int | None = None
    flops: float | None = None
    bytes: float | None = None
    bytes_source: str | None = None  # "project" (the `bytes` expression) | "estimate (inputs + outputs)"
    tflops: float | None = None
    gbps: float | None = None
    peak_tflops: float | None = None
    peak_gbps: float | None = None
    peak_key: str | None = None  # which matmul peak applies: "float16", "bfloat16", "tf32"
    pct_peak_compute: float | None = None
    pct_peak_bandwidth: float | None = None
    speedup: float | None = None  # original PTX median / this median (same kernel, dtypes, size)
    ratio_to_original: float | None = None  # optimized PTX median / original PTX median
    within_noise: bool | None = None  # ratio_to_original is 1.00 within the two rows' spread
    paired: PairedTiming | None = None  # optimized PTX rows: original and optimized timed in turns
    gpu_state: dict[str, Any] = field(default_factory=dict)  # SM clock, power, throttle reasons after timing
    source_sha256: str | None = None  # the file timed, as it was: `report` marks rows whose file changed
    provenance: Provenance = field(default_factory=Provenance)
    inputs: str | None = None  # the input key of the measurement (tileiropt.engine.resume): a re-run reuses it
    cause: Cause | None = None  # an errored or not-run row: whose failure it is (tileiropt.harness.blame)
    evidence: list[str] = field(default_factory=list)  # what the cause was told from

    @property
    def label(self) -> str:
        return ROW_LABELS.get((self.variant, self.backend), f"{self.backend}, {self.variant}")

    @property
    def short_label(self) -> str:
        return SHORT_LABELS.get((self.variant, self.backend), f"{self.variant} {self.backend}")

    @property
    def median_ms(self) -> float | None:
        return self.timing.median_ms if self.timing and self.status == PASS else None


@dataclass
class BenchKernel:
    """The project's description of a benchmarked kernel, so `report` needs no project file."""

    name: str
    path: str
    optimized_path: str
    entry: str
    reference: str | None = None
    flops: str | None = None
    bytes: str | None = None
    sizes: list[int] = field(default_factory=list)
    sweep: list[str] = field(default_factory=list)


@dataclass
class BenchRun:
    FILE: ClassVar[str] = BENCH_FILE
    JOURNAL: ClassVar[str] = "bench"  # its rows as they finish, superseded once it is saved

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchRun:
        """The record from its JSON document (every field's JSON type checked: TypeError names a wrong one)."""
        return run_from_dict(data)

    rows: list[BenchRow]
    kernels: list[BenchKernel] = field(default_factory=list)
    peaks: dict[str, Any] | None = None
    peaks_note: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    project: str | None = None
    started: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    reused: int = 0  # rows taken unchanged from an earlier run
    interrupted: bool = False  # Ctrl-C or SIGTERM: only what finished is here
    jobs: list[JobTiming] = field(default_factory=list)  # each job's cost (tileiropt.engine.engine)
    schema_version: int = SCHEMA_VERSION  # the one schema key of every record and --json output

    def counts(self) -> dict[str, int]:
        return count_statuses(self.rows)

    def exit_code(self) -> ExitCode:
        """1 when a row errored, 3 when no row could be timed (no GPU), else 0."""
        counts = self.counts()
        if counts[ERROR]:
            return ExitCode.FAILED
        if counts[PASS] == 0:
            return ExitCode.NOT_RUN
        return ExitCode.OK


# --------------------------------------------------------------------------- statistics


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile (as numpy and torch.quantile compute it) of sorted values."""
    if not sorted_values:
        raise ValueError("no values")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


class TimingSettings(TypedDict, total=False):
    """How a timing was taken, given by keyword to `summarize` (the fields of `Timing` of that name)."""

    warmup_ms: float | None
    rep_ms: float | None
    input_sets: int
    l2_flush: bool
    note: str


def summarize(samples: list[float], method: str, **extra: Unpack[TimingSettings]) -> Timing:
    """Median, 20th/80th percentiles, min, max and mean of per-run times in milliseconds."""
    values = sorted(float(v) for v in samples)
    if not values:
        raise ValueError("no timings to summarize")
    return Timing(method=method, median_ms=quantile(values, 0.5), p20_ms=quantile(values, 0.2),
                  p80_ms=quantile(values, 0.8), min_ms=values[0], max_ms=values[-1],
                  mean_ms=sum(values) / len(values), samples=len(values), **extra)


QUANTILES = (0.0, 0.2, 0.5, 0.8, 1.0)


def summarize_quantiles(values: list[float], method: str, **extra: Unpack[TimingSettings]) -> Timing:
    """A Timing from Triton's answer to ``quantiles=QUANTILES`` (older Triton without "all")."""
    low, p20, median, p80, high = (float(v) for v in values)
    return Timing(method=method, median_ms=median, p20_ms=p20, p80_ms=p80, min_ms=low, max_ms=high, **extra)


def within_noise(ratio: float, a: Timing, b: Timing, floor: float = NOISE_FLOOR) -> bool:
    """Whether a time ratio of 1.00 is within the noise of the two measurements."""
    spreads = [s for s in (a.spread, b.spread) if s is not None]
    return abs(ratio - 1.0) <= max([floor, *spreads])


# --------------------------------------------------------------------------- derived metrics


def evaluate_expression(expression: str, dims: dict[str, int], shapes: dict[str, list[int]]) -> float:
    """A project's `flops`/`bytes` expression over the dims (by name) and the input shapes (lists), evaluated
    without `eval` and with bounded cost (see `tileiropt.project.metric_expressions`)."""
    return evaluate(expression, dims, shapes)


def compute_peak_key(dtypes: dict[str, str]) -> str | None:
    """The matmul peak a kernel is compared with: its first float input's dtype (float32 -> tf32,
    Triton's default for a float32 `tl.dot`)."""
    for dtype in dtypes.values():
        if dtype in ("float16", "bfloat16"):
            return dtype
        if dtype == "float32":
            return "tf32"
    return None


def derive_metrics(row: BenchRow, flops_expr: str | None, bytes_expr: str | None,
                   peaks: dict[str, Any] | None) -> list[str]:
    """Fill FLOPs, bytes, TFLOP/s, GB/s and % of peak of a timed row; return problems found."""
    problems: list[str] = []
    for name, expression in (("flops", flops_expr), ("bytes", bytes_expr)):
        if not expression:
            continue
        try:
            setattr(row, name, evaluate_expression(expression, row.dims, row.shapes))
        except Exception as exc:
            problems.append(f"{row.kernel}: cannot evaluate {name} = {expression!r}: {type(exc).__name__}: {exc}")
    if row.bytes is not None:
        row.bytes_source = "project"
    elif row.input_bytes is not None:
        row.bytes = float(row.input_bytes + (row.output_bytes or 0))
        row.bytes_source = "estimate (inputs + outputs)"
    median = row.median_ms
    if not median or median <= 0:
        return problems
    seconds = median * 1e-3
    if row.flops is not None:
        row.tflops = row.flops / seconds / 1e12
    if row.bytes is not None:
        row.gbps = row.bytes / seconds / 1e9
    if peaks:
        row.peak_key = compute_peak_key(row.dtypes)
        matmul = (peaks.get("matmul") or {}).get(row.peak_key or "", {})
        row.peak_tflops = matmul.get("tflops")
        row.peak_gbps = (peaks.get("copy") or {}).get("gbps")
        if row.tflops is not None and row.peak_tflops:
            row.pct_peak_compute = 100.0 * row.tflops / row.peak_tflops
        if row.gbps is not None and row.peak_gbps:
            row.pct_peak_bandwidth = 100.0 * row.gbps / row.peak_gbps
    return problems


def dtype_key(dtypes: dict[str, str]) -> str:
    """"bfloat16", or "x=bfloat16, w=float32" when the inputs differ."""
    distinct = sorted(set(dtypes.values()))
    if len(distinct) <= 1:
        return distinct[0] if distinct else "-"
    return ", ".join(f"{k}={v}" for k, v in dtypes.items())


def group_key(row: BenchRow) -> tuple[str, str, int | None]:
    return (row.kernel, dtype_key(row.dtypes), row.size)


def code_proof(rows: list[BenchRow]) -> str:
    """"PTX code identical: N kernel(s), M config(s) (not timed); P pair(s) timed where the code differs", or ""
    when no pair was proven by its compiled code."""
    same = [r for r in rows if r.paired is not None and r.paired.verdict == SAME_CODE]
    if not same:
        return ""
    kernels = {k for r in same for k in r.provenance.launched}
    configs = {(k, v.get("config")) for r in same for k, v in r.provenance.launched.items()}
    timed = sum(r.paired is not None and r.paired.verdict != SAME_CODE for r in rows)
    return (f"PTX code identical: {len(kernels)} kernel(s), {len(configs)} config(s) (not timed)"
            + (f"; {timed} pair(s) timed where the code differs" if timed else ""))


class Slower(StrEnum):
    """What an optimized row timed slower than the original's ran differently, told from each row's launches."""

    CONFIGS = "configs"  # its kernels ran at other configs
    CODE = "code"  # at the same configs, the compiled code differs
    NOT_KNOWN = "not known"  # which kernels, configs or code ran is not known for both rows: no evidence either way
    MACHINE = "machine"  # the same configs and compiled code, a captured launch alone: the machine
    OUTSIDE = "outside"  # the same kernels, configs and code, through an entry: its host work, or the machine

    @property
    def evidence_against_the_file(self) -> bool:
        """Whether the optimized file itself ran something else (or more around the same kernels)."""
        return self in (Slower.CONFIGS, Slower.CODE, Slower.OUTSIDE)


def slower_cause(original: BenchRow | None, optimized: BenchRow, captured: bool = True) -> tuple[Slower, str]:
    """Why an optimized row timed slower, from what each row's launches ran: the configs, else the compiled code.
    `captured`: the rows replay a captured launch (the kernel alone), not an entry whose wrapper may do more."""
    mine = optimized.provenance.launched
    theirs = original.provenance.launched if original is not None else {}
    if not mine or not theirs:
        return Slower.NOT_KNOWN, "which kernels and configs ran is not known for both rows"
    configs = {k: v.get("config") for k, v in theirs.items()}, {k: v.get("config") for k, v in mine.items()}
    if configs[0] != configs[1]:
        def said(found: dict[str, Any]) -> str:
            return "; ".join(f"{k}: {v}" for k, v in found.items())

        return Slower.CONFIGS, f"the configs differ (original {said(configs[0])}; optimized {said(configs[1])})"
    differs = [k for k in mine if mine[k].get("code") != theirs[k].get("code")]
    if differs:
        return Slower.CODE, f"same config, the compiled code differs: {', '.join(differs)}"
    if any(not v.get("code") for v in (*mine.values(), *theirs.values())):
        return Slower.NOT_KNOWN, "same config; the compiled code is not known (no PTX to compare)"
    return (Slower.MACHINE, THE_MACHINE) if captured else (Slower.OUTSIDE, OUTSIDE_THE_KERNELS)


THE_MACHINE = "same config and the same compiled code: the difference is the machine"
OUTSIDE_THE_KERNELS = ("the same kernels, configs and compiled code: the difference is outside the kernels (the "
                       "entry's own work around them) or the machine")


def compare_rows(rows: list[BenchRow]) -> list[str]:
    """Speedups against the original PTX row of the same kernel, dtypes and size; the
    optimized/original PTX ratio and whether it is 1.00 within noise. Returns warnings."""
    baselines = {group_key(r): r for r in rows if (r.variant, r.backend) == (ORIGINAL, PTX) and r.median_ms}
    warnings = []
    for row in rows:
        base = baselines.get(group_key(row))
        if base is None or not row.median_ms or base.timing is None or row.timing is None:
            continue
        if row.backend == TILEIR_EMULATED:  # PTX's compiler under the emulator: no TileIR speedup, ever
            continue
        row.speedup = base.timing.median_ms / row.timing.median_ms
        if (row.variant, row.backend) == (OPTIMIZED, PTX):
            row.ratio_to_original = row.timing.median_ms / base.timing.median_ms
            row.within_noise = within_noise(row.ratio_to_original, row.timing, base.timing)
            where = f"{row.kernel} ({dtype_key(row.dtypes)}, size {row.size})"
            if row.paired is not None:  # the paired measurement decides
                p = row.paired
                row.ratio_to_original = p.ratio
                row.within_noise = p.verdict == SAME_CODE or (p.verdict in (SAME, UNCLEAR)
                                                               and p.ci_low <= 1 + p.threshold)
                if p.verdict == SLOWER:
                    warnings.append(f"{where}: the optimized file is slower on PTX: {p.ratio:.3f}x the original "
                                    f"(95% interval {p.ci_low:.3f}-{p.ci_high:.3f}, above 1+{p.threshold:g})")
            elif not row.within_noise:
                warnings.append(f"{where}: optimized/original PTX time ratio {row.ratio_to_original:.3f} is outside "
                                "the noise; the PTX path should be unchanged -- rerun, and diff the files if it "
                                "persists")
    return warnings


def mark_fallback(row: BenchRow) -> None:
    """Flag a TileIR row whose kernels some other backend compiled (nvtriton can fall back to PTX)."""
    compiled = row.provenance.compiled_backend
    if row.backend not in (TILEIR, TILEIR_EMULATED) or not compiled:
        return
    note = fallback_note(compiled, "tileir", row.provenance)
    already = row.provenance.fallback  # marked before (a row read back): its reason says so already
    row.provenance.fallback = note is not None
    if note is not None and not already:
        row.reason = f"{row.reason}; {note}" if row.reason else note


# --------------------------------------------------------------------------- JSON


def row_from_dict(data: dict[str, Any]) -> BenchRow:
    data = dict(data)
    data["provenance"] = dataclass_from_dict(Provenance, data.get("provenance") or {})
    data["status"] = read_status(data.get("status"))
    data["cause"] = read_cause(data.get("cause"))
    data["timing"] = dataclass_from_dict(Timing, data["timing"]) if data.get("timing") else None
    data["autotuners"] = [dataclass_from_dict(AutotuneInfo, a) for a in data.get("autotuners") or []]
    data["paired"] = dataclass_from_dict(PairedTiming, data["paired"]) if data.get("paired") else None
    return dataclass_from_dict(BenchRow, data)


def kernel_from_dict(data: dict[str, Any]) -> BenchKernel:
    return dataclass_from_dict(BenchKernel, data)


def run_from_dict(data: dict[str, Any]) -> BenchRun:
    data = dict(data)
    data["jobs"] = timings_from_list(data.get("jobs") or [])
    data["rows"] = [row_from_dict(r) for r in data.get("rows", [])]
    data["kernels"] = [kernel_from_dict(k) for k in data.get("kernels", [])]
    return dataclass_from_dict(BenchRun, data)


def save_bench_run(run: BenchRun, artifacts: Path | str) -> Path:
    """Write `run` to ``<artifacts>/bench.json`` (atomically) and return the path; the journal of the rows
    as they finished is then superseded (removed)."""
    return Store(artifacts).save(BenchRun, run)


def load_bench_run(path: Path | str) -> BenchRun:
    """Read a `bench.json` (or the artifacts folder holding one)."""
    return load_record_file(path, BENCH_FILE, "rows", "benchmark records", "tileiropt bench", run_from_dict)


def peak_text(row: BenchRow, *, long: bool = False, missing: str = "") -> str:
    """The row's share of the measured peak: of the matmul peak (TFLOP/s) when the project gives FLOPs, else of
    the copy bandwidth; `long` names the peak in full (the report), else briefly (the terminal table)."""
    if row.pct_peak_compute is not None:
        return f"{row.pct_peak_compute:.0f}% " + (f"of {row.peak_key} matmul peak" if long else "matmul")
    if row.pct_peak_bandwidth is not None:
        return f"{row.pct_peak_bandwidth:.0f}% " + ("of copy bandwidth" if long else "copy")
    return missing


def rate_text(row: BenchRow, *, missing: str = "", mark_estimate: bool = False) -> str:
    """TFLOP/s when the project gives FLOPs, else GB/s (marked when the bytes are an estimate)."""
    if row.tflops is not None:
        return f"{row.tflops:.1f} TFLOP/s"
    if row.gbps is not None:
        estimated = mark_estimate and row.bytes_source != "project"
        return f"{row.gbps:.0f} GB/s" + (" (est. bytes)" if estimated else "")
    return missing
