"""The typed records of `classify` and `apply` (classify.json, apply.json), written and read here.

`apply_record` builds apply's document from its results; `apply_from_dict` and `classify_from_dict` read the
saved JSON back, checking every field's JSON type on the way (`output.dataclass_from_dict`): a damaged or
hand-edited record is refused in one line instead of failing later in the report. `record_dict` turns a
record into the JSON object written to disk, the same keys in the same order as before these dataclasses.

A field whose JSON key is not a Python name (`class`) says its key in the field's metadata. Keys a record
does not declare (`inputs` and `outputs`, which `run` adds for its reuse of a record) are kept on disk and
ignored on read.

classify.json's kernels stay JSON objects here: `KernelRecord.to_json()` of the analysis writes them.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tileiropt.output import dataclass_from_dict, to_jsonable
from tileiropt.schema import ERROR, NOT_RUN, PASS, SCHEMA_VERSION

R = TypeVar("R")
JSON_KEY = "json"  # field metadata: the field's key in the JSON object


@dataclass
class Change:
    """One insertion a rewrite made: where, what, why."""

    line: int
    what: str
    why: str


@dataclass
class ApplyKernel:
    """What the rewrite did to one kernel of a file, and what it left alone (and why); `apply` fills it in as it
    plans the kernel's rewrite."""

    kernel: str
    line: int
    kernel_class: str = field(metadata={JSON_KEY: "class"})
    twin: str | None = None
    configs_added: int = 0
    configs_added_at_most: int | None = None  # configs built by code: counted at import, at most this many
    changes: list[Change] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why something was not done
    hint_through: list[str] = field(default_factory=list)  # the package's wrappers its launch hints pass through:
    # whether they reach the kernel is measured where its TileIR code runs (`Provenance.options`)


@dataclass
class ApplyFile:
    """One kernel file `apply` read: its output and the kernels' changes."""

    file: str
    status: str  # PASS, or NOT_RUN when the file already holds the gate (left unchanged)
    output: str | None
    changed: bool
    already_prepared: bool
    written: list[str]
    kernels: list[ApplyKernel]
    host: list[Change] = field(default_factory=list, metadata={JSON_KEY: "host_changes"})  # outside any kernel


@dataclass
class ApplyError:
    """A file `apply` could not rewrite, and why."""

    file: str
    status: str
    error: str


class PhaseRecord:
    """A phase's record read back from its JSON document (`record_from_dict`: every field's JSON type checked,
    TypeError naming a wrong one), as the store reads it (`contract.store.Saved`)."""

    @classmethod
    def from_json(cls: type[R], data: dict[str, Any]) -> R:
        return record_from_dict(cls, data)


@dataclass
class ApplyRecord(PhaseRecord):
    """apply.json (docs/apply.md): `apply --json` prints it, `run` saves it."""

    FILE: ClassVar[str] = "apply.json"

    schema_version: int
    dry_run: bool
    release: dict | None
    files: list[ApplyFile]
    errors: list[ApplyError]

    def twins(self) -> set[tuple[str, str]]:
        """(optimized file, kernel) for every kernel apply wrote a TileIR twin of: the one record of it."""
        return {(str(Path(f.output).resolve()), k.kernel) for f in self.files if f.output for k in f.kernels
                if k.twin}


@dataclass
class ClassifyFile:
    """One file `classify` read: PASS with its kernel count, or why it was not parsed."""

    file: str
    status: str
    message: str | None
    kernels: int


@dataclass
class ClassifyRecord(PhaseRecord):
    """classify.json (docs/classify.md): each kernel's class, evidence and findings, per file, with a summary."""

    FILE: ClassVar[str] = "classify.json"

    schema_version: int
    release: dict | None
    kernels: list[dict]
    files: list[ClassifyFile]
    summary: dict

    def errors(self, files: list[Path]) -> dict[str, dict[str, list[dict]]]:
        """Per file of `files` (as given), kernel -> its error findings (JSON objects), for every kernel classify
        read there: the one verdict of whether a kernel gets TileIR code, which apply follows."""
        wanted = {file.resolve(): str(file) for file in files}
        found: dict[str, dict[str, list[dict]]] = {str(file): {} for file in files}
        resolved: dict[str, Path] = {}  # a library's kernels share few files: each resolved once
        for kernel in self.kernels:
            if not isinstance(kernel, dict):
                continue
            name = str(kernel.get("file"))
            path = resolved.setdefault(name, Path(name).resolve())
            if path in wanted:
                found[wanted[path]][str(kernel.get("kernel"))] = [
                    f for f in kernel.get("findings") or [] if isinstance(f, dict) and f.get("severity") == "error"]
        return found


def apply_record(results: list[Any], errors: list[Any], *, dry_run: bool, release: dict | None) -> ApplyRecord:
    """apply's record of its results (`transform.apply.ApplyResult`, whose kernels are `ApplyKernel`s already)
    and of the files it could not rewrite (`transform.command.FileError`)."""
    files = [ApplyFile(file=r.path, status=NOT_RUN if r.already_prepared else PASS, output=r.output,
                       changed=r.changed, already_prepared=r.already_prepared, written=list(r.written),
                       kernels=list(r.kernels), host=list(r.host))
             for r in results]
    return ApplyRecord(schema_version=SCHEMA_VERSION, dry_run=dry_run, release=release, files=files,
                       errors=[ApplyError(file=e.path, status=ERROR, error=e.error) for e in errors])


def record_dict(record: object) -> Any:
    """The JSON value of a record: dataclasses as objects keyed by their JSON keys, in field order."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.metadata.get(JSON_KEY, f.name): record_dict(getattr(record, f.name))
                for f in dataclasses.fields(record)}
    if isinstance(record, list):
        return [record_dict(item) for item in record]
    return to_jsonable(record)


def record_from_dict(cls: type[R], data: object) -> R:
    """A record from its JSON object, nested records included; raises TypeError naming the field whose JSON
    type is wrong, or the missing one."""
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object, got {type(data).__name__}")
    record_class: type = cls  # the class itself, as the cache takes it (mypy does not see `type[R]` as Hashable)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        key = f.metadata.get(JSON_KEY, f.name)
        if key not in data:
            continue  # dataclass_from_dict names the missing field
        value, inner = data[key], _record_types(record_class).get(f.name)
        if inner is not None and isinstance(value, list):
            value = [record_from_dict(inner, item) for item in value]
        values[f.name] = value
    return dataclass_from_dict(cls, values)


@functools.cache
def _record_types(cls: type) -> dict[str, type]:
    """Field name -> the record class of its items, for fields typed as a list of records."""
    found: dict[str, type] = {}
    for name, hint in typing.get_type_hints(cls).items():
        if typing.get_origin(hint) is list:
            (item,) = typing.get_args(hint)
            if isinstance(item, type) and dataclasses.is_dataclass(item):  # a hint's argument: a class
                found[name] = item
    return found


def apply_from_dict(data: object) -> ApplyRecord:
    """apply.json read back (see `record_from_dict`)."""
    return record_from_dict(ApplyRecord, data)


def classify_from_dict(data: object) -> ClassifyRecord:
    """classify.json read back (see `record_from_dict`); its kernels stay JSON objects."""
    return record_from_dict(ClassifyRecord, data)
