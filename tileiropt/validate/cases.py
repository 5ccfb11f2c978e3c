"""A validation case: one kernel file, entry, shape set and dtype set, as sent to a worker.

The parent (`validate.py`) builds cases from the project; the worker (`worker.py`) runs every
autotune config of each. Cases travel as JSON, so every field is a plain value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tileiropt.harness.package_paths import package_folder
from tileiropt.harness.provenance import Provenance, file_digest
from tileiropt.harness.scaling import describe_scaling
from tileiropt.output import JobMessage
from tileiropt.project.launch import CapturedLaunch
from tileiropt.schema import NOT_RUN, Cause, Repeat
from tileiropt.validate.records import Measures, ValidationRecord

if TYPE_CHECKING:
    from typing_extensions import Unpack


@dataclass
class Case(JobMessage):
    id: int
    kernel: str
    variant: str  # "original" | "optimized"
    path: str  # the file to validate
    entry: str
    reference: str  # torch expression, "pkg.mod:fn" or "original"
    shapes: dict[str, list[int]]
    dtypes: dict[str, str]
    atol: float
    rtol: float
    original_path: str | None = None  # the untransformed file, for reference = "original"
    dims: dict[str, int] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    ranges: dict[str, list[int]] = field(default_factory=dict)
    seed: int = 0
    search_paths: list[str] = field(default_factory=list)  # importable folders (the project root)
    scaled_from: dict[str, list[int]] | None = None
    start_item: int = 0  # resume after a timeout or crash: the first config item to run
    shard: int = 0  # this job runs the items `shards.owners` gives shard `shard` of `shards` (validate.shards)
    shards: int = 1
    module: str | None = None  # the original's dotted module name, when it lives in a package
    call: str | None = None  # the entry's call expression (None: entry(**inputs, **args))
    launch: CapturedLaunch | None = None  # a captured launch, replayed instead of calling an entry
    file_atomics: bool = False  # a JIT function of the original file updates memory atomically (decided by the
    # parent from the file's model, `FileModel.uses_atomics`; the worker reads it)

    DECODED: ClassVar[dict[str, Callable[[Any], Any]]] = {"launch": CapturedLaunch.from_json}


def user_paths(case: Case) -> list[str]:
    """The case's own files and, for a package, its folder: a failure raised in them is the user's code's."""
    files = [str(Path(p).resolve()) for p in (case.path, case.original_path) if p]
    folder = package_folder(Path(case.original_path or case.path), case.module)
    return files + ([str(folder)] if folder else [])


def record_for(case: Case, backend: str, config: str, status: str, reason: str = "",
               provenance: Provenance | None = None, *, cause: Cause | None = None, evidence: list[str] | None = None,
               repeat: Repeat | None = None, bf16_wrong: bool = False,
               **measures: Unpack[Measures]) -> ValidationRecord:
    """A record of `case` on `backend`: whose failure it is (`cause`, `evidence`: `harness.blame`), the earlier
    config it repeats (`repeat`); `measures` fills max_abs, mismatches, seconds, ..."""
    if case.scaled_from and status != NOT_RUN:
        note = describe_scaling(case.scaled_from, case.shapes)
        reason = f"{reason}; {note}" if reason else note
    return ValidationRecord(
        kernel=case.kernel, variant=case.variant, backend=backend, config=config, status=status,
        reason=reason, path=case.path, shapes=case.shapes, dtypes=case.dtypes, reference=case.reference or None,
        atol=case.atol, rtol=case.rtol, scaled_from=case.scaled_from, source_sha256=file_digest(case.path),
        provenance=provenance or Provenance(), cause=cause, evidence=list(evidence or []), repeat=repeat,
        bf16_wrong=bf16_wrong, **measures,
    )
