"""`tileiropt classify`: tables for people, JSON, SARIF and GitHub annotations for tools (lint_output), settings
from the files around the code (lint_config), exit codes all can trust."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from tileiropt.check.environment import choose_release
from tileiropt.classify.classify import (
    CLASSES,
    NO_TRITON_IMPORT,
    FileResult,
    classify_files,
    collect_files,
    has_errors,
)
from tileiropt.classify.lint_config import LintSettings, forget_cached_files
from tileiropt.classify.lint_output import (
    github_annotation,
    grouped,
    lines_text,
    located_findings,
    names_text,
    sarif_document,
    text_line,
)
from tileiropt.classify.model import FileModel
from tileiropt.classify.source import parse_source
from tileiropt.errors import ExitCode, UserError
from tileiropt.output import console, err_console, print_json, short_names
from tileiropt.releases import Choice, get_release
from tileiropt.schema import ERROR, NOT_RUN, PASS, SCHEMA_VERSION
from tileiropt.verbosity import QUIET, VERBOSE, verbosity

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "perf": "cyan"}


def classify_command(paths: list[Path], select: list[str] | None = None, ignore: list[str] | None = None,
                 strict: bool = False, json_output: bool = False, tileir_version: str | None = None,
                 ir: bool = True, output_format: str | None = None) -> ExitCode:
    """Classify and lint `paths` for a CUDA Tile IR release; print in `output_format` (text, json, sarif,
    github; `json_output`: json); return the exit code. Settings: tileiropt.classify.lint_config."""
    fmt = output_format or ("json" if json_output else "text")
    forget_cached_files()
    settings = LintSettings(select=select, ignore=ignore, tileir_version=tileir_version)
    files = collect_files(paths)
    choice = _release_choice(settings, files)
    results = classify_files(files, settings.rules_for, choice.release, ir)
    if not results:
        raise UserError("no Python files found", file=", ".join(str(p) for p in paths),
                        hint="pass .py files or folders that contain them")
    explicit = {Path(p).resolve() for p in paths if Path(p).is_file()}
    results = [_parsed_if_named(result, explicit) for result in results]
    _print(results, choice, fmt, ir, explicit=explicit)
    if all(r.status == ERROR for r in results):
        if fmt != "json" and len(results) > 1:  # one file: its own line said it
            err_console.print("[bold red]error[/]: no file could be parsed", soft_wrap=True)
        return ExitCode.BAD_INPUT
    if strict and has_errors(results):
        return ExitCode.FAILED
    return ExitCode.OK


def _parsed_if_named(result: FileResult, explicit: set[Path]) -> FileResult:
    """A file named on the command line is Python or an error, whatever words it holds: the quick pass over files
    without `triton` and `jit` (no parse) is for the files a folder holds."""
    if result.status != NOT_RUN or result.message != NO_TRITON_IMPORT or Path(result.file).resolve() not in explicit:
        return result
    try:
        parse_source(FileModel.read(result.file).source, result.file)
    except UserError as exc:
        return FileResult(file=result.file, status=ERROR, kernels=[], message=str(exc))
    return result


def _release_choice(settings: LintSettings, files: list[Path]) -> Choice:
    """--tileir-version, else what the files' tileiropt.toml or [tool.tileiropt] name, else the detected one."""
    if settings.tileir_version:
        return choose_release(settings.tileir_version)
    asked = settings.release_for(files)
    if asked is None:
        return choose_release(None)
    version, where = asked
    return Choice(get_release(version), f"from {where}")


def _print(results: list[FileResult], choice: Choice, fmt: str, ir: bool, explicit: set[Path]) -> None:

    if fmt == "json":
        print_json(classify_json(results, choice))
    elif fmt == "sarif":
        print_json(sarif_document(results, choice))
    elif fmt == "github":
        for item in located_findings(results):
            sys.stdout.write(github_annotation(item) + "\n")
        sys.stdout.flush()
    elif verbosity() == QUIET:  # the findings, and files that could not be parsed
        _print_findings(results, plain=True)
        _print_problems(results, explicit=set())
    elif all(r.status == ERROR for r in results):  # nothing to sum up: the errors alone
        _print_problems(results, explicit=explicit)
    else:
        _print_human(results, explicit=explicit, verbose=verbosity() == VERBOSE)
        console.print(f"lint for {choice.describe()}; {ir_summary(results) if ir else 'IR check off (--no-ir)'}",
                      markup=False, soft_wrap=True)


def ir_counts(results: list[FileResult]) -> dict[str, int]:
    """Entry kernels by what the IR check did: checked (lowered), not-needed, not-run (could not be lowered)."""
    counts = Counter("checked" if k.ir["status"] == PASS else "not-run" if k.ir.get("needed", True) else "not-needed"
                     for r in results for k in r.kernels if k.ir is not None)
    return {what: counts.get(what, 0) for what in ("checked", "not-needed", "not-run")}


def _reason_text(reason: str, limit: int = 80) -> str:
    """A lowering's reason for a summary: the exception's own message (not its class's repr), cut at a word."""
    located = re.search(r"CompilationError at [\d:]+(?: \([^)]*\))?: (.*)$", reason)  # its line differs per kernel
    text = (located.group(1) if located else reason).strip()
    inner = re.fullmatch(r"\w+\((['\"])(.*)\1\)", text)
    text = inner.group(2) if inner else text
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def ir_summary(results: list[FileResult]) -> str:
    counts = ir_counts(results)
    reasons = Counter(_reason_text(k.ir["reason"]) for r in results for k in r.kernels
                      if k.ir is not None and k.ir["status"] == NOT_RUN and k.ir.get("needed", True))
    why = f"; most often: {reasons.most_common(1)[0][0]}" if reasons else ""
    return (f"IR check of the {sum(counts.values())} entry kernels (tileiropt's own, not findings): "
            f"{counts['checked']} lowered to TTIR; {counts['not-needed']} not lowered, as they use only operations "
            f"every release supports; {counts['not-run']} tileiropt could not lower (a name its rebuild of the file "
            f"lacks, or inputs it guessed that do not fit: its limit, not the kernel's), so their syntax findings "
            f"stand{why}")


def classify_json(results: list[FileResult], choice: Choice | None = None) -> dict[str, Any]:
    """The documented JSON document (docs/classify.md)."""
    kernels = [k.to_json() for r in results for k in r.kernels]
    severities = Counter(f["severity"] for k in kernels for f in k["findings"])
    release = {"version": choice.release.version, "origin": choice.origin} if choice is not None else None
    return {
        "schema_version": SCHEMA_VERSION,
        "release": release,
        "kernels": kernels,
        "files": [{"file": r.file, "status": r.status, "message": r.message, "kernels": len(r.kernels)}
                  for r in results],
        "summary": {
            "files": len(results),
            "files_with_kernels": sum(r.status == PASS for r in results),
            "files_not_parsed": sum(r.status == ERROR for r in results),
            "kernels": len(kernels),
            "classes": {c: sum(k["class"] == c for k in kernels) for c in CLASSES},
            "findings": {s: severities.get(s, 0) for s in ("error", "warning", "perf")},
            "findings_from_ir": sum(f["via"] == "ir" for k in kernels for f in k["findings"]),
            "ir": ir_counts(results),
        },
    }


def _findings_cell(counts: Counter) -> str:
    parts = [f"[{_SEVERITY_STYLE[s]}]{counts[s]} {s}[/]" for s in ("error", "warning", "perf") if counts[s]]
    return ", ".join(parts) if parts else "-"


def _print_human(results: list[FileResult], explicit: set[Path], verbose: bool = False) -> None:
    root, short = short_names([r.file for r in results if r.kernels])
    # a file is a heading row over its kernels (never a column): the table fits an 80-column terminal
    table = Table(title=f"Triton kernels in {root}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("file / kernel", overflow="fold")
    table.add_column("line", justify="right", no_wrap=True)
    table.add_column("class", no_wrap=True)
    table.add_column("conf", justify="right", no_wrap=True)
    table.add_column("entry", no_wrap=True)
    table.add_column("findings", no_wrap=True)
    for result in results:
        if result.kernels:
            table.add_row(Text(short[result.file], style="bold"))
        for kernel in result.kernels:
            counts = Counter(f.severity for f in kernel.findings)
            table.add_row(Text("  " + kernel.kernel), str(kernel.line), kernel.kernel_class,
                          f"{kernel.confidence:.2f}", "yes" if kernel.is_entry else "helper", _findings_cell(counts))
    natural = console.measure(table, options=console.options.update_width(100_000)).maximum if table.row_count else 0
    if table.row_count and natural <= console.width:
        console.print(table)
    elif table.row_count:  # narrower than the table: a line per kernel under its file, names never cut
        _print_kernel_lines(results, root, short)

    if verbose:
        _print_evidence(results)
    _print_findings(results, plain=False)
    skipped = _print_problems(results, explicit)
    kernels = [k for r in results for k in r.kernels]
    classes = Counter(k.kernel_class for k in kernels)
    summary = ", ".join(f"{classes[c]} {c}" for c in CLASSES if classes[c]) or "no kernels"
    extra = f"; {counted(skipped, 'file')} without Triton kernels" if skipped else ""
    console.print(f"{counted(len(kernels), 'kernel')} in {counted(sum(r.status == PASS for r in results), 'file')} "
                  f"({summary}){extra}", markup=False)


def counted(number: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _print_kernel_lines(results: list[FileResult], root: str, short: dict[str, str]) -> None:
    """The table's content where the terminal is too narrow for it: each file, then a line per kernel."""
    console.print(f"Triton kernels in {root}", markup=False)
    for result in results:
        if not result.kernels:
            continue
        console.print(Text(short[result.file], style="bold"))
        for kernel in result.kernels:
            counts = Counter(f.severity for f in kernel.findings)
            findings = _findings_cell(counts)
            console.print(f"  {_escape(kernel.kernel)} L{kernel.line}: {kernel.kernel_class}, "  # confidence: -v
                          f"{'entry' if kernel.is_entry else 'helper'}" + (f", {findings}" if counts else ""),
                          soft_wrap=False)


def _print_findings(results: list[FileResult], plain: bool) -> None:
    """Plain: one line per finding, `path:line:col: CODE severity message (fix: hint)`. On a terminal, coloured,
    one line per kernel and rule with one fix, its other lines listed."""
    if plain:
        for item in located_findings(results):
            sys.stdout.write(text_line(item) + "\n")
        sys.stdout.flush()
        return
    for item, lines, kernels in grouped(located_findings(results)):
        f = item.finding
        whose = _escape(item.kernel) if len(kernels) == 1 else f"{len(kernels)} kernels: {_escape(names_text(kernels))}"
        also = f" [dim](also {lines_text(lines[1:])} of {whose})[/]" if len(lines) > 1 else \
            f" [dim](for {whose})[/]" if len(kernels) > 1 else ""
        console.print(f"{_escape(item.file)}:{item.line}:{item.column}: [bold]{f.code}[/] "
                      f"[{_SEVERITY_STYLE[f.severity]}]{f.severity}[/] {_escape(f.message)}{also} "
                      f"[dim](fix: {_escape(f.hint)})[/]", soft_wrap=True)
    sys.stdout.flush()


def _print_evidence(results: list[FileResult]) -> None:
    """-v: why each kernel got its class, and what the IR check did."""
    for result in results:
        for kernel in result.kernels:
            made = "" if kernel.made_by == "decorator" else f", made by {kernel.made_by}" + (
                f" as {kernel.bound_to}" if kernel.bound_to else "")
            console.print(f"{result.file}:{kernel.line}: {kernel.kernel}: {kernel.kernel_class} "
                          f"(confidence {kernel.confidence:.2f}, strategy: {kernel.strategy}{made})", markup=False,
                          soft_wrap=True)
            for evidence in kernel.evidence:
                console.print(f"    line {evidence.line}: {evidence.text}", markup=False, soft_wrap=True)
            if kernel.ir is not None:
                detail = kernel.ir.get("reason") or ", ".join(kernel.ir.get("specializations") or [])
                console.print(f"    IR check: {kernel.ir['status']}" + (f" ({detail})" if detail else ""),
                              markup=False, soft_wrap=True)


def _print_problems(results: list[FileResult], explicit: set[Path]) -> int:
    """Files not parsed (always) and files without kernels that were named on the command line, on stderr;
    returns how many files without kernels were passed over silently."""
    skipped = 0
    for result in results:
        if result.status == ERROR:
            err_console.print(f"[bold red]not parsed[/]: {_escape(result.message or '')}", soft_wrap=True)
        elif result.status == NOT_RUN:
            if Path(result.file).resolve() in explicit:
                err_console.print(f"{_escape(result.file)}: {_escape(result.message or '')}", soft_wrap=True)
            else:
                skipped += 1
    return skipped


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
