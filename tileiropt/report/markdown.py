"""Render a `Report` as the Markdown of the TileIR workflow (seed format), from `templates/report.md`.

The template holds the document, then a marker line, then the section repeated per kernel; both
parts are filled with `str.format`. Every value comes from the records; what did not run says
"not run: <reason>".
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tileiropt.capture.interpreter_route import ROUTE_NOTE
from tileiropt.classify.lint_output import lines_text
from tileiropt.output import write_atomic
from tileiropt.project.template import read_template
from tileiropt.records.run import RunResult
from tileiropt.report.benchmark_markdown import benchmark_md
from tileiropt.report.library import library_md, never_launched_md
from tileiropt.report.markdown_blocks import (
    LAUNCH_NUMBER,
    bullets,
    cell,
    grouped_lines,
    one_line,
    table,
)
from tileiropt.report.model import Classification, KernelReport, Report, Section, Verdict
from tileiropt.report.plots import draw_plots
from tileiropt.report.sections import format_difference, interrupted_phase
from tileiropt.report.verdict import (
    ATTENTION,
    BUCKET_LABELS,
    BUCKETS,
    EMULATED,
    PROVEN,
    READY,
    UNPROVEN,
    UNTUNED,
    KernelVerdict,
)
from tileiropt.report.verdict_markdown import (
    CAUSE_LABELS,
    SHORT_CAUSES,
    VERDICT_TEXT,
    compatibility_md,
    verdict_details,
    verdict_line,
    verdict_word,
)
from tileiropt.schema import Cause

T = TypeVar("T")

TEMPLATE = "report.md"
KERNEL_MARKER = "<!-- tileiropt:kernel-section"


def split_template(text: str) -> tuple[str, str]:
    """(document, kernel section): the parts before and after the marker line."""
    head, marker, tail = text.partition(KERNEL_MARKER)
    if not marker:
        raise ValueError(f"template has no {KERNEL_MARKER!r} line")
    return head.rstrip() + "\n", tail.split("\n", 1)[1] if "\n" in tail else ""


# --------------------------------------------------------------------------- sections


def classification_md(c: Classification) -> str:
    if not c.ran:
        return c.reason
    lines = [f"- Kernel type: {c.kernel_type}",
             f"- Strategy for its class: {c.strategy} (what apply did for this kernel: Transformations Applied)"]
    kernels = ", ".join(f"`{k['kernel']}` (L{k['line']}, {k['class']}"
                        + (f", confidence {k['confidence']:.2f}" if isinstance(k.get("confidence"), (int, float))
                           else "") + ")"
                        for k in c.kernels)
    lines.append(f"- Triton kernels: {kernels}")
    if c.findings:
        lines.append("- TileIR lint:")
        groups: dict[tuple[str, str, str], list[Any]] = {}  # one line per kernel and rule with one fix
        for f in c.findings:
            groups.setdefault((f.kernel, f.code, f.hint), []).append(f)
        for same in groups.values():
            f = same[0]
            lines.append(f"  - {f.code} {f.severity} at `{f.kernel}` {lines_text([g.line for g in same])}: "
                         f"{f.message}" + (" (seen in the TTIR)" if f.via == "ir" else ""))
    else:
        lines.append("- TileIR lint: no finding")
    return "\n".join(lines)


def tileir_md(k: KernelReport, shared: dict[str, str] | None = None) -> str:
    main = k.tileir_validation
    if shared and "tileir" in shared and main.status not in VERDICT_TEXT:
        parts = ["The TileIR backend did not run here (the reason is given once, at the top of the report).\n"]
    else:
        parts = [compatibility_md(main) + "\n"]
    said = set(k.compatibility.notes)  # a note the compatibility section gave (shapes scaled, ...) is not repeated
    for title, extra in (("Emulated TileIR (nvtriton's Python surface emulated by tileiropt's tests, standard "
                          "Triton underneath), not the TileIR backend", k.tileir_emulated),
                         ("TileIR code forced on by tileiropt's harness, not the TileIR backend", k.tileir_code),
                         ("Optimized file with its gate off (the PTX path)", k.optimized_ptx)):
        if extra is None:
            continue
        line = f"- {title}: {verdict_line(extra)}"
        details = [d for d in verdict_details(extra) if d not in said]
        if details:
            line += "\n" + "\n".join(f"    - {d}" for d in details)  # 4 spaces: nested in every renderer
        parts.append(line)
    if k.coverage:
        parts.append("- Coverage of the rewritten kernels:\n" + "\n".join(f"    - {c.finding}" for c in k.coverage))
    return "\n".join(parts)


def section_md(s: Section) -> str:
    if not s.ran:
        return s.reason
    return bullets(s.lines) if s.lines else "- none"


def output_md(s: Section) -> str:
    return "\n".join(s.lines) if s.ran else f"File: {s.reason}"


# --------------------------------------------------------------------------- document parts


def environment_md(report: Report) -> str:
    env = report.environment
    if not env:
        return "not run: no check record (run `tileiropt check` or `tileiropt run`)"
    triton = env.get("triton") or {}
    torch = env.get("torch") or {}
    gpu = env.get("gpu") or {}
    rows = [
        ["triton", f"{triton.get('version')} ({triton.get('name')})"
                   + (", TileIR backend present" if triton.get("tileir_backend") else "")],
        ["torch", f"{torch.get('version')}" + (f", CUDA {torch['cuda']}" if torch.get("cuda") else ", CPU build")],
        ["GPU", gpu.get("name", "?") + (f" (sm_{str(gpu['capability']).replace('.', '')}, {gpu.get('sm_count')} SMs)"
                                        if gpu.get("capability") else "")],
        ["CUDA Tile IR release", _release_cell(env.get("release") or {})],
        ["TileIR ready", "yes" if env.get("tileir_ready") else "no: " + "; ".join(env.get("reasons") or [])],
        ["python", env.get("python", "?")],
    ]
    text = table(["", ""], rows)
    if env.get("recommendation"):
        text += f"\n\nRecommendation: {env['recommendation']}"
    return text


def _release_cell(release: dict) -> str:
    """The release every phase followed (lint, IR check, configs, twins) and what it targets."""
    if not release:
        return "not recorded"
    targets = ", ".join(release.get("architectures") or [])
    fallback = (f"; runtime fallback to PTX {'on' if release.get('fallback_on') else 'off'} "
                f"({release['fallback_variable']})" if release.get("fallback_variable") else "; no runtime fallback")
    return f"{release.get('version')} ({release.get('origin')}); targets {targets}{fallback}"


def short_reason(reason: str, limit: int = 48) -> str:
    """A "not run: ..." reason cut to fit a summary cell (the kernel's section has it in full)."""
    text = reason.split(" (", 1)[0]
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _bucket_cell(verdict: KernelVerdict) -> str:
    """"needs attention (tileiropt, exit 6)": the bucket, and for one that needs attention, whose failure and the
    exit code it gives."""
    label = BUCKET_LABELS.get(verdict.bucket, verdict.bucket)
    if verdict.bucket != ATTENTION:
        return label
    whose = f"{SHORT_CAUSES[verdict.cause]}, " if verdict.cause is not None else ""
    return f"{label} ({whose}exit {int(verdict.exit_code)})"


def _short_verdict(v: Verdict) -> str:
    """`PASSED (3.1e-03)`; `PASSED` alone where no difference was measured (the original as its own reference)."""
    if v.status in VERDICT_TEXT:
        if v.max_difference is None:
            return verdict_word(v)
        return f"{verdict_word(v)} ({format_difference(v.max_difference)})"
    return short_reason(v.reason or "not run")




def run_wide_not_run(report: Report) -> dict[str, str]:
    """What did not run for any kernel, for one reason the same for every kernel (the machine's, as a rule):
    "tileir" and "bench" -> that reason. Said once at the top, not once per kernel and per column."""
    shared: dict[str, str] = {}
    if not report.kernels:
        return shared
    tileir = {k.tileir_validation.reason for k in report.kernels}
    if all(k.tileir_validation.status not in VERDICT_TEXT for k in report.kernels) and len(tileir) == 1:
        shared["tileir"] = next(iter(tileir)) or "not run"
    bench = {k.benchmark.reason for k in report.kernels}
    if all(not k.benchmark.ran and not k.benchmark.details for k in report.kernels) and len(bench) == 1:
        shared["bench"] = next(iter(bench)) or "not run"
    return shared


SHARED_TEXT = {"tileir": "the TileIR backend", "bench": "the benchmarks"}


def _verdict_of(k: KernelReport) -> KernelVerdict:
    return k.verdict or KernelVerdict(ATTENTION, "no verdict in the records")


def summary_md(report: Report) -> str:
    if not report.kernels:  # no empty table: the first lines say why nothing was checked
        return "No kernel in the records: nothing was validated or timed (why: at the top)."
    shared = run_wide_not_run(report)
    rows: list[list[str]] = []
    ran: list[list[bool]] = []  # per cell: whether it says what ran (else why not)
    for k in report.kernels:
        b = k.benchmark
        if b.ptx_ratios:
            values = [r["ratio"] for r in b.ptx_ratios]
            ratio = f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"
        else:
            ratio = short_reason(b.reason) if b.reason else "n/a"
        if b.tileir_speedups:
            speedup = f"{min(b.tileir_speedups):.2f}x-{max(b.tileir_speedups):.2f}x"
        else:
            tileir_lines = [line for t in b.tables for line in t.lines if line.label == "TileIR (ENABLE_TILE=1)"]
            speedup = short_reason(tileir_lines[0].time if tileir_lines else (b.reason or "n/a"))
        changes = k.transformations.count
        transformations = f"{changes} change{'s' if changes != 1 else ''}" if k.transformations.ran \
            else short_reason(k.transformations.reason)
        kind = k.classification.kernel_type if k.classification.ran else short_reason(k.classification.reason)
        output = k.output.lines[0].removeprefix("File: ") if k.output.ran else short_reason(k.output.reason)
        verdict = _verdict_of(k)
        row = [k.name, _bucket_cell(verdict), kind, _short_verdict(k.compatibility),
               transformations]
        cells_ran = [True, True, k.classification.ran, k.compatibility.status in VERDICT_TEXT, k.transformations.ran]
        row += [] if "tileir" in shared else [_short_verdict(k.tileir_validation)]
        cells_ran += [] if "tileir" in shared else [k.tileir_validation.status in VERDICT_TEXT]
        row += [] if "bench" in shared else [ratio, speedup]
        cells_ran += [] if "bench" in shared else [bool(b.ptx_ratios), bool(b.tileir_speedups)]
        rows.append(row + [output])
        ran.append(cells_ran + [k.output.ran])
    header = ["Kernel", "Verdict", "Type", "Compatibility (ENABLE_TILE=0)", "Transformations"]
    header += [] if "tileir" in shared else ["TileIR validation"]
    header += [] if "bench" in shared else ["PTX time optimized/original (<1 faster)", "TileIR speedup"]
    header, rows, same = _without_shared_columns(header + ["Output"], rows, ran)
    text = table(header, fold_launches(rows))
    if shared:
        left_out = {"tileir": "TileIR validation", "bench": "PTX time and TileIR speedup"}
        text += ("\n\nLeft out of the table, as no kernel has them on this machine: "
                 + "; ".join(left_out[key] for key in shared) + " (why: at the top).")
    if same:
        text += "\n\nThe same for every row, so left out of the table: " + "; ".join(
            f"{name}: {value}" for name, value in same) + "."
    return text


def fold_launches(rows: list[list[str]]) -> list[list[str]]:
    """One row per kernel where all its captured launches (`k#1`, `k#2`, ...) have the same cells: `k (3
    launches)`; launches that differ keep a row each, side by side. In the order kernels first appear."""
    by_kernel: dict[str, list[list[str]]] = {}
    for row in rows:
        by_kernel.setdefault(LAUNCH_NUMBER.sub("", row[0]), []).append(row)
    folded: list[list[str]] = []
    for kernel, launches in by_kernel.items():
        if len(launches) > 1 and all(row[1:] == launches[0][1:] for row in launches):
            folded.append([f"{kernel} ({len(launches)} launches)", *launches[0][1:]])
        else:
            folded += launches
    return folded


def _without_shared_columns(header: list[str], rows: list[list[str]], ran: list[list[bool]]
                            ) -> tuple[list[str], list[list[str]], list[tuple[str, str]]]:
    """The table less the columns where every row says the same reason it did not run (said once below it)."""
    if len(rows) < 2:
        return header, rows, []
    dropped = [index for index in range(1, len(header))
               if len({row[index] for row in rows}) == 1 and not any(cells[index] for cells in ran)]
    keep = [index for index in range(len(header)) if index not in dropped]
    return ([header[i] for i in keep], [[row[i] for i in keep] for row in rows],
            [(header[i], rows[0][i]) for i in dropped])


def moved_cwd(cwd: str, ran_in: str | None, rendered_from: str, command: list[str] | None = None) -> str:
    """The folder a run's command runs from, where its records now are: a project folder copied or moved with its
    records has the run's folder at the same place inside the copy. The two records folders' common trailing
    parts (`.tileiropt`, or a project's own `artifacts` path) are left off to find the old and the new root; the
    run's folder is mapped only where the copy holds it and every path the command names from it."""
    if not ran_in:
        return cwd
    before, now = Path(ran_in).resolve(), Path(rendered_from).resolve()
    while before.name and before.name == now.name and before.parent != before and now.parent != now:
        before, now = before.parent, now.parent
    if before == now or not Path(cwd).resolve().is_relative_to(before):
        return cwd
    mapped = now / Path(cwd).resolve().relative_to(before)
    named = [arg for arg in command or [] if not arg.startswith("-") and not Path(arg).is_absolute()
             and (Path(cwd) / arg).exists()]
    if not mapped.is_dir() or any(not (mapped / arg).exists() for arg in named):
        return cwd
    return str(mapped)


def rerun_command(run: RunResult | None, report: Report) -> str:
    """The command of this run again with ENABLE_TILE=1, runnable as printed: from the folder it ran in, the same
    target and capture command (`--json` left out)."""
    typed = [str(c) for c in (run.command if run else [])]
    ours = typed.index("--") if "--" in typed else len(typed)  # the program's own `--json` stays
    command = [c for c in typed[:ours] if c != "--json"] + typed[ours:]
    cwd = moved_cwd(run.cwd, run.artifacts, report.artifacts, command) if run and run.cwd else ""
    if command and cwd:
        return f"cd {shlex.quote(str(cwd))} && ENABLE_TILE=1 {shlex.join(command)}"
    project = (run.project if run else None) or str(Path(report.artifacts).parent)
    return f"ENABLE_TILE=1 tileiropt run {shlex.quote(str(project))}"


def next_steps_md(report: Report) -> str:
    """What happened to each kernel and what to do next, in one line each: the report's first lines, read from
    each kernel's one verdict (`report.verdict`)."""
    run = report.run
    by_bucket: dict[str, list[tuple[str, KernelVerdict]]] = {bucket: [] for bucket in BUCKETS}
    for k in report.kernels:
        verdict = _verdict_of(k)
        by_bucket.setdefault(verdict.bucket, []).append((k.name, verdict))
    attention = grouped_lines([(name, v.text) for name, v in by_bucket[ATTENTION]])
    program = run.program if run else None
    here = ""  # what this machine could not run: the environment's, not the code's
    if program is not None:
        shown = f"**the program** (`{short_command([str(c) for c in program.get('command') or []])}`)"
        cause = Cause(program["cause"]) if program.get("cause") in set(Cause) else None
        whose = "" if cause is None else " (whose failure: its own code)" if cause == Cause.KERNEL else \
            f" (whose failure: {CAUSE_LABELS[cause]})"
        if program.get("needs_gpu") and program.get("launched_none"):  # nothing launched before it stopped
            here = (f"Not run here: {shown} needs a GPU before its first launch and this machine has none: "
                    f"{one_line(program.get('summary'))}; to validate its kernels here under the interpreter: "
                    f"`{program.get('hint')}` {ROUTE_NOTE}")
        elif program.get("needs_gpu"):  # this machine's lack, not the program's fault
            here = (f"Not run to its end here: {shown} needs a GPU and this machine has none (its launches before "
                    f"that are validated): {one_line(program.get('summary'))}")
        elif program.get("launched_none"):  # it ran, but nothing of the targets: nothing else could run
            attention.insert(0, f"{shown}{whose}: {one_line(program.get('summary'))}")
        else:
            attention.insert(0, f"{shown} failed{whose}: {one_line(program.get('summary'))}")
    ready = grouped_lines([(name, v.text) for name, v in by_bucket[READY]])
    # (backend, agreeing only) -> kernel -> its launches' max differences
    proven: dict[tuple[str, bool], dict[str, list[float | None]]] = {}
    agreeing = {LAUNCH_NUMBER.sub("", name) for name, v in by_bucket[PROVEN] if v.agrees_only}  # any launch: all
    for name, v in by_bucket[PROVEN]:
        kernel = LAUNCH_NUMBER.sub("", name)
        proven.setdefault((v.proven_on, kernel in agreeing), {}).setdefault(kernel, []).append(v.max_difference)
    for (backend, agrees_only), kernels in proven.items():
        said = f"TileIR code agrees with the original with the {backend}, whose bfloat16 products are wrong: a " \
               "GPU proves it right" if agrees_only else f"TileIR code proven correct with the {backend}"
        ready.append(f"ready to try on TileIR ({said}): {proven_kernels(kernels)}")
    ready += grouped_lines([(name, caveat) for name, v in by_bucket[PROVEN] for caveat in v.caveats])
    ready += grouped_lines([(name, f"{BUCKET_LABELS[EMULATED]}: {v.text}") for name, v in by_bucket[EMULATED]])
    if proven or by_bucket[EMULATED]:
        ready.append(f"next, on a Blackwell GPU with nvtriton: `{rerun_command(run, report)}`")
    untuned = grouped_lines([(name, v.text) for name, v in by_bucket[UNTUNED]])
    unproven = grouped_lines([(name, v.text) for name, v in by_bucket[UNPROVEN]])
    lines = []
    interrupted = interrupted_phase(run)
    if interrupted:
        lines.append(f"**Interrupted** during {interrupted}: every worker ended and the records that finished are "
                     "kept; run the same command again to go on.")
    mixed = [f"{name}: {problem}" for name, problem in report.problems.items() if "earlier run" in problem
             or "changed since" in problem]
    if mixed:  # first of all: these records are not one run of these files
        lines.append("**Records of different runs or of changed files** — read the numbers with care:\n\n"
                     + bullets(mixed))
    if attention:
        lines.append("Needs attention:\n\n" + bullets(attention))
    if ready:
        lines.append("Ready:\n\n" + bullets(ready))
    if here:
        lines.append(here)
    if untuned:
        lines.append("Compatible, not tuned (the TileIR code passed; apply changed nothing for these):\n\n"
                     + bullets(untuned))
    if unproven:
        lines.append("Not proven yet:\n\n" + bullets(unproven))
    shared = run_wide_not_run(report)
    if shared:
        lines.append("Not run on this machine, for every kernel: " + "; ".join(
            f"{SHARED_TEXT[key]} ({reason.removeprefix('not run: ')})" for key, reason in shared.items()) + ".")
    if run is not None and run.command:
        lines.append(f"Command: `{shlex.join(str(c) for c in run.command)}`")
    return "\n\n".join(lines)


def short_command(argv: list[str], most: int = 120) -> str:
    """A command as a shell reads it, its tail folded into a count where it is longer than `most` characters (the
    whole command is in the report's "Command" line)."""
    for keep in range(len(argv), 0, -1):
        text = shlex.join(argv[:keep])
        if len(text) <= most or keep == 1:
            return text if keep == len(argv) else f"{text} … ({len(argv) - keep} more arguments)"
    return ""


def proven_kernels(kernels: dict[str, list[float | None]]) -> str:
    """Each proven kernel once, with its launches: the bit-exact ones together, then each of the others with the
    largest difference over its launches."""
    def named(kernel: str, launches: int, extra: str = "") -> str:
        said = [f"{launches} launches"] if launches > 1 else []
        return f"**{cell(kernel)}**" + (f" ({', '.join([*said, extra] if extra else said)})" if said or extra else "")

    exact = [named(k, len(d)) for k, d in kernels.items() if all(x == 0 for x in d)]
    close = [named(k, len(d), "max difference " + (f"{max(x for x in d if x is not None):.1e}"
                                                     if any(x is not None for x in d) else "n/a"))
             for k, d in kernels.items() if not all(x == 0 for x in d)]
    parts = ([f"bit-exact: {', '.join(exact)}"] if exact else []) + \
        ([f"within tolerance: {', '.join(close)}"] if close else [])
    return "; ".join(parts)


def intro_md(report: Report) -> str:
    lines = [report.cut] if report.cut else []
    library = report.library
    lines += [_guarded(lambda: library_md(library, len(report.kernels)))] if library is not None else []
    lines += [_guarded(lambda: next_steps_md(report))]
    if library is not None and any(f.never for f in library.files):  # after what was launched and what to do next
        files = library.files
        lines.append(_guarded(lambda: never_launched_md(files)))
    lines += [f"Rendered from the records in `{report.artifacts}`."]
    run = report.run
    if run:
        phases = ", ".join(f"{p.phase} {p.status}" for p in run.phases)
        lines.append(f"Run: `{' '.join(run.command)}` ({run.started or '?'}, {run.seconds:.0f}s, exit code "
                     f"{run.exit_code}): {phases}.")
        lines.append(tool_cost_md(run))
        program = run.program
        if program is not None and isinstance(program.get("output"), list) and program["output"]:
            fence = "````"  # longer than any fence in the program's output
            lines.append(f"The program's last lines:\n\n{fence}text\n" + "\n".join(
                str(line) for line in program["output"]) + f"\n{fence}")
        for path, rejected in run.rejected.items():
            lines.append(f"Set aside: `{Path(path).name}` -> `{Path(str(rejected.get('moved_to'))).name}`: "
                         f"{rejected.get('reason')}")
        for path, backup in run.in_place.items():
            lines.append(f"Rewritten in place: `{path}` (the original is kept as `{backup}`)")
        for path, reason in run.in_place_refused.items():
            lines.append(f"Not written in place: `{path}`: {reason}")
    lines += report.capture
    if report.notes:
        lines.append("Notes from the records of more than one section (said once here):\n\n" + bullets(report.notes))
    for name, problem in report.problems.items():
        lines.append(f"Record {name}: {problem}")
    return "\n\n".join(lines)


def tool_cost_md(run: RunResult) -> str:
    """What the run itself cost, by phase: seconds, workers started and their start-up, jobs (run.json has each
    job's split: import, prepare, first call, measure, pairs). The report phase is still running while this is
    written (its seconds, in run.json, come after), so it is left out: a report rendered again from the records
    reads the same."""
    parts = []
    for phase in run.phases:
        if phase.phase == "report":
            continue
        extra = []
        if phase.workers:
            extra.append(f"{phase.workers} worker(s) started, {phase.worker_start_s:.1f} s start-up")
        if phase.jobs:
            extra.append(f"{len(phase.jobs)} job(s)")
        parts.append(f"{phase.phase} {phase.seconds:.1f} s" + (f" ({', '.join(extra)})" if extra else ""))
    return "The tool's own time: " + "; ".join(parts) + "."


def kernel_md(k: KernelReport, template: str, shared: dict[str, str] | None = None) -> str:
    verdict = _verdict_of(k)
    benchmark = ("No benchmark ran here (the reason is given once, at the top of the report)."
                 if shared and "bench" in shared and not k.benchmark.ran and not k.benchmark.details
                 else benchmark_md(k.benchmark))
    return template.format(
        name=one_line(k.name),
        verdict=f"**Verdict: {_bucket_cell(verdict)}** — {one_line(verdict.text)}",
        classification=classification_md(k.classification),
        compatibility=compatibility_md(k.compatibility),
        transformations=section_md(k.transformations),
        tileir_validation=tileir_md(k, shared),
        benchmark=benchmark,
        output=output_md(k.output),
    ).strip() + "\n"


def render_markdown(report: Report, template: str | None = None, kernels_file: str | None = None) -> str:
    """The report. A library run's sections of each captured launch go to `kernels_file` when one is named (the
    report then says where), else they follow, folded by file."""
    document, section = split_template(template if template is not None else read_template(TEMPLATE))
    if report.library is not None and kernels_file:
        kernels = (f"## Each captured launch\n\nThe sections of each captured launch (classification, compatibility, "
                   f"transformations, TileIR validation, benchmark, output), folded by file: "
                   f"[`{kernels_file}`]({kernels_file}).")
    else:
        kernels = kernel_sections(report, section)
    text = document.format(intro=_guarded(lambda: intro_md(report)), summary=_guarded(lambda: summary_md(report)),
                           environment=_guarded(lambda: environment_md(report)), kernels=kernels)
    return text.rstrip() + f"\n\n{REPORT_MARKER}\n"


def kernel_sections(report: Report, section: str) -> str:
    """Every kernel's section; a library's folded by file."""
    shared: dict[str, str] = _guarded_value(lambda: run_wide_not_run(report), {})
    rendered = [(k.path, _guarded(functools.partial(kernel_md, k, section, shared), f"## {cell(k.name)}\n\n"))
                for k in report.kernels]
    kernels = "\n".join(text for _, text in rendered) if report.library is None else folded_by_file(report, rendered)
    return kernels or "No kernel in the records."


def render_kernels_file(report: Report, template: str | None = None) -> str:
    """A library run's second file: the section of each captured launch, folded by file."""
    _, section = split_template(template if template is not None else read_template(TEMPLATE))
    return (f"# TileIR optimization report: each captured launch\n\n{kernel_sections(report, section)}".rstrip()
            + f"\n\n{REPORT_MARKER}\n")


def kernels_path(path: Path) -> Path:
    """Where a library run's report puts the sections of each captured launch: beside it."""
    return path.with_name(f"{path.stem}-kernels{path.suffix or '.md'}")


def folded_by_file(report: Report, rendered: list[tuple[str, str]]) -> str:
    """A library's kernel sections, one folded block per file (`<details>`), in the order of the files."""
    folder = report.library.folder if report.library else ""
    by_file: dict[str, list[str]] = {}
    for path, text in rendered:
        by_file.setdefault(path, []).append(text)
    blocks = []
    for path, texts in by_file.items():
        shown = os.path.relpath(os.path.realpath(path), os.path.realpath(folder)) if path and folder else path
        blocks.append(f"<details><summary>{cell(shown or '?')}: {len(texts)} captured launch(es)</summary>\n\n"
                      + "\n".join(texts) + "\n</details>\n")
    return "\n".join(blocks)


def _guarded_value(compute: Callable[[], T], default: T) -> T:
    try:
        return compute()
    except Exception:  # records of the wrong shape: the parts that read them say so
        return default


def _guarded(render: Callable[[], str], prefix: str = "") -> str:
    """A part of the report, or one line saying the records behind it have an unexpected shape."""
    try:
        return render()
    except Exception as exc:  # valid JSON of the wrong shape must not stop the whole report
        return f"{prefix}not run: unreadable record ({type(exc).__name__}: {cell(exc)})"


# The last line of every report written: a file without it is not replaced by a report.
REPORT_MARKER = "<!-- tileiropt report: generated from the records; edit the records, not this file -->"


def is_report(text: str) -> bool:
    """A Markdown report tileiropt wrote (its marker line), or its JSON form."""
    if REPORT_MARKER in text:
        return True
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and {"artifacts", "kernels", "environment"} <= set(data)


def write_markdown(report: Report, path: Path) -> list[Path]:
    """Write the rendered report to `path`, replacing only a report tileiropt wrote; a library run's sections of
    each captured launch beside it (`kernels_path`); each kernel's sweep drawn beside it (`report/<kernel>.svg`)
    where matplotlib is installed. The files written."""
    draw_plots(report, path.parent)
    written = []
    kernels_file = None
    if report.library is not None:
        companion = kernels_path(path)
        write_atomic(companion, render_kernels_file(report), replaces=is_report, what="report")
        written.append(companion)
        kernels_file = companion.name
    write_atomic(path, render_markdown(report, kernels_file=kernels_file), replaces=is_report, what="report")
    return [path, *written]
