"""`tileiropt check`: this machine's Triton, GPU, backend, tileiras and CUDA Tile IR release, and whether TileIR is
ready; with `--require-tileir`, exit 1 unless it is."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from tileiropt.check.environment import CheckReport, check_environment
from tileiropt.errors import ExitCode
from tileiropt.output import console, err_console, print_json


def check_command(*, as_json: bool = False, require_tileir: bool = False,
                  tileir_version: str | None = None) -> ExitCode:
    """Everything behind the command; returns the exit code."""
    report = check_environment(release=tileir_version)
    if as_json:
        print_json(report)
    else:
        print_check(report, console)
    if require_tileir and not report.tileir_ready:
        reasons = escape("; ".join(report.reasons))
        err_console.print(f"[bold red]error[/]: TileIR is not ready: {reasons}", soft_wrap=True)
        return ExitCode.FAILED
    return ExitCode.OK


# --------------------------------------------------------------------------- human output


def _shown(value: object) -> str:
    return "unset" if value is None else str(value)


def check_rows(report: CheckReport) -> list[tuple[str, str, str]]:
    """(key, value, note) rows of the human `check` table."""
    dist, gpu, env = report.triton, report.gpu, report.env
    if dist["location"] is None:
        triton_value, triton_note = "not installed", ""
    else:
        triton_value = f"{dist['version']} ({dist['name']})"
        triton_note = ("emulated TileIR backend: not the TileIR compiler" if dist.get("emulated") else
                       "TileIR backend present" if dist["tileir_backend"] else "no TileIR backend")
    installed = ", ".join(f"{n} {v}" for n, v in dist["versions"].items()) or "none"
    many = "more than one: keep only one" if len(dist["all"]) > 1 else ""
    cuda = report.torch["cuda"]
    if report.gpu["capability"]:
        gpu_note = f"sm_{gpu['capability'].replace('.', '')}, {gpu['sm_count']} SMs"
    else:
        gpu_note = "no CUDA device visible to torch"
    backend_note = ("queried only with a GPU" if gpu["capability"] is None
                    else report.active_backend_error or "triton.runtime.driver.active")
    tileiras = report.tileiras
    tileiras_note = (f"version {tileiras['version'] or 'unknown'}, via {tileiras['found_via']}"
                     if tileiras["path"] else "searched TRITON_TILEIRAS_PATH, CUDA_HOME/bin, PATH")
    return [
        ("python", report.python, ""),
        ("triton", triton_value, triton_note),
        ("triton distributions", installed, many),
        ("torch", _shown(report.torch["version"]), f"CUDA {cuda}" if cuda else "CPU build"),
        ("GPU", gpu["name"], gpu_note),
        ("CUDA Tile IR", f"{report.release['version']} ({report.release['origin']})",
         f"targets {', '.join(report.release['architectures'])}; Triton backend validated on "
         f"{', '.join(report.release['validated'])}"),
        ("targets this GPU", {True: "yes", False: "no", None: "n/a"}[report.release["targets_this_gpu"]],
         "whether this release compiles for the GPU above"),
        ("ENABLE_TILE", _shown(env.get("ENABLE_TILE")), "1 selects TileIR under nvtriton"),
        ("active backend", report.active_backend or ("n/a" if gpu["capability"] is None else "unknown"),
         backend_note),
        ("tileiras", tileiras["path"] or "not found", tileiras_note),
        ("TILEIR_ENABLE_APPROX", _shown(env.get("TILEIR_ENABLE_APPROX")), "approximate math; off by default"),
        ("TILEIR_ENABLE_FTZ", _shown(env.get("TILEIR_ENABLE_FTZ")), "flush-to-zero; off by default"),
        ("TRITON_TILEIR_RUNTIME_FALLBACK", _shown(env.get("TRITON_TILEIR_RUNTIME_FALLBACK")),
         report.release["fallback_variable"] and "1: silent PTX fallback (13.4+); off by default"
         or "no runtime fallback in this release"),
        ("TRITON_INTERPRET", _shown(env.get("TRITON_INTERPRET")), "1 runs kernels on the CPU interpreter"),
        ("TileIR ready", "yes" if report.tileir_ready else "no", "; ".join(report.reasons)),
    ]


def print_check(report: CheckReport, console: Console) -> None:
    """The `check` report as a Rich table, then warnings and the recommendation."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    table = Table(title="tileiropt check", show_header=True, header_style="bold")
    table.add_column("key", style="bold")
    table.add_column("value")
    table.add_column("note", style="dim")
    for key, value, note in check_rows(report):
        table.add_row(Text(key), Text(value), Text(note))
    console.print(table)
    for warning in report.warnings:
        console.print(f"[yellow]warning[/]: {escape(warning)}", soft_wrap=True)
    console.print(f"[bold]recommendation[/]: {escape(report.recommendation)}", soft_wrap=True)
