"""A project from the command line's target: a project file, a folder holding one, a kernel file with the
flags of one kernel (`--entry`, `--shapes`, ...), or a kernel file or library folder whose launches are
captured from a program (`resolve_target`).

The model (`project_model`) and the project file's reader (`project_file`) are importable from here too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tileiropt.classify.discovery import scan_file
from tileiropt.errors import UserError
from tileiropt.harness.entry_ref import REFERENCE_ORIGINAL
from tileiropt.project.file import load_project, parse_project
from tileiropt.project.library import check_library, defines_kernel, library_files
from tileiropt.project.model import (
    DEFAULT_ARTIFACTS,
    DEFAULT_TIMEOUT_S,
    PROJECT_FILE,
    CaptureRequest,
    KernelSpec,
    Project,
)

__all__ = [
    "DEFAULT_ARTIFACTS", "DEFAULT_TIMEOUT_S", "PROJECT_FILE", "REFERENCE_ORIGINAL", "CaptureRequest", "KernelSpec",
    "Project", "check_capture_target", "load_project", "parse_project", "project_from_capture", "project_from_flags",
    "project_from_library", "resolve_target",
]


def _json_flag(flag: str, text: str | None, expected: type) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{flag}: not valid JSON ({exc.msg} at column {exc.colno})",
                        hint=f"""quote it for the shell, e.g. {flag} '{{"x": [32, 512]}}'""") from None
    if not isinstance(value, expected):
        raise UserError(f"{flag}: expected a JSON {expected.__name__}, got {type(value).__name__}")
    return value


def project_from_flags(
    kernel: Path | str,
    *,
    entry: str | None,
    shapes: str | None,
    dtypes: str | None = None,
    reference: str | None = None,
    args: str | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    sizes: list[int] | None = None,
    artifacts: Path | str | None = None,
) -> Project:
    """The seed's flags (--entry, --shapes, --dtypes, --reference, --args) as a one-kernel project."""
    kernel = Path(kernel)
    if not kernel.is_file():
        raise UserError("kernel file not found", file=str(kernel), hint="check the path")
    if not entry:
        raise UserError("--entry is required with a kernel file", file=str(kernel),
                        hint="name the Python wrapper that launches the kernel, e.g. --entry softmax; or let "
                             "`tileiropt run kernel.py` capture its launches")
    if shapes is None:
        raise UserError("--shapes is required with a kernel file", file=str(kernel),
                        hint="""e.g. --shapes '{"x": [32, 512, 4096]}'""")
    raw: dict[str, Any] = {"path": str(kernel.resolve()), "entry": entry,
                           "inputs": _json_flag("--shapes", shapes, dict)}
    if dtypes is not None:
        raw["dtypes"] = _json_flag("--dtypes", dtypes, object) if dtypes.strip()[:1] in '{["' else dtypes
    if reference is not None:
        raw["reference"] = reference
    if args is not None:
        raw["args"] = _json_flag("--args", args, dict)
    if atol is not None:
        raw["atol"] = atol
    if rtol is not None:
        raw["rtol"] = rtol
    data: dict[str, Any] = {"kernel": [raw]}
    if sizes:
        data["defaults"] = {"sizes": sizes}
    root = Path.cwd()
    if artifacts is not None:
        data["project"] = {"artifacts": str(artifacts)}
    return parse_project(data, None, root)


def project_from_capture(kernel: Path, command: list[str] | None, *, artifacts: Path | str | None = None,
                         budget: float | None = None) -> Project:
    """`tileiropt run kernel.py [-- command]`: no project, no shapes; the kernels' launches are captured
    from the program (the file itself as a script, or the command) and replayed against the original."""
    check_capture_target(kernel)
    check_command(command)
    root = Path.cwd()
    return Project(file=None, root=root, kernels=[], artifacts=root / (artifacts or DEFAULT_ARTIFACTS),
                   capture=CaptureRequest(files=[kernel.resolve()], command=command or None, budget=budget))


def project_from_library(folder: Path, command: list[str] | None, *, include: list[str] | None = None,
                         exclude: list[str] | None = None, artifacts: Path | str | None = None,
                         budget: float | None = None) -> Project:
    """`tileiropt run DIR -- COMMAND` on a folder without a project file: every kernel file under DIR (see
    `tileiropt/project/library.py`) is a capture target of the command."""
    found = library_files(folder, include, exclude)
    check_library(found)
    check_command(command)
    root = Path.cwd()
    return Project(file=None, root=root, kernels=[], artifacts=root / (artifacts or DEFAULT_ARTIFACTS),
                   capture=CaptureRequest(files=found.kernel_files, command=command, budget=budget,
                                          library=found.folder, made_by_call=found.made_by_call))


PYTHON_VALUED = {"-W", "-X", "-Q", "--check-hash-based-pycs"}  # python's options that take the next word


def check_command(command: list[str] | None, cwd: Path | None = None) -> None:
    """Before any phase runs (and before the last report is replaced): the program after `--` can start. Its
    executable is on PATH (or a file), and a Python script it names (`python drivr.py`) exists; a typo ends here,
    exit 2, instead of running every phase on a program that never started."""
    import shutil

    if not command:
        return
    cwd = cwd or Path.cwd()
    executable = command[0]
    bound = Path(executable).name in ("python", "python3", "pytest")  # run with this interpreter (the capture)
    if not bound and shutil.which(executable) is None and not (cwd / executable).is_file():
        raise UserError(f"the command after `--` cannot start: {executable!r} is not a program on PATH",
                        hint=f"set variables through env: env {' '.join(command[:2])} ..." if "=" in executable
                        else "check its spelling, or give its path")
    args = command[1:]
    first, valued = None, False  # the first word that is neither an option nor an option's value (`-W ignore`)
    for i, arg in enumerate(args):
        if valued:
            valued = False
        elif arg in PYTHON_VALUED:
            valued = True
        elif not arg.startswith("-"):
            first = i
            break
    if Path(executable).name.startswith("python") and first is not None and not {"-m", "-c"} & set(args[:first]):
        script = args[first]  # `python drivr.py`, not `python -m pytest` or `python -c "..."`
        if not (cwd / script).is_file():
            raise UserError("the command after `--` cannot start: its script is not there", file=script,
                            hint=f"check the file name (the command runs in {cwd})")


def check_capture_target(kernel: Path) -> None:
    """Before anything runs: the kernel file exists, parses (else exit 2 naming file:line) and defines a Triton
    kernel (else exit 2: running the program could only find that out), as a library's files are sorted
    (`library.defines_kernel`: at module level or under a module-level `if`/`try`/`with`)."""
    if not kernel.is_file():
        raise UserError("kernel file not found", file=str(kernel), hint="check the path")
    scanned = scan_file(kernel)
    if scanned.module.kernels or defines_kernel(scanned.tree, str(kernel)):
        return
    raise UserError("no Triton kernel (@triton.jit) is defined in this file", file=str(kernel),
                    hint="give the file that defines the kernels; the command after `--` runs them")


def resolve_target(target: Path | str | None, **flags: Any) -> Project:
    """A project from `target`: a project file, a folder holding one, or a kernel file with flags."""
    target = Path(target) if target else Path.cwd()
    capture = flags.pop("capture", None)
    may_capture = flags.pop("may_capture", False)
    include, exclude = flags.pop("include", None), flags.pop("exclude", None)
    if (include or exclude) and not (may_capture and capture is not None and target.is_dir()
                                     and not (target / PROJECT_FILE).is_file()):
        raise UserError("--include/--exclude choose the files of a library folder", file=str(target),
                        hint="give a folder without tileiropt.toml and a command: tileiropt run pkg/ -- pytest")
    if target.suffix == ".py":
        if may_capture and (capture is not None or not any(flags.get(k) for k in ("entry", "shapes"))):
            return project_from_capture(target, capture, artifacts=flags.get("artifacts"))
        return project_from_flags(target, **flags)
    if may_capture and capture is not None and target.is_dir() and not (target / PROJECT_FILE).is_file():
        return project_from_library(target, capture, include=include, exclude=exclude,
                                    artifacts=flags.get("artifacts"))
    if capture is not None:
        raise UserError("a command after `--` captures launches of a kernel file or of a library folder "
                        "(this one has a project file)", file=str(target),
                        hint="set `capture` in its tileiropt.toml, or give the kernel file: tileiropt run ops.py -- "
                             "pytest tests/")
    given = [f"--{k}" for k, v in flags.items() if v is not None and k in ("entry", "shapes", "dtypes", "reference",
                                                                          "args", "atol", "rtol")]
    if given:
        raise UserError(f"{'/'.join(given)} apply to a kernel .py file, not to a project", file=str(target),
                        hint="set these in the project file's [[kernel]] table, or pass the kernel file")
    if target.is_file() and target.suffix != ".toml":
        raise UserError("not a kernel file (.py), a project file (.toml) or a folder", file=str(target),
                        hint="give a .py file of Triton kernels, a tileiropt.toml, or the folder that holds them")
    return load_project(target)
