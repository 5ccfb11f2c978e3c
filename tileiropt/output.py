"""Printing for humans (Rich, on stderr-safe terminals) and for scripts (JSON on stdout)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import sys
import tempfile
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from rich.console import Console

from tileiropt.errors import UserError

T = TypeVar("T")

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def short_names(paths: list[str]) -> tuple[str, dict[str, str]]:
    """The folder every file lies in, and each file relative to it (keeps a table narrow); ("", {}) for none."""
    if not paths:
        return "", {}
    root = os.path.commonpath([os.path.dirname(os.path.abspath(path)) for path in paths])
    return root, {path: os.path.relpath(os.path.abspath(path), root) for path in paths}


def to_jsonable(value: object) -> Any:
    """Plain JSON types from dataclasses, paths, tuples and non-finite floats."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf": JSON has no literal for them
    return value


def dumps(value: object) -> str:
    return json.dumps(to_jsonable(value), indent=2, sort_keys=False)


def print_json(value: object) -> None:
    sys.stdout.write(dumps(value) + "\n")
    sys.stdout.flush()


# Keys one of tileiropt's JSON records has at its top level (check, classify, apply, validate, bench, run,
# capture, report): a JSON file without any of them is someone else's and is never replaced.
RECORD_KEYS = frozenset({"schema_version", "tileir_ready", "records", "rows", "phases", "launches", "files",
                         "kernels"})


def is_record(text: str) -> bool:
    """Whether `text` is a JSON record tileiropt wrote."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and bool(RECORD_KEYS & set(data))


def writable(path: Path, replaces: Callable[[str], bool] | None = None, what: str = "file") -> None:
    """Refuse, in one line, to write where a user's file would be lost: a symbolic link or anything but a regular
    file is never replaced (`-o /dev/stdout` must not replace the device), and an existing file is replaced only
    when `replaces(its text)` says tileiropt wrote it (None: any regular file may be replaced)."""
    path = Path(path)
    if path.is_symlink():
        raise UserError("is a symbolic link; tileiropt never replaces a link (nor the file behind it)",
                        file=str(path), hint="give the path of a regular file")
    if not path.exists():
        return
    if not path.is_file():
        raise UserError("exists and is not a regular file", file=str(path), hint="give the path of a regular file")
    if replaces is None:
        return
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[: 4 * 1024 * 1024]
    except OSError as exc:
        raise UserError(f"cannot read the existing file: {exc.strerror or exc}", file=str(path)) from None
    if not replaces(head):
        raise UserError(f"exists and is not a {what} tileiropt wrote; not replacing it", file=str(path),
                        hint="move it away, or choose another path")


def write_atomic(path: Path, text: str, encoding: str = "utf-8", *,
                 replaces: Callable[[str], bool] | None = None, what: str = "file") -> None:
    """Write `text` to `path` through a temporary file in the same folder, then rename.

    Newlines are written as they are in `text`; the file keeps the mode of the file it replaces
    (a new file gets the umask's default). A failure is a UserError naming the file. See `writable`
    for what is never replaced.
    """
    path = Path(path)
    writable(path, replaces, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(path),
                        hint="choose a folder you can write to") from None
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(path),
                        hint="choose a folder you can write to") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    """The existing file's permission bits, else what a plain open() would give under the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def save_record_file(record: object, artifacts: Path | str, name: str) -> Path:
    """Write a phase's record to ``<artifacts>/<name>`` as JSON (atomically) and return the path."""
    path = Path(artifacts) / name
    write_atomic(path, dumps(record) + "\n", replaces=is_record, what="record")
    return path


def load_record_file(path: Path | str, name: str, key: str, what: str, command: str,
                     parse: Callable[[dict], T]) -> T:
    """Read a phase's JSON record (a file, or the artifacts folder holding `name`) whose `key` is a
    list, and build it with `parse`. Raises UserError naming the file and the command that rewrites it."""
    path = Path(path)
    if path.is_dir():
        path = path / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"no {what}", file=str(path), hint=f"run `{command}` first") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UserError(f"cannot read {what}: {exc}", file=str(path), hint=f"rerun `{command}` to rewrite it") from None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise UserError(f"not a {what} file (no `{key}` list)", file=str(path))
    try:
        return parse(data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise UserError(f"{what} in an unexpected layout ({exc})", file=str(path),
                        hint=f"rerun `{command}` with this version of tileiropt") from None


class JobMessage:
    """A dataclass sent to a worker as one JSON object of plain values (a validation case, a bench item).
    `DECODED`: the fields holding an object with a JSON form of its own, and how each is read back."""

    DECODED: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    def to_json(self) -> dict[str, Any]:
        """Plain values; a field holding an object with a JSON form of its own (a captured launch) in that form."""
        return {f.name: _message_value(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls: type[T], data: dict[str, Any]) -> T:
        """Built from the message; keys this version does not know are left out."""
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        decoded = cls.DECODED  # type: ignore[attr-defined]
        return cls(**{k: decoded[k](v) if k in decoded and v is not None else v
                      for k, v in data.items() if k in known})


def _message_value(value: object) -> Any:
    own = getattr(value, "to_json", None)
    return own() if callable(own) else to_jsonable(value)


def dataclass_from_dict(cls: type[T], data: object) -> T:
    """A record dataclass from its JSON dict; unknown keys are ignored, missing ones raise TypeError."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object, got {type(data).__name__}")
    record_class: type = cls  # the class itself, as the cache takes it (mypy does not see `type[T]` as Hashable)
    hints = _field_types(record_class)
    values = {k: v for k, v in data.items() if k in hints}
    for key, value in values.items():
        if not _has_json_type(value, hints[key]):
            raise TypeError(f"{cls.__name__}.{key} must be {_json_type_name(hints[key])}, got {type(value).__name__}")
    return cls(**values)


# The JSON shapes a record field may hold, checked on read so a hand-edited or damaged record is refused in one
# line (a `"environment": 7` must not reach `dict(...)` in the report). Fields of other types are not checked here.
_JSON_TYPES: dict[Any, tuple[type, ...]] = {dict: (dict,), list: (list,), str: (str,), bool: (bool,),
                                            int: (int,), float: (int, float)}


@functools.cache
def _field_types(cls: type) -> dict[str, tuple[tuple[type, ...], bool] | None]:
    """Field name -> (accepted JSON types, None allowed), or None where the field's type is not a JSON shape."""
    hints = typing.get_type_hints(cls)
    found: dict[str, tuple[tuple[type, ...], bool] | None] = {}
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name, Any)
        union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        members = typing.get_args(hint) if union else (hint,)
        nullable = type(None) in members
        accepted = [_JSON_TYPES.get(typing.get_origin(m) or m) for m in members if m is not type(None)]
        found[f.name] = ((tuple(t for group in accepted if group is not None for t in group), nullable)
                         if all(accepted) else None)
    return found


def _has_json_type(value: object, expected: tuple[tuple[type, ...], bool] | None) -> bool:
    if expected is None:
        return True
    accepted, nullable = expected
    if value is None:
        return nullable
    if isinstance(value, bool) and bool not in accepted:
        return False
    if float in accepted and value in ("nan", "inf", "-inf"):
        return True  # how `to_jsonable` writes a non-finite float
    return isinstance(value, accepted)


def _json_type_name(expected: tuple[tuple[type, ...], bool] | None) -> str:
    accepted, nullable = expected or ((), True)
    names = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a number",
             float: "a number"}
    return " or ".join(dict.fromkeys([names[t] for t in accepted] + (["null"] if nullable else [])))
