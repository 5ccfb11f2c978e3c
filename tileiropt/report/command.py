"""`tileiropt report`: find the artifacts folder, build the report from its records, print or write it."""

from __future__ import annotations

import sys
from pathlib import Path

from tileiropt.bench.records import BenchKernel
from tileiropt.bench.run import kernel_info
from tileiropt.capture.keys import KernelKey
from tileiropt.errors import ExitCode, UserError
from tileiropt.output import dumps, err_console, write_atomic
from tileiropt.project.spec import DEFAULT_ARTIFACTS, PROJECT_FILE, load_project
from tileiropt.report.artifacts import RECORD_FILES, Artifacts, is_artifacts_folder, load_artifacts, projects_of
from tileiropt.report.build import build_report
from tileiropt.report.markdown import is_report, render_markdown, write_markdown
from tileiropt.report.model import Report

FORMATS = ("md", "json")


def resolve_artifacts(target: Path | None) -> tuple[Path, list[BenchKernel] | None, Path | None]:
    """(artifacts folder, the project's kernels or None, the project file or None): from a project file, a folder
    holding one, or an artifacts folder itself."""
    target = Path(target) if target is not None else Path.cwd()
    if target.is_file() and target.suffix == ".toml" or \
            target.is_dir() and (target / PROJECT_FILE).is_file() and not is_artifacts_folder(target):
        project = load_project(target)
        return project.artifacts, [kernel_info(spec) for spec in project.kernels], project.file
    if is_artifacts_folder(target):
        return target, None, None
    if is_artifacts_folder(target / DEFAULT_ARTIFACTS):
        return target / DEFAULT_ARTIFACTS, None, None
    if target.is_file() and target.suffix == ".py":  # `run kernel.py` records in the current folder's .tileiropt
        folders = kernel_file_folders(target)
        if folders:
            return folders[0], None, None
    raise UserError("no records to report: neither an artifacts folder nor a project", file=str(target),
                    hint=f"pass the folder holding {', '.join(RECORD_FILES)}, or a project (run `tileiropt run` "
                         "first)")


def kernel_file_folders(target: Path) -> list[Path]:
    """The records folders a kernel file's run may have written: the current folder's, then the file's own."""
    candidates = dict.fromkeys([Path.cwd() / DEFAULT_ARTIFACTS, target.resolve().parent / DEFAULT_ARTIFACTS])
    return [folder for folder in candidates if is_artifacts_folder(folder)]


def names_file(artifacts: Artifacts, report: Report, file: Path) -> bool:
    """Whether the records are of a run that covered `file`: a kernel of it reported, or it among the run's targets
    (a library file none of whose kernels the program launched)."""
    real = file.resolve()
    if any(Path(k.path).resolve() == real for k in report.kernels if k.path):
        return True
    expected = artifacts.capture.expected if artifacts.capture is not None else []
    return any(Path(KernelKey.parse(key).file).resolve() == real for key in expected)


def make_report(target: Path | None) -> Report:
    if target is not None and Path(target).suffix == ".py" and Path(target).is_file():
        for folder in kernel_file_folders(Path(target)):  # the first whose records are of this file
            artifacts = load_artifacts(folder)
            if not artifacts.empty and names_file(artifacts, build_report(artifacts), Path(target)):
                return report_of(folder, None, None, target)
    return report_of(*resolve_artifacts(target), target)  # none: the first folder's records, refused as not of it


def report_of(folder: Path, kernels: list[BenchKernel] | None, project_file: Path | None,
              target: Path | None) -> Report:
    artifacts = load_artifacts(folder)
    if artifacts.empty:
        unreadable = "; ".join(f"{name}: {problem}" for name, problem in artifacts.problems.items())
        raise UserError("no readable record in the artifacts folder" + (f" ({unreadable})" if unreadable else ""),
                        file=str(folder), hint="run `tileiropt run` (or the single phases) first")
    made_for = projects_of(artifacts)
    here = str(project_file.resolve()) if project_file is not None else None
    if here is not None and made_for and here not in made_for.values():  # a folder copied with its records
        others = "; ".join(f"{name}: {project}" for name, project in sorted(made_for.items()))
        raise UserError(f"every record here was made for another project ({others}): they name that folder's "
                        "files", file=str(folder),
                        hint=f"run `tileiropt run` here to record this project, or `tileiropt report {folder}` to "
                             "render those records as they are")
    report = build_report(artifacts, kernels)
    if not report.kernels:
        raise UserError("the records name no kernel", file=str(folder),
                        hint="run `tileiropt validate`, `bench` or `run` to record the kernels")
    if target is not None and Path(target).suffix == ".py" and Path(target).is_file() and \
            not names_file(artifacts, report, Path(target)):
        made_by = " ".join(artifacts.run.command) if artifacts.run and artifacts.run.command else "another run"
        raise UserError(f"the records in {folder} are not of {Path(target).name}: they were made by `{made_by}`",
                        file=str(target), hint=f"tileiropt run {target}")
    return report


def report_command(target: Path | None, *, fmt: str = "md", output: Path | None = None,
                       as_json: bool = False) -> ExitCode:
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown value {fmt!r}", hint="use md or json")
    report = make_report(target)
    as_json = as_json or fmt == "json"
    if output is None:
        sys.stdout.write(dumps(report) + "\n" if as_json else render_markdown(report))
        sys.stdout.flush()
        return ExitCode.OK
    try:  # never over records or a user's file; a Markdown file gets its pictures beside it, as `run` draws them
        if as_json:
            write_atomic(output, dumps(report) + "\n", replaces=is_report, what="report")
        written = [output] if as_json else write_markdown(report, output)
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(output)) from None
    for path in written:
        err_console.print(f"wrote {path}", markup=False)
    return ExitCode.OK
