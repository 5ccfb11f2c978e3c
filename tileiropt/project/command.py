"""`tileiropt init`: write a project file -- a commented template to edit, one prefilled from a capture of a kernel
file's run, or one that captures a command's launches of every kernel of a library folder."""

from __future__ import annotations

from pathlib import Path

from tileiropt.errors import ExitCode, UserError
from tileiropt.output import console, print_json
from tileiropt.project.template import write_captured_project, write_library_project, write_project_template


def init_command(path: Path | None, command: list[str] | None, *, output: Path | None = None, force: bool = False,
                 capture_budget: float | None = None, include: list[str] | None = None,
                 exclude: list[str] | None = None, as_json: bool = False) -> ExitCode:
    """Everything behind the command; returns the exit code."""
    if path is not None and path.suffix == ".py":
        written, summary = write_captured_project(path, command, output, force=force, budget=capture_budget)
    elif path is not None and path.is_dir() and command:
        written, summary = write_library_project(path, command, output, force=force, include=include,
                                                 exclude=exclude)
    else:
        if command:
            raise UserError("a command after `--` needs a kernel .py to capture", hint="tileiropt init ops.py -- ...")
        written, summary = write_project_template(output or path, force=force), None
    if as_json:
        print_json({"written": str(written.resolve()), **({"capture": summary} if summary is not None else {})})
    elif summary is not None and path is not None and path.is_dir():
        console.print(f"wrote {written} ({summary}); next: tileiropt run {written.parent}", markup=False)
    elif summary is not None:
        console.print(f"wrote {written} from a capture ({summary}): check its inputs, dims and reference",
                      markup=False)
    else:
        console.print(f"wrote {written}: edit its [[kernel]] table (path, entry, inputs, reference)",
                      markup=False)
    return ExitCode.OK
