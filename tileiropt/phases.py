"""The phases of a run, in the order `tileiropt run` takes them: the one list the pipeline, its summary, the CLI's
help and the README's table of phases read (a test holds the README to it).

`check` probes the machine; `capture` records a program's launches (only when the project asks for it);
`compatibility` validates the original file; `classify`, `apply`, `validate`, `bench` and `report` are the
commands of the same names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """One phase of a run: what it does and writes, and when it runs."""

    name: str
    does: str  # one line: what it does
    writes: str  # the records it writes in the artifacts folder
    needs_kernels: bool = True  # False: it runs even when no kernel is left (the machine, the files, the report)
    optional: bool = False  # run only when the project asks for it

    def line(self) -> str:
        return f"{self.name}: {self.does} -> {self.writes}"


PHASES: tuple[Phase, ...] = (
    Phase("check", "the machine: Triton, the GPU, the active backend, whether TileIR is ready", "check.json",
          needs_kernels=False),
    Phase("capture", "the launches a program makes of the target files' kernels (a kernel file's own run, a "
          "command, a library's tests)", "capture.json", needs_kernels=False, optional=True),
    Phase("compatibility", "the original file against its reference (PTX, or the interpreter without a GPU)",
          "validate.json"),
    Phase("classify", "each Triton kernel's class and TileIR lint", "classify.json", needs_kernels=False),
    Phase("apply", "`<stem>_tileir.py` beside each kernel file (an installed package's under the artifacts): TileIR "
                   "configs, in-place rewrites, descriptor twins behind a gate", "apply.json"),
    Phase("validate", "the optimized file on every backend this machine has", "validate.json"),
    Phase("bench", "original vs optimized on PTX, PTX vs TileIR, the torch reference", "bench.json"),
    Phase("report", "report.md, from the records alone", "run.json, report.md", needs_kernels=False),
)
NAMES: tuple[str, ...] = tuple(phase.name for phase in PHASES)
BY_NAME: dict[str, Phase] = {phase.name: phase for phase in PHASES}


def comes_after(phase: str, other: str) -> bool:
    """`phase` runs after `other`; False when either is not a phase."""
    return phase in BY_NAME and other in BY_NAME and NAMES.index(phase) > NAMES.index(other)


def phases_text() -> str:
    """The phases, one line each (the run command's help)."""
    return "\n\n".join(f"{index}. {phase.line()}" + (" (when asked)" if phase.optional else "")
                       for index, phase in enumerate(PHASES, 1))


def phases_table() -> str:
    """The phases as the README's Markdown table (a test holds the README to it)."""
    rows = [f"| {index} | `{phase.name}`{' (when asked)' if phase.optional else ''} | {phase.does} | "
            f"{', '.join(f'`{w.strip()}`' for w in phase.writes.split(','))} |"
            for index, phase in enumerate(PHASES, 1)]
    return "\n".join(["| # | phase | what it does | writes |", "|---|---|---|---|", *rows])
