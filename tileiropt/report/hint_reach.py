"""Whether the TileIR hint `apply` put at a kernel's launches reaches the kernel through its package's wrappers
(an entry object, a launch cache, a tuner of its own): measured, not assumed. Where the TileIR code ran, each record
keeps the launch options the kernel's JIT function received (`Provenance.options`); a hint that a wrapper dropped
is missing there, and the kernel is not tuned, said with what was measured."""

from __future__ import annotations

from dataclasses import dataclass, field

from tileiropt.bench.records import OPTIMIZED, BenchKernel
from tileiropt.harness.backends import BACKENDS
from tileiropt.report.artifacts import Artifacts
from tileiropt.report.sections import classify_records, kernels_reached, same_file
from tileiropt.schema import NOT_RUN

HINT = "occupancy"  # the hint apply passes at a launch under the gate


@dataclass
class HintReach:
    """Per kernel whose launch hints pass through wrappers: measured to reach it, or not (with the evidence)."""

    reached: list[str] = field(default_factory=list)  # lines for the report: "`k`: occupancy reaches it ..."
    unreached: list[str] = field(default_factory=list)  # why the hint took no effect, or is not known to, per kernel


def _tileir_code_on(backend: str) -> bool:
    about = BACKENDS.get(backend)
    return about is not None and (about.optimized_only or about.expected_backend == "tileir" or about.emulated)


def hint_reach(kernel: BenchKernel, artifacts: Artifacts) -> HintReach:
    """What the records measured of the hints apply passed through a wrapper, for this kernel's file."""
    found = HintReach()
    if artifacts.apply is None or artifacts.validate is None:
        return found
    record = next((f for f in artifacts.apply.files if same_file(f.file, kernel.path)), None)
    if record is None or not record.changed:
        return found
    reached = kernels_reached(classify_records(kernel, artifacts), kernel.entry)
    through = [(k.kernel, k.hint_through) for k in record.kernels
               if k.hint_through and (reached is None or k.kernel in reached)]
    records = [r for r in artifacts.validate.records if r.kernel == kernel.name and r.variant == OPTIMIZED
               and r.status != NOT_RUN and _tileir_code_on(r.backend)]
    for name, wrappers in through:
        launched = [r for r in records if name in r.provenance.kernels]
        if not launched:
            continue  # not this entry's kernel, or its TileIR code never launched it (the validation says why)
        given = [set(r.provenance.options[name]) for r in launched if name in r.provenance.options]
        by = ", ".join(wrappers)
        if not given:  # replayed below the wrapper: the replay passed the hint itself
            found.unreached.append(f"its launch's {HINT} passes through {by}, and whether it reaches `{name}` was "
                                   "not measured (no call through the wrapper ran with the TileIR code on: a replay "
                                   "launches below it); a project entry that calls the wrapper measures it")
            continue
        if any(HINT in options for options in given):
            found.reached.append(f"`{name}`: its launch's {HINT} reaches the kernel through {by} (measured: its "
                                 "JIT function received it where the TileIR code ran)")
        else:
            options = ", ".join(sorted(set().union(*given))) or "no launch option"
            found.unreached.append(f"its launch's {HINT} does not reach `{name}` through {by} (measured: where the "
                                   f"TileIR code ran, its JIT function received {options}): the hint takes no effect "
                                   "there; pass it where the wrapper launches the kernel")
    return found
