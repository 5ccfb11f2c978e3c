"""The run's decisions over its records, as pure functions: which optimized files are set aside, and whether a
file is proven not slower on PTX (what `--in-place` needs). `run.settle` applies them; their decision tables are in
`tests/decisions/test_run_decisions.py`."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from tileiropt.bench.records import ORIGINAL, SLOWER, BenchRow, group_key, slower_cause
from tileiropt.harness.backends import BACKENDS
from tileiropt.harness.gate import TWIN_SUFFIX
from tileiropt.project.spec import KernelSpec
from tileiropt.schema import ERROR, FAIL, Cause
from tileiropt.validate.records import ValidationRecord


def refuses_own_code(record: ValidationRecord, spec: KernelSpec, twins: Collection[tuple[str, str]]) -> bool:
    """Whether `record` is the TileIR compiler refusing a kernel body as its owner wrote it (no twin of it in the
    optimized file: none launched, and none apply wrote, `twins` being apply's (optimized file, kernel) pairs,
    `ApplyRecord.twins`): the original fails there the same way, so the optimized file is no worse and is kept;
    the kernel itself is stopped, and its lint finding names the fix."""
    backend = BACKENDS.get(record.backend)
    on_tileir = backend is not None and (backend.expected_backend == "tileir" or backend.emulated)
    if record.cause != Cause.COMPILER or not on_tileir:
        return False
    kernel = ((spec.launch.kernel if spec.launch else None) or spec.entry or "").rsplit(".", 1)[-1]
    launched = any(name.endswith(TWIN_SUFFIX) for name in record.provenance.kernels)
    return not launched and (str(spec.optimized_path.resolve()), kernel) not in twins


def rejections(specs: Iterable[KernelSpec], records: Iterable[ValidationRecord], rows: list[BenchRow],
               twins: Collection[tuple[str, str]] = ()) -> dict[Path, str]:
    """Optimized file -> why it must not be the result: a failed or errored record of it (validation; not the TileIR
    compiler refusing the owner's own body, nor the tool's own replay failing), or a paired PTX timing whose whole
    95% interval lies above 1 + the threshold (bench; not where the same code at the same config was slower: the
    machine)."""
    by_kernel = {s.name: s for s in specs}
    reasons: dict[Path, str] = {}
    for record in records:
        spec = by_kernel.get(record.kernel)
        if spec is not None and record.variant == "optimized" and record.status in (FAIL, ERROR) and \
                not refuses_own_code(record, spec, twins) and record.cause != Cause.TOOL:  # the tool's own
            reasons.setdefault(spec.optimized_path, f"{record.kernel}: validation {record.status} on "
                                                    f"{record.backend} ({record.config}): {record.reason}")
    for row in rows:
        spec = by_kernel.get(row.kernel)
        paired = row.paired
        if spec is not None and paired is not None and paired.verdict == SLOWER:
            original = next((r for r in rows if r.variant == ORIGINAL and r.backend == row.backend
                             and group_key(r) == group_key(row)), None)
            kind, cause = slower_cause(original, row, captured=bool(spec.launch))
            if not kind.evidence_against_the_file:
                continue  # the same code at the same config (the machine), or no evidence either way: never a guess
            reasons.setdefault(spec.optimized_path, f"{row.kernel}: {paired.ratio:.3f}x the original's time on "
                                                    f"PTX at size {row.size} (95% interval {paired.ci_low:.3f}-"
                                                    f"{paired.ci_high:.3f}, above 1+{paired.threshold:g}); "
                                                    f"{cause}")
    return reasons


def not_proven_not_slower(rows: Iterable[BenchRow], kernel: str) -> str:
    """'' when every paired PTX timing of `kernel` has its whole 95% interval below 1 + threshold (measured: not
    slower); else why that is not proven."""
    mine = [r for r in rows if r.kernel == kernel]
    paired = [r.paired for r in mine if r.paired is not None]
    if not paired:
        reasons = "; ".join(dict.fromkeys(r.reason for r in mine if r.reason)) or "bench did not run"
        return f"no paired timing: {reasons}"
    unclear = [p for p in paired if p.ci_high > 1 + p.threshold]
    if unclear:
        return (f"{len(unclear)} of {len(paired)} paired timing(s) reach above 1+{unclear[0].threshold:g} "
                f"(95% interval {unclear[0].ci_low:.3f}-{unclear[0].ci_high:.3f})")
    return ""
