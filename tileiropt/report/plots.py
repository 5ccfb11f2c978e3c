"""A picture of each kernel's timings over its size sweep, beside the report (`report/<kernel>.svg`).

Left: the median time of every row timed at two sizes or more (original and optimized on PTX, TileIR where it was
measured, torch's reference), per dtype set. Right: the optimized/original PTX ratio with its paired 95% interval
and the threshold band; a size proven by identical compiled code is drawn at 1 as "same code", not timed.

Drawn with matplotlib (an optional extra, `pip install 'tileiropt[plot]'`: the standard Python plotting library,
which writes a static SVG headless, as a Markdown report needs); without it the report has no pictures and says how
to get them. SVG: text, small, and the same file for the same records.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from tileiropt.report.model import Benchmark, Report

PLOT_FOLDER = "report"
INSTALL_HINT = "pip install 'tileiropt[plot]' for a picture of each kernel's sweep (matplotlib)"


def matplotlib_missing() -> str | None:
    """Why no plot can be drawn here (matplotlib is not installed), or None."""
    import importlib.util

    return None if importlib.util.find_spec("matplotlib") is not None else INSTALL_HINT


def plot_name(kernel: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", kernel).strip("_") or "kernel"


def sweep_series(b: Benchmark) -> dict[str, list[tuple[int, float]]]:
    """"<row label> (<dtypes>)" -> [(size, median ms)] of every row timed at two sizes or more."""
    series: dict[str, list[tuple[int, float]]] = {}
    for table in b.tables:
        if table.size is None:
            continue
        for line in table.lines:
            if isinstance(line.median_ms, (int, float)) and line.median_ms > 0:
                series.setdefault(f"{line.label} ({table.dtypes})", []).append((table.size, float(line.median_ms)))
    return {label: sorted(points) for label, points in series.items() if len(points) >= 2}


def draw(b: Benchmark, kernel: str, folder: Path) -> str | None:
    """Write the kernel's plot under `folder`/report; its path relative to `folder`, or None (no sweep, or no
    matplotlib)."""
    series = sweep_series(b)
    if not series or matplotlib_missing():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "tileiropt"  # the same records draw the same file
    figure, (times, ratios) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, points in series.items():
        times.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    times.set_xscale("log", base=2)
    times.set_yscale("log")
    times.set_xlabel("size")
    times.set_ylabel("median time (ms)")
    times.set_title(f"{kernel}: time over the sweep")
    times.legend(fontsize=7)
    _ratios(ratios, b.ptx_ratios)
    figure.tight_layout()
    relative = Path(PLOT_FOLDER) / f"{plot_name(kernel)}.svg"
    (folder / PLOT_FOLDER).mkdir(parents=True, exist_ok=True)
    figure.savefig(folder / relative, format="svg", metadata={"Date": None})
    plt.close(figure)
    return relative.as_posix()


def _ratios(axes: Axes, ratios: list[dict[str, Any]]) -> None:
    """Optimized/original PTX ratio by size and dtypes, with the paired 95% interval; "same code" at 1."""
    by_dtypes: dict[str, list[dict[str, Any]]] = {}
    for r in ratios:
        if r.get("size") is not None:
            by_dtypes.setdefault(str(r.get("dtypes")), []).append(r)
    threshold = next((r["paired"]["threshold"] for r in ratios if r.get("paired")), 0.05)
    axes.axhspan(1 - threshold, 1 + threshold, color="0.9", label=f"1 +- {threshold:g}")
    axes.axhline(1.0, color="0.5", linewidth=0.8)
    for dtypes, rows in by_dtypes.items():
        rows = sorted(rows, key=lambda r: r["size"])
        timed = [r for r in rows if (r.get("paired") or {}).get("verdict") != "same code"]
        same = [r for r in rows if r not in timed]
        if timed:
            low = [r["ratio"] - (r["paired"] or {}).get("ci_low", r["ratio"]) if r.get("paired") else 0 for r in timed]
            high = [(r["paired"] or {}).get("ci_high", r["ratio"]) - r["ratio"] if r.get("paired") else 0
                    for r in timed]
            axes.errorbar([r["size"] for r in timed], [r["ratio"] for r in timed], yerr=[low, high], marker="o",
                          capsize=3, label=f"optimized/original ({dtypes})")
        if same:
            axes.scatter([r["size"] for r in same], [1.0] * len(same), marker="s",
                         label=f"same code, not timed ({dtypes})")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("size")
    axes.set_ylabel("optimized / original on PTX")
    axes.set_title("paired ratio, 95% interval")
    axes.legend(fontsize=7)


def draw_plots(report: Report, folder: Path) -> None:
    """Draw each swept kernel's picture under `folder`; its benchmark's `plot` is the link, or why there is none."""
    for kernel in report.kernels:
        if sweep_series(kernel.benchmark):
            kernel.benchmark.plot = draw(kernel.benchmark, kernel.name, folder) or matplotlib_missing() or ""
