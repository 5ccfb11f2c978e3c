"""`tileiropt init`: write the commented project-file template shipped in `tileiropt.templates`."""

from __future__ import annotations

import shlex
from importlib.resources import files
from pathlib import Path

from tileiropt.errors import UserError
from tileiropt.output import write_atomic
from tileiropt.project.library import check_library, library_files
from tileiropt.project.spec import PROJECT_FILE

TEMPLATE_NAME = "tileiropt.toml"


def read_template(name: str) -> str:
    """A file of `templates/`: from the installed `tileiropt.templates` package, or from the
    source checkout when tileiropt runs uninstalled (e.g. through PYTHONPATH)."""
    try:
        resource = files("tileiropt.templates").joinpath(name)
        return resource.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        source = Path(__file__).resolve().parents[2] / "templates" / name
        if not source.is_file():
            raise UserError(f"template {name!r} is missing from the installation",
                            hint="reinstall tileiropt (pip install -e .)") from None
        return source.read_text(encoding="utf-8")


def project_template_text() -> str:
    """The commented project-file template."""
    return read_template(TEMPLATE_NAME)


def target_path(path: Path | str | None, force: bool) -> Path:
    target = Path(path) if path is not None else Path(PROJECT_FILE)
    if target.is_dir():
        target = target / PROJECT_FILE
    if target.exists() and not target.is_file():
        raise UserError("exists and is not a regular file", file=str(target), hint="choose another path")
    if target.exists() and not force:
        raise UserError("file exists; not overwriting it", file=str(target),
                        hint="pass --force to replace it, or give another path")
    return target


def write_project(target: Path, text: str) -> None:
    try:
        write_atomic(target, text)
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None


def write_project_template(path: Path | str | None = None, *, force: bool = False) -> Path:
    """Write the template to `path` (a file, or a folder to hold `tileiropt.toml`).

    Refuses to replace an existing file unless `force`.
    """
    target = target_path(path, force)
    write_project(target, project_template_text())
    return target



def write_library_project(folder: Path, command: list[str], output: Path | None, *, force: bool = False,
                          include: list[str] | None = None, exclude: list[str] | None = None) -> tuple[Path, str]:
    """`tileiropt init DIR -- COMMAND`: a project file (./tileiropt.toml, or `output`) that captures the command's
    launches of every kernel in the library folder DIR; (path written, what it found)."""
    found = library_files(folder, include, exclude)
    check_library(found)
    target = target_path(output, force)
    try:
        library = Path(folder).resolve().relative_to(target.parent.resolve()).as_posix()
    except ValueError:
        library = str(Path(folder).resolve())

    def toml_list(values: list[str]) -> str:
        return "[" + ", ".join(_toml_string(v) for v in values) + "]"

    lines = [f"# tileiropt project for the library {library}/: `tileiropt run` captures the launches the command",
             f"# makes of the kernels in its {len(found.kernel_files)} kernel file(s), then validates, benches and "
             "reports them.", "", "[project]", f"capture = {_toml_string(shlex.join(command))}",
             f"library = {_toml_string(library)}"]
    if include:
        lines.append(f"include = {toml_list(include)}")
    if exclude:
        lines.append(f"exclude = {toml_list(exclude)}")
    write_project(target, "\n".join(lines) + "\n")
    return target, f"{len(found.kernel_files)} kernel file(s) under {library}/"


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for these characters)."""
    import json

    return json.dumps(value)
