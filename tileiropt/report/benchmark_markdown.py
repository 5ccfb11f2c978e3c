"""The benchmark section of a kernel's report in Markdown: the seed's table per size (or one table across
the sizes of a sweep, with a chart), the paired PTX verdict, and the details of every timing.
"""

from __future__ import annotations

from tileiropt.bench.records import BenchRow, dtype_key, peak_text, rate_text
from tileiropt.report.markdown_blocks import bullets, cell, table
from tileiropt.report.model import Benchmark, BenchTable
from tileiropt.schema import NOT_RUN, PASS


def _size_title(t: BenchTable) -> str:
    if t.sizes:
        return f"sizes {', '.join(map(str, t.sizes))} ({t.dtypes})"
    if t.size is None:
        return f"shapes as given ({t.dtypes})"
    dims = ", ".join(f"{k}={v}" for k, v in t.dims.items())
    return f"size {t.size}: {dims} ({t.dtypes})"


def _time(row: BenchRow) -> str:
    t = row.timing
    if t is None:
        return "n/a"
    if t.p20_ms is None or t.p80_ms is None:
        return f"{t.median_ms:.4f}"
    return f"{t.median_ms:.4f} ({t.p20_ms:.4f}-{t.p80_ms:.4f})"


def _first_call(row: BenchRow) -> str:
    parts = []
    if row.first_call_ms is not None:
        parts.append(f"first call {row.first_call_ms:.0f} ms" + (" (compiled earlier in the run)"
                                                                 if row.first_call_warm else ""))
    if row.autotune_ms is not None:
        chosen = "; ".join(a.best_config for a in row.autotuners if a.best_config)
        parts.append(f"autotune {row.autotune_ms:.0f} ms" + (f" -> {chosen}" if chosen else ""))
    return ", ".join(parts) or "n/a"


def _timing(row: BenchRow) -> str:
    t = row.timing
    if t is None:
        return "n/a"
    text = t.method + (f", {t.input_sets} input sets" if t.input_sets > 1 else "") + \
        (", L2 cleared per run" if t.l2_flush else "")
    return text + (f" ({t.note})" if t.note else "")


def _compiled(row: BenchRow) -> str:
    p = row.provenance
    text = p.compiled_backend or ("torch" if row.backend == "torch" else "unknown")
    return text + (" (FALLBACK)" if p.fallback else "")


def _paired_label(b: Benchmark) -> str:
    """How the ratio was measured: paired turns in one process (the tables' speedups are independent medians)."""
    if any(r.get("paired") for r in b.ptx_ratios):
        return (" (paired: both files timed in turns in one process, [95% interval, verdict]; the tables' speedups "
                "are independent medians)")
    return ""


def sweep_charts_md(b: Benchmark) -> list[str]:
    """A Mermaid line chart of the median time over the size sweep, per dtype set (GitHub renders it): one line
    per row that was timed at every size, named in order under the chart."""
    charts = []
    by_dtypes: dict[str, list] = {}
    for t in b.tables:
        if t.size is not None:
            by_dtypes.setdefault(t.dtypes, []).append(t)
    for dtypes, tables in by_dtypes.items():
        tables.sort(key=lambda t: t.size)
        if len(tables) < 2:
            continue
        labels = list(dict.fromkeys(line.label for t in tables for line in t.lines))
        series = []
        for label in labels:
            values = [next((line.median_ms for line in t.lines if line.label == label), None) for t in tables]
            if all(isinstance(v, (int, float)) and v > 0 for v in values):
                series.append((label, values))
        if not series:
            continue
        sizes = ", ".join(str(t.size) for t in tables)
        body = "\n".join(f"    line [{', '.join(f'{v:.4g}' for v in values)}]" for _, values in series)
        charts.append(f"```mermaid\nxychart-beta\n    title \"{cell(dtypes)}: median time (ms) by size\"\n"
                      f"    x-axis [{sizes}]\n    y-axis \"ms\"\n{body}\n```\n\n"
                      f"Lines, in order: {'; '.join(label for label, _ in series)}.")
    return charts


def benchmark_md(b: Benchmark) -> str:
    parts = []
    if not b.ran and not b.tables:
        return b.reason
    texts = {line.time for t in b.tables for line in t.lines}
    if len(texts) == 1 and all(line.status == NOT_RUN for t in b.tables for line in t.lines) and not b.details:
        sizes = ", ".join(str(s) for t in b.tables for s in (t.sizes if t.sizes else [t.size]) if s is not None)
        return f"{next(iter(texts))} (every row{', sizes ' + sizes if sizes else ''})"
    if b.plot.endswith(".svg"):
        parts.append(f"![time over the sweep and the paired PTX ratio]({b.plot})")
    elif b.plot:
        parts.append(f"No picture of the sweep: {b.plot}.")
    parts += sweep_charts_md(b)
    # a row that did not run for the same reason at every size is said once, not once per size
    same_everywhere = {}
    if len(b.tables) > 1:
        for label in dict.fromkeys(line.label for t in b.tables for line in t.lines):
            lines = [line for t in b.tables for line in t.lines if line.label == label]
            texts = {line.time for line in lines}
            if len(texts) == 1 and len(lines) == len(b.tables) and all(line.status != PASS for line in lines):
                same_everywhere[label] = next(iter(texts))
    if same_everywhere:
        parts.append("At every size:\n\n" + bullets([f"{label}: {text}" for label, text in same_everywhere.items()]))
    parts += _sweep_tables(b.tables, same_everywhere)
    same_code = [r for r in b.ptx_ratios if (r.get("paired") or {}).get("verdict") == "same code"]
    if same_code:
        parts.append(f"PTX code identical at {len(same_code)} of {len(b.ptx_ratios)} size(s): the original and the "
                     "optimized file compiled to the same PTX at the same config, proven by the compiled code and not "
                     "timed (" + "; ".join(dict.fromkeys(str(r["paired"].get("note") or "").removeprefix(
                         "PTX code identical ").removesuffix(": not timed") for r in same_code)) + ")")
    ptx_ratios = [r for r in b.ptx_ratios if r not in same_code]
    if ptx_ratios:
        ratios = ", ".join(f"{r['ratio']:.3f}" + (f" [{r['paired']['ci_low']:.3f}-{r['paired']['ci_high']:.3f}, "
                                                  f"{r['paired']['verdict']}]" if r.get("paired") else "")
                           + f" ({r['size']}, {r['dtypes']})" for r in ptx_ratios)
        slower = [r for r in ptx_ratios if (r.get("paired") or {}).get("verdict") == "slower"]
        if slower:
            threshold = slower[0]["paired"]["threshold"]
            parts.append(f"Optimized/original PTX time ratio{_paired_label(b)}: {ratios} -- {len(slower)} slower than "
                         "the original "
                         f"beyond {threshold:.0%} (the whole 95% interval): the optimized file is not kept")
            return "\n\n".join(parts + _details(b))
        outside = [r for r in ptx_ratios if not r["within_noise"]]
        differing = [r for r in outside if not r.get("same_config", True)]
        verdict = ("all within noise: the PTX path is unchanged" if not outside
                   else f"{len(outside)} outside the noise -- rerun; diff the files if it persists")
        if differing:
            verdict += (f" ({len(differing)} of them with a different config chosen by the autotuner, whose own"
                        " timing picked another of the same configs)")
        parts.append(f"Optimized/original PTX time ratio{_paired_label(b)}: {ratios} -- {verdict}")
    return "\n\n".join(parts + _details(b))


def _sweep_tables(tables: list[BenchTable], left_out: dict[str, str]) -> list[str]:
    """The seed's Backend / Time / Speedup table; over a size sweep, one table per dtype set with a column per
    size ("time ms, speedup"), instead of a table per size."""
    parts = []
    by_dtypes: dict[str, list[BenchTable]] = {}
    for t in tables:
        by_dtypes.setdefault(t.dtypes, []).append(t)
    for dtypes, group in by_dtypes.items():
        sized = sorted((t for t in group if t.size is not None), key=_known_size)
        if len(sized) < 2:
            for t in group:
                rows = [[line.label, line.time, line.speedup] for line in t.lines if line.label not in left_out]
                if rows:
                    parts.append(f"**{_size_title(t)}**\n\n" + table(["Backend", "Time (ms)", "Speedup"], rows))
            continue
        labels = [label for label in dict.fromkeys(line.label for t in sized for line in t.lines)
                  if label not in left_out]
        rows = []
        for label in labels:
            cells = []
            for t in sized:
                line = next((line for line in t.lines if line.label == label), None)
                if line is None:
                    cells.append("—")
                elif line.median_ms is None:
                    cells.append(line.time)
                else:
                    cells.append(f"{line.time}, {line.speedup}")
            rows.append([label, *cells])
        if rows:
            dims = "; ".join(f"{t.size}: " + ", ".join(f"{k}={v}" for k, v in t.dims.items()) for t in sized)
            parts.append(f"**{dtypes}** (time in ms, speedup against the original PTX; sizes {dims})\n\n"
                         + table(["Backend", *(str(t.size) for t in sized)], rows))
    return parts


def _known_size(t: BenchTable) -> int:
    """The size of a table of a sweep (the sweep keeps the tables that have one)."""
    assert t.size is not None
    return t.size


def _details(b: Benchmark) -> list[str]:
    """Every timed row in full, folded (GitHub renders <details> closed): the numbers behind the tables."""
    parts = []
    if b.details:
        rows = [[r.size if r.size is not None else "-", dtype_key(r.dtypes), r.short_label, _time(r),
                 rate_text(r, missing="n/a", mark_estimate=True),
                 peak_text(r, long=True, missing="n/a (no peak measured)"), _first_call(r), _timing(r), _compiled(r)]
                for r in b.details]
        peaks = f"\n\nPeaks: {b.peaks_note}" if b.peaks_note else ""
        parts.append(f"<details><summary>Details: {len(rows)} timed rows (median with 20th-80th percentiles, rate, "
                     "first call, timing method, compiler)</summary>\n\n" + table(
                         ["Size", "Dtypes", "Row", "Time (ms)", "Rate", "% of peak", "First call / autotune",
                          "Timing", "Compiled by"], rows) + peaks + "\n\n</details>")
    return parts
