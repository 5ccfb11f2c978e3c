"""The artifacts folder as one store: each record type names its own file (`FILE`) and reads itself back from its
JSON document (`from_json`); the phase that makes it saves it as it finishes (validate.json holds compatibility's
records, then validate's too; classify.json the launched files', then the library's others too), and it is read
back (`load`) for an unchanged re-run (`reuse`: only when the inputs it was made from are this run's) or by
`tileiropt report`; within a run, records pass in memory.

A record type whose results also go to a journal as they finish (`JOURNAL`: validate, bench) supersedes it when
saved: the journal is removed. The journal's lines carry `JOURNAL_MARK`: a file without it is not ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from tileiropt.output import save_record_file

JOURNAL_MARK = "tileiropt journal"  # every journal line carries it: a file without it is not ours
S_ = TypeVar("S_", bound="Saved")


class Saved(Protocol):
    """A record type the store keeps: the file it names, and how it reads its JSON document (TypeError, ValueError
    or KeyError when the document is not one)."""

    FILE: ClassVar[str]

    @classmethod
    def from_json(cls: type[S_], data: dict[str, Any]) -> S_: ...


def journal_path(artifacts: Path | str, name: str) -> Path:
    """Where the results of `name` (validate, bench) go as they finish."""
    return Path(artifacts) / f"{name}.journal.jsonl"


def is_journal(path: Path) -> bool:
    """`path` is a journal the tool wrote (or an empty file)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
        return not first or JOURNAL_MARK in first
    except OSError:
        return False


def clear_journal(artifacts: Path | str, name: str) -> None:
    """Remove the journal of `name`, when it is the tool's."""
    path = journal_path(artifacts, name)
    if path.is_file() and not path.is_symlink() and is_journal(path):
        path.unlink(missing_ok=True)


class Store:
    """One artifacts folder: `save` a record under its type's file, `load` it back (or its raw `document`),
    `reuse` one whose inputs are this run's."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)

    def path(self, kind: type[Saved]) -> Path:
        return self.folder / kind.FILE

    def save(self, kind: type[Saved], value: object) -> Path:
        """Write `value` (the record, or its JSON document) to the file `kind` names, atomically; a journal it
        supersedes goes."""
        path = save_record_file(value, self.folder, kind.FILE)
        journal = getattr(kind, "JOURNAL", None)
        if isinstance(journal, str):
            clear_journal(self.folder, journal)
        return path

    def document(self, kind: type[Saved]) -> object:
        """The JSON document saved for `kind`, or None when there is none or it cannot be read."""
        try:
            return json.loads(self.path(kind).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None

    def load(self, kind: type[S_]) -> S_ | None:
        """The saved record of `kind`, read back; None when there is none or it is not one."""
        return _read(kind, self.document(kind))

    def reused(self, kind: type[S_], inputs: str) -> tuple[dict[str, Any], S_] | None:
        """The saved document of `kind` and its record, read once, when its `inputs` are `inputs` and it reads as
        its record: a record of another shape, or of other inputs, is never reused."""
        document = self.document(kind)
        if not isinstance(document, dict) or document.get("inputs") != inputs:
            return None
        record = _read(kind, document)
        return None if record is None else (document, record)

    def reuse(self, kind: type[Saved], inputs: str) -> dict[str, Any] | None:
        """The saved document of `kind` when it may be reused (`reused`)."""
        found = self.reused(kind, inputs)
        return None if found is None else found[0]


def _read(kind: type[S_], document: object) -> S_ | None:
    """`kind`'s record from its JSON document; None when it is not one."""
    if not isinstance(document, dict):
        return None
    try:
        return kind.from_json(document)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return None
