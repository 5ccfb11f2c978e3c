"""`tileiropt init`: write the commented project-file template shipped in `tileiropt.templates`."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from tileiropt.errors import UserError
from tileiropt.output import write_atomic
from tileiropt.project import PROJECT_FILE

TEMPLATE_NAME = "tileiropt.toml"


def read_template(name: str) -> str:
    """A file of `templates/`: from the installed `tileiropt.templates` package, or from the
    source checkout when tileiropt runs uninstalled (e.g. through PYTHONPATH)."""
    try:
        resource = files("tileiropt.templates").joinpath(name)
        return resource.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        source = Path(__file__).resolve().parent.parent / "templates" / name
        if not source.is_file():
            raise UserError(f"template {name!r} is missing from the installation",
                            hint="reinstall tileiropt (pip install -e .)") from None
        return source.read_text(encoding="utf-8")


def project_template_text() -> str:
    """The commented project-file template."""
    return read_template(TEMPLATE_NAME)


def write_project_template(path: Path | str | None = None, *, force: bool = False) -> Path:
    """Write the template to `path` (a file, or a folder to hold `tileiropt.toml`).

    Refuses to replace an existing file unless `force`.
    """
    target = Path(path) if path is not None else Path(PROJECT_FILE)
    if target.is_dir():
        target = target / PROJECT_FILE
    if target.exists() and not target.is_file():
        raise UserError("exists and is not a regular file", file=str(target), hint="choose another path")
    if target.exists() and not force:
        raise UserError("file exists; not overwriting it", file=str(target),
                        hint="pass --force to replace it, or give another path")
    try:
        write_atomic(target, project_template_text())
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    return target
