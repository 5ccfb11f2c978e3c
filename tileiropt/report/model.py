"""The report's content as plain dataclasses: per kernel, the five seed sections (classification,
compatibility, transformations, TileIR validation, benchmark) and the output; then the whole report.

`build` fills them from the records, `markdown` renders them, `report --format json` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tileiropt.bench.records import BenchRow
from tileiropt.classify.rules.base import KernelFinding
from tileiropt.records.run import RunResult
from tileiropt.report.library import LibrarySummary
from tileiropt.report.verdict import KernelVerdict
from tileiropt.schema import SCHEMA_VERSION, Cause


@dataclass
class Verdict:
    """The outcome of a set of validation records (one backend, one variant)."""

    status: str  # PASS | FAIL | NOT_RUN (tileiropt.schema)
    backend: str = ""  # validate's backend name
    backend_description: str = ""
    compiled_by: str | None = None  # what really compiled the kernels (provenance)
    max_difference: float | None = None  # max absolute difference over the records that compared
    tolerance: str = ""  # the tolerances those records were held to ("atol 1e-05, rtol 1e-05"; several joined)
    reason: str = ""  # why it did not run
    configs: int = 0  # records that ran
    not_run: int = 0  # records that did not
    repeats: int = 0  # of those, configs the interpreter would compute, or PTX compile, as an earlier one (schema)
    dtypes: list[str] = field(default_factory=list)
    fallback: bool = False
    failures: list[str] = field(default_factory=list)  # "config: reason", the first few
    notes: list[str] = field(default_factory=list)  # e.g. shapes scaled for the interpreter
    agrees_only: bool = False  # a pass computed where the interpreter's bfloat16 products are wrong (probed)
    cause: Cause | None = None  # FAIL: whose failure the first failing record is; PASS: a caveat (NONDETERMINISM)
    failed_status: str = ""  # FAIL: the first failing record's own status (fail: wrong values; error: it raised)
    evidence: list[str] = field(default_factory=list)  # FAIL: what its cause was told from (last frames, stderr)


@dataclass
class Section:
    """A section that did not run, or its lines."""

    ran: bool
    reason: str = ""  # "not run: ..." when it did not
    lines: list[str] = field(default_factory=list)
    count: int = 0  # what the lines count (transformations: the changes made)
    left_alone: list[str] = field(default_factory=list)  # transformations: what was not done, and why


@dataclass
class Classification:
    ran: bool
    reason: str = ""
    kernel_type: str = ""  # seed wording, e.g. "norm-like"; several when the file's kernels differ
    strategy: str = ""
    kernels: list[dict[str, Any]] = field(default_factory=list)  # kernel, line, class, confidence, strategy
    findings: list[KernelFinding] = field(default_factory=list)


@dataclass
class BenchLine:
    label: str
    variant: str
    backend: str
    time: str  # "0.123" or "not run: ..." or "error: ..."
    speedup: str  # "1.00x" or "—"
    median_ms: float | None = None
    speedup_value: float | None = None
    status: str = "pass"  # the row's status (schema): a line that did not run says why in `time`


@dataclass
class BenchTable:
    dtypes: str
    size: int | None
    dims: dict[str, int]
    lines: list[BenchLine]
    sizes: list[int] = field(default_factory=list)  # a table that stands for several sizes (none ran)


@dataclass
class Benchmark:
    ran: bool
    reason: str = ""
    tables: list[BenchTable] = field(default_factory=list)
    details: list[BenchRow] = field(default_factory=list)  # the timed rows, for the detail table
    ptx_ratios: list[dict[str, Any]] = field(default_factory=list)  # size, dtypes, ratio, within_noise
    tileir_speedups: list[float] = field(default_factory=list)
    peaks_note: str = ""
    plot: str = ""  # its sweep drawn beside the report (`report/<kernel>.svg`, relative to it), or why not


@dataclass
class KernelReport:
    name: str
    path: str
    optimized_path: str
    stopped: dict[str, str] | None  # {"phase", "reason"} from run.json
    classification: Classification
    compatibility: Verdict
    transformations: Section
    tileir_validation: Verdict
    tileir_code: Verdict | None  # the TileIR code forced on under PTX / the interpreter
    optimized_ptx: Verdict | None  # the optimized file with its gate off
    benchmark: Benchmark
    output: Section
    coverage: list[Coverage] = field(default_factory=list)
    tileir_emulated: Verdict | None = None  # the optimized file under the tests' emulated nvtriton (never TileIR)
    verdict: KernelVerdict | None = None  # the one verdict (report.verdict): every line that states one reads it
    hint_unreached: list[str] = field(default_factory=list)  # launch hints a wrapper dropped (report.hint_reach)


@dataclass
class Coverage:
    """Whether validation launched a kernel that `apply` rewrote (itself or its twin)."""

    kernel: str
    validated: bool
    records: int  # optimized-file records whose launches include it
    finding: str


@dataclass
class Report:
    artifacts: str
    environment: dict[str, Any]
    run: RunResult | None
    kernels: list[KernelReport]
    problems: dict[str, str]
    capture: list[str] = field(default_factory=list)  # what a capture run saw and what was replayed
    cut: str = ""  # the captured command did not finish: the report's first line says so
    notes: list[str] = field(default_factory=list)  # record notes shared by several sections: said once, at the top
    library: LibrarySummary | None = None  # a library run: its kernels by verdict, class and file
    schema_version: int = SCHEMA_VERSION
