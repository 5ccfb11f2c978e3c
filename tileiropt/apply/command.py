"""`tileiropt apply`: transform files, print what changed (table, diff or JSON), pick the exit code."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from tileiropt.apply.apply import ApplyResult, NoKernelFound, apply_file
from tileiropt.apply.spaces import DEFAULT_MAX_CONFIGS, load_spaces
from tileiropt.check.environment import choose_release
from tileiropt.classify.classify import classify_files, collect_files
from tileiropt.classify.model import FileModels
from tileiropt.classify.rules import ALL_RULES
from tileiropt.classify.rules.base import Finding
from tileiropt.contract.phase_records import apply_record, record_dict
from tileiropt.errors import ExitCode, UserError
from tileiropt.output import console, err_console, print_json, short_names
from tileiropt.releases import Choice, Release
from tileiropt.schema import PASS


@dataclass
class FileError:
    path: str
    error: str


def kernel_files(paths: list[Path]) -> tuple[list[Path], set[Path]]:
    """The .py files named, or found in folders by classify's collector (hidden folders and
    __pycache__ skipped, our own outputs skipped); and which of them were found rather than named."""
    for path in paths:
        if not path.exists():
            raise UserError("no such file or folder", file=str(path), hint="check the path")
    found = {p.resolve() for path in paths if path.is_dir() for p in collect_files([path])}
    return collect_files(paths), found


def apply_paths(paths: list[Path], *, output: Path | None = None, in_place: bool = False, dry_run: bool = False,
                spaces_file: Path | None = None, max_configs: int = DEFAULT_MAX_CONFIGS,
                release: Release | None = None, models: FileModels | None = None, helper_level: int | None = None,
                hint_autotune: tuple[str, ...] = (), decided: Mapping[str, Sequence[Finding]] | None = None,
                lint: bool = False) -> tuple[list[ApplyResult], list[FileError]]:
    """Transform every file; a file found in a folder that holds no kernel is passed over, not an error.
    `models`: the command's file models (under `run`, those classify read and classified). `helper_level`: a
    library's file importing the package's helper module (`apply.write_helper` writes it). `decided`: each
    kernel's error findings as classify decided them; else, with `lint`, classify decides them here (its IR check
    and lint cache included, as `run` does), else the error rules at syntax level."""
    files, found = kernel_files(paths)
    if output is not None and len(files) != 1:
        raise UserError("-o/--output needs exactly one input file",
                        hint="drop -o to write <stem>_tileir.py beside each; for an installed package, `tileiropt run "
                             "<package folder> -- <your tests>` writes its optimized files under .tileiropt/, never "
                             "into site-packages")
    spaces = load_spaces(spaces_file)
    models = models if models is not None else FileModels()
    linted: dict[Path, dict[str, list[Finding]]] = {}
    if decided is None and lint:  # the verdict `run` gives each kernel, from the same classify
        linted = {Path(r.file).resolve(): {k.kernel: [f for f in k.findings if f.severity == "error"]
                                           for k in r.kernels}
                  for r in classify_files(files, lambda _: ALL_RULES, release, models=models) if r.status == PASS}
    results: list[ApplyResult] = []
    errors: list[FileError] = []
    for file in files:
        named = file.resolve() not in found
        try:
            model = models.get(file)
        except UserError as exc:  # unreadable: an error, unless a file found in a folder shows it holds no kernel
            if named or _unreadable_may_hold_kernels(file):
                errors.append(FileError(str(file), str(exc)))
            continue
        try:
            if not named and not _may_hold_kernels(model.source):
                continue
            results.append(apply_file(file, output=output, in_place=in_place, dry_run=dry_run, spaces=spaces,
                                      max_configs=max_configs, release=release, model=model,
                                      helper_level=helper_level, hint_autotune=hint_autotune,
                                      decided=decided if decided is not None else linted.get(file.resolve())))
        except NoKernelFound as exc:
            if named:
                errors.append(FileError(str(file), str(exc)))
        except UserError as exc:
            errors.append(FileError(str(file), str(exc)))
        except (Exception, RecursionError) as exc:  # one file the rewriter cannot handle never stops the others
            errors.append(FileError(str(file), f"{file}: cannot rewrite this file: internal error "
                                               f"({type(exc).__name__}: {exc}); the file was left alone"))
    return results, errors


def _may_hold_kernels(text: str) -> bool:
    """Cheap text test (the one classify uses): no "triton" or no "jit", no kernel."""
    return "triton" in text and "jit" in text


def _unreadable_may_hold_kernels(file: Path) -> bool:
    """The text test on a file the model could not read: its bytes, undecodable ones replaced (True when it
    cannot be read at all, so the error is reported)."""
    try:
        return _may_hold_kernels(file.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return True


def apply_document(results: list[ApplyResult], errors: list[FileError], *, dry_run: bool, choice: Choice) -> dict:
    """apply's JSON document (docs/apply.md, `contract.phase_records.ApplyRecord`): `apply --json` prints it, `run`
    saves it as apply.json."""
    release = {"version": choice.release.version, "origin": choice.origin}
    return record_dict(apply_record(results, errors, dry_run=dry_run, release=release))


def print_results(results: list[ApplyResult], errors: list[FileError], *, dry_run: bool) -> None:
    """A table of counts that fits a narrow terminal, then each kernel's changes and what was left alone as lines
    below it (prose in a table column wraps to a word a line)."""
    folder, short = short_names([result.path for result in results])  # the title names the folder
    table = Table(title=f"tileiropt apply: files in {folder}" if folder else "tileiropt apply", title_justify="left")
    table.add_column("file", overflow="fold")
    table.add_column("kernel", overflow="fold")
    table.add_column("class", no_wrap=True)
    table.add_column("changes", justify="right", no_wrap=True)
    table.add_column("left alone", justify="right", no_wrap=True)
    details: list[str] = []
    for result in results:
        name = short[result.path]
        shown = escape(name)
        if result.already_prepared:
            table.add_row(shown, "-", "-", "0", "-")
            details.append(f"{name}: already prepared (gate present): unchanged")
            continue
        quiet = [k.kernel for k in result.kernels if not k.changes and not k.skipped]
        for k in result.kernels:
            if k.kernel in quiet and len(quiet) < len(result.kernels):  # a JIT helper with nothing to say: below
                continue
            table.add_row(shown, escape(k.kernel), k.kernel_class, str(len(k.changes)), str(len(k.skipped)))
            shown = ""  # the file once, on its first kernel's row
            details += [f"{name} {k.kernel} L{c.line}: {c.what}" for c in k.changes]
            details += [f"{name} {k.kernel} left alone: {why}" for why in k.skipped]
        if quiet and len(quiet) < len(result.kernels):
            details.append(f"{name}: no change needed in {', '.join(quiet)}")
        details += [f"{name} L{c.line}: backend test widened to {c.what} ({c.why})" for c in result.host]
    if results:  # no empty table above the errors
        console.print(table)
    for line in details:
        console.print(line, markup=False, soft_wrap=True)
    said: set[str] = set()
    for result in results:
        if dry_run and result.output and not result.already_prepared:
            console.print(f"would write {result.output}", markup=False, soft_wrap=True)  # a path pastes whole
        for written in result.written:
            if written not in said:  # a helper module shared by several files: once
                said.add(written)
                console.print(f"wrote {written}" + ("" if result.changed else " (unchanged copy)"), markup=False,
                              soft_wrap=True)
    for error in errors:
        err_console.print(f"[bold red]error[/]: {escape(error.error)}", soft_wrap=True)


def apply_command(paths: list[Path], *, output: Path | None, in_place: bool, dry_run: bool, diff: bool,
                  json_output: bool, spaces_file: Path | None, max_configs: int,
                  tileir_version: str | None = None, hint_autotune: tuple[str, ...] = ()) -> ExitCode:
    if max_configs < 1:
        raise UserError(f"--max-configs must be at least 1, got {max_configs}", hint="--max-configs 16 (the default)")
    choice = choose_release(tileir_version)
    dry_run = dry_run or diff  # a diff shows what would change, as ruff's does: nothing is written
    results, errors = apply_paths(paths, output=output, in_place=in_place, dry_run=dry_run,
                                  spaces_file=spaces_file, max_configs=max_configs, release=choice.release,
                                  hint_autotune=hint_autotune, lint=True)
    if json_output:
        print_json(apply_document(results, errors, dry_run=dry_run, choice=choice))
    elif diff:
        for result in results:  # raw text: a diff must not be wrapped to the terminal's width
            sys.stdout.write(result.diff())
        sys.stdout.flush()
        for result in results:  # said where a user would otherwise see nothing at all
            if not result.changed:
                err_console.print(f"{result.path}: no TileIR change"
                                  + (" (already prepared)" if result.already_prepared else ""), markup=False,
                                  soft_wrap=True)
        for error in errors:
            err_console.print(f"[bold red]error[/]: {escape(error.error)}", soft_wrap=True)
    else:
        print_results(results, errors, dry_run=dry_run)
        if any(result.written and result.changed for result in results):  # not where nothing or copies were written
            console.print(f"TileIR code written for {choice.describe()}", markup=False, soft_wrap=True)
        elif any(result.written for result in results):
            console.print(f"no TileIR change for {choice.describe()}: the optimized files are copies of their "
                          "originals (what `run` validates as the optimized file)", markup=False, soft_wrap=True)
        elif dry_run and results:
            console.print(f"TileIR code for {choice.describe()} (dry run: nothing written)", markup=False,
                          soft_wrap=True)
    if in_place and not dry_run:
        for result in results:
            if result.changed and len(result.written) > 1:  # the rewrite and its backup
                backup = result.written[0]
                err_console.print(f"{result.path}: rewritten in place, not validated (apply never runs your code); "
                                  f"`tileiropt run {result.path} --in-place` replaces a file only after it "
                                  f"validates and is not slower on PTX; undo: mv {backup} {result.path}",
                                  markup=False, soft_wrap=True)
    return ExitCode.BAD_INPUT if errors else ExitCode.OK
