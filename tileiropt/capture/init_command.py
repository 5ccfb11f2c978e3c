"""`tileiropt init`: write a project file -- a commented template to edit, one prefilled from a capture of a kernel
file's run, or one that captures a command's launches of every kernel of a library folder."""

from __future__ import annotations

from pathlib import Path

from tileiropt.capture.capture import capture_program
from tileiropt.capture.init_project import project_text
from tileiropt.check.machine import Machine
from tileiropt.errors import ExitCode, UserError
from tileiropt.output import console, print_json
from tileiropt.project.spec import check_capture_target
from tileiropt.project.template import target_path, write_library_project, write_project, write_project_template


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


def write_captured_project(kernel: Path, command: list[str] | None, path: Path | None, *,
                           force: bool = False, budget: float | None = None) -> tuple[Path, str]:
    """Capture `kernel`'s run (or `command`'s) and write the project file it suggests; the kernel file is only
    read. Returns (the file written, a one-line summary of the capture)."""
    check_capture_target(kernel)
    target = target_path(path, force)
    if target.resolve() == kernel.resolve():
        raise UserError("the project file would overwrite the kernel file", file=str(kernel),
                        hint="give -o tileiropt.toml")
    result = capture_program([kernel], command, interpret=not Machine.probe().has_gpu, cwd=Path.cwd(),
                             budget=budget)
    if not result.launches:
        why = f"the program failed: {result.failure.summary()}" if result.failure else result.ended
        raise UserError(f"no launch of a kernel in {kernel.name} was captured; {why}", file=str(kernel),
                        hint=f"give a command that launches them: tileiropt init {kernel.name} -- <command>")
    write_project(target, project_text(result, kernel, Path.cwd()))
    summary = f"{len(result.launches)} distinct launch(es) of {len(result.kernels())} kernel(s); {result.ended}"
    return target, summary
