"""The benchmark section of one kernel's report, from bench.json: a table per dtype and size (the seed's
rows: PTX, optimized PTX, TileIR, torch), the paired PTX ratios and the TileIR speedups.
"""

from __future__ import annotations

from tileiropt.bench.records import (
    BENCH_FILE,
    OPTIMIZED,
    ORIGINAL,
    PTX,
    REFERENCE,
    TILEIR,
    TILEIR_EMULATED,
    TORCH,
    BenchKernel,
    BenchRow,
    dtype_key,
)
from tileiropt.report.artifacts import Artifacts
from tileiropt.report.model import BenchLine, Benchmark, BenchTable
from tileiropt.report.sections import interrupted_phase, missing_record, stop_reason
from tileiropt.schema import NOT_RUN, PASS

# Benchmark table rows: (variant, backend) -> the label of the seed's table.
BENCH_LABELS = {
    (ORIGINAL, PTX): "PTX (ENABLE_TILE=0)",
    (OPTIMIZED, PTX): "PTX (ENABLE_TILE=0), optimized file",
    (OPTIMIZED, TILEIR): "TileIR (ENABLE_TILE=1)",
    (ORIGINAL, TILEIR): "TileIR (ENABLE_TILE=1), original file",
    (OPTIMIZED, TILEIR_EMULATED): "emulated TileIR (tileiropt's test emulator: PTX's compiler, not TileIR's)",
    (REFERENCE, TORCH): "torch reference",
}


def _line(row: BenchRow) -> BenchLine:
    label = BENCH_LABELS.get((row.variant, row.backend), row.label)
    if row.status == PASS and row.median_ms is not None:
        time = f"{row.median_ms:.4f}"
        speedup = f"{row.speedup:.2f}x" if row.speedup is not None else "—"
        if row.provenance.fallback:
            speedup += " (fallback: not TileIR)"
    elif row.status == NOT_RUN:
        time, speedup = row.reason or "not run", "—"
    else:
        time, speedup = f"error: {row.reason}", "—"
    return BenchLine(label, row.variant, row.backend, time, speedup, row.median_ms, row.speedup,
                     status=PASS if row.status == PASS and row.median_ms is not None else row.status)


def benchmark_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Benchmark:
    if artifacts.bench is None:
        return Benchmark(False, stop_reason(stopped, "bench") or missing_record(artifacts, BENCH_FILE, "bench"))
    rows = [r for r in artifacts.bench.rows if r.kernel == kernel.name]
    interrupted = interrupted_phase(artifacts.run)
    cut = f"not run: the run was interrupted during {interrupted}" if interrupted else ""
    if not rows:
        return Benchmark(False, stop_reason(stopped, "bench") or cut
                         or f"not run: no row for {kernel.name} in {BENCH_FILE}", peaks_note=artifacts.bench.peaks_note)
    order = list(BENCH_LABELS)
    reasons = {r.reason for r in rows}
    result = Benchmark(True, peaks_note=artifacts.bench.peaks_note)
    if all(r.status == NOT_RUN for r in rows) and len(reasons) == 1:
        # rows saying only why TileIR cannot run, where the interruption came before the PTX rows: that is why
        # nothing was timed, not the machine
        untimed = cut if cut and not any(r.backend == PTX for r in rows) else ""
        result.ran, result.reason = False, untimed or reasons.pop()
        seen: dict[tuple[str, str], BenchRow] = {}
        for row in rows:
            seen.setdefault((row.variant, row.backend), row)
        lines = [_line(seen[k]) for k in order if k in seen]
        sizes = sorted({r.size for r in rows if r.size is not None})
        result.tables = [BenchTable(", ".join(dict.fromkeys(dtype_key(r.dtypes) for r in rows)), None, {}, lines,
                                    sizes)]
        return result
    groups: dict[tuple[str, int | None], list[BenchRow]] = {}
    for row in rows:
        groups.setdefault((dtype_key(row.dtypes), row.size), []).append(row)
    for (dtypes, size), group in groups.items():
        group.sort(key=lambda r: order.index((r.variant, r.backend)) if (r.variant, r.backend) in order else 99)
        result.tables.append(BenchTable(dtypes, size, dict(group[0].dims), [_line(r) for r in group]))
        chosen = {r.variant: [a.best_config for a in r.autotuners] for r in group if r.backend == PTX}
        for row in group:
            if row.ratio_to_original is not None:
                paired = row.paired
                result.ptx_ratios.append({"dtypes": dtypes, "size": size, "ratio": row.ratio_to_original,
                                          "within_noise": row.within_noise,
                                          "same_config": chosen.get(OPTIMIZED) == chosen.get(ORIGINAL),
                                          "paired": None if paired is None else {
                                              "ci_low": paired.ci_low, "ci_high": paired.ci_high,
                                              "verdict": paired.verdict, "rounds": paired.rounds,
                                              "note": paired.note,
                                              "threshold": paired.threshold}})
            if (row.variant, row.backend) == (OPTIMIZED, TILEIR) and row.speedup is not None:
                result.tileir_speedups.append(row.speedup)
    result.details = [r for r in rows if r.status == PASS]
    return result
