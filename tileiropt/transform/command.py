"""`tileiropt apply`: transform files, print what changed (table, diff or JSON), pick the exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from tileiropt.errors import ExitCode, UserError
from tileiropt.output import console, err_console, print_json
from tileiropt.transform.apply import TWIN_SUFFIX, ApplyResult, apply_file
from tileiropt.transform.spaces import DEFAULT_MAX_CONFIGS, load_spaces


@dataclass
class FileError:
    path: str
    error: str


def kernel_files(paths: list[Path]) -> list[Path]:
    """The .py files named or found (recursively) in folders; our own outputs are skipped."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py")
                            if not p.stem.endswith(TWIN_SUFFIX) and ".tileiropt" not in p.parts)
        elif path.is_file():
            files.append(path)
        else:
            raise UserError("no such file or folder", file=str(path))
    return files


def apply_paths(paths: list[Path], *, output: Path | None = None, in_place: bool = False, dry_run: bool = False,
                spaces_file: Path | None = None, max_configs: int = DEFAULT_MAX_CONFIGS,
                ) -> tuple[list[ApplyResult], list[FileError]]:
    files = kernel_files(paths)
    if output is not None and len(files) != 1:
        raise UserError("-o/--output needs exactly one input file",
                        hint="drop -o to write <stem>_tileir.py beside each")
    spaces = load_spaces(spaces_file)
    results: list[ApplyResult] = []
    errors: list[FileError] = []
    for file in files:
        try:
            results.append(apply_file(file, output=output, in_place=in_place, dry_run=dry_run,
                                      spaces=spaces, max_configs=max_configs))
        except UserError as exc:
            errors.append(FileError(str(file), str(exc)))
    return results, errors


def result_record(result: ApplyResult) -> dict:
    return {
        "file": result.path,
        "output": result.output,
        "changed": result.changed,
        "already_prepared": result.already_prepared,
        "kernels": [
            {"kernel": k.kernel, "line": k.line, "class": k.kernel_class, "twin": k.twin,
             "configs_added": k.configs_added,
             "changes": [{"line": c.line, "what": c.what, "why": c.why} for c in k.changes],
             "skipped": k.skipped}
            for k in result.kernels
        ],
    }


def print_results(results: list[ApplyResult], errors: list[FileError], *, dry_run: bool) -> None:
    table = Table(title="tileiropt apply", title_justify="left")
    for column in ("file", "kernel", "class", "TileIR changes", "left alone"):
        table.add_column(column, overflow="fold")
    for result in results:
        if result.already_prepared:
            table.add_row(result.path, "-", "-", "already prepared (gate present): unchanged", "")
            continue
        for k in result.kernels:
            changes = "\n".join(f"L{c.line}: {c.what}" for c in k.changes) or "-"
            table.add_row(result.path, k.kernel, k.kernel_class, changes, "\n".join(k.skipped))
    console.print(table)
    for result in results:
        if result.changed and result.output:
            verb = "would write" if dry_run else "wrote"
            console.print(f"{verb} {result.output}", markup=False)
    for error in errors:
        err_console.print(f"[bold red]error[/]: {error.error}", soft_wrap=True)


def run_apply(paths: list[Path], *, output: Path | None, in_place: bool, dry_run: bool, diff: bool,
              json_output: bool, spaces_file: Path | None, max_configs: int) -> int:
    if max_configs < 1:
        raise UserError("--max-configs must be at least 1")
    results, errors = apply_paths(paths, output=output, in_place=in_place, dry_run=dry_run,
                                  spaces_file=spaces_file, max_configs=max_configs)
    if json_output:
        print_json({"dry_run": dry_run, "files": [result_record(r) for r in results],
                    "errors": [{"file": e.path, "error": e.error} for e in errors]})
    elif diff:
        for result in results:  # raw text: a diff must not be wrapped to the terminal's width
            sys.stdout.write(result.diff())
        sys.stdout.flush()
        for error in errors:
            err_console.print(f"[bold red]error[/]: {error.error}", soft_wrap=True)
    else:
        print_results(results, errors, dry_run=dry_run)
    return int(ExitCode.BAD_INPUT if errors else ExitCode.OK)
