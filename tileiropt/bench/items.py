"""One measurement of the bench phase, as the parent plans it and a worker receives it (plain JSON values)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tileiropt.bench.records import BenchRow, RowValues
from tileiropt.harness.provenance import Provenance, file_digest
from tileiropt.output import JobMessage
from tileiropt.project.launch import CapturedLaunch
from tileiropt.schema import Cause

if TYPE_CHECKING:
    from typing_extensions import Unpack


@dataclass
class BenchItem(JobMessage):
    """One measurement, as sent to a worker. Every field is a plain JSON value."""

    id: int
    kernel: str
    variant: str  # "original" | "optimized" | "reference"
    backend: str  # "ptx" | "tileir" | "torch"
    path: str  # the kernel file ("" for reference rows)
    entry: str
    reference: str | None
    size: int | None
    dims: dict[str, int]
    shapes: dict[str, list[int]]
    dtypes: dict[str, str]
    args: dict[str, Any] = field(default_factory=dict)
    ranges: dict[str, list[int]] = field(default_factory=dict)
    seed: int = 0
    search_paths: list[str] = field(default_factory=list)
    method: str = "auto"  # "auto" | DO_BENCH | CUDAGRAPH
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    timeout_s: float = 300.0
    original_path: str = ""  # the user's file (the optimized file is imported in its place)
    module: str | None = None
    call: str | None = None
    launch: CapturedLaunch | None = None  # a captured launch: timed as replayed (its own shapes and config)

    DECODED: ClassVar[dict[str, Callable[[Any], Any]]] = {"launch": CapturedLaunch.from_json}

    def row(self, status: str, reason: str = "", provenance: Provenance | None = None, *, cause: Cause | None = None,
            evidence: list[str] | None = None, **values: Unpack[RowValues]) -> BenchRow:
        return BenchRow(kernel=self.kernel, variant=self.variant, backend=self.backend, size=self.size,
                        status=status, reason=reason, path=self.path or (self.reference or ""),
                        source_sha256=file_digest(self.path) if self.path else None,
                        dims=dict(self.dims), shapes=dict(self.shapes), dtypes=dict(self.dtypes),
                        provenance=provenance or Provenance(), cause=cause, evidence=list(evidence or []), **values)
