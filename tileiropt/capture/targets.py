"""What `validate`, `bench` and `run` share on the command line, declared once: the target (a project, or a kernel
file with the seed-style flags), the kernels chosen, the CUDA Tile IR release to judge against, whether to redo
every record, the executor and the output format. Each command adds only its own options beside it.

`TargetOptions.project()` turns them into the project; `prepared()` does, for validate and bench, what comes next
in both (probe the machine, capture first where the project asks for it, resolve the executor), and
`PreparedTarget.exit_code` says a cut capture's partial coverage is never a pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tileiropt.capture.capture import with_captured_kernels
from tileiropt.check.machine import Machine
from tileiropt.check.machine_facts import machine_facts
from tileiropt.engine.executors import Executor, resolve_executor
from tileiropt.engine.progress import Progress
from tileiropt.errors import ExitCode
from tileiropt.output import err_console, print_json
from tileiropt.project.model import Project
from tileiropt.project.spec import resolve_target
from tileiropt.releases import get_release

if TYPE_CHECKING:
    from tileiropt.bench.records import BenchRun
    from tileiropt.validate.records import ValidateRun


@dataclass(frozen=True)
class TargetOptions:
    target: Path | None = None  # a project file or folder (default: ./tileiropt.toml), or a kernel .py
    entry: str | None = None  # a kernel .py target: the wrapper to call
    shapes: str | None = None  # JSON
    dtypes: str | None = None  # JSON, a list or one name
    reference: str | None = None
    args: str | None = None  # JSON
    kernels: list[str] | None = None  # only these kernels
    tileir_version: str | None = None  # the CUDA Tile IR release to judge against, over the project's own
    fresh: bool = False  # redo every record
    executor: dict[str, Any] = field(default_factory=dict)  # the command line's executor options
    as_json: bool = False

    def project(self, **capture: object) -> Project:
        """The project the options point at; `capture`: `run`'s capture flags (`capture`, `may_capture`, ...)."""
        project = resolve_target(self.target, entry=self.entry, shapes=self.shapes, dtypes=self.dtypes,
                                 reference=self.reference, args=self.args, **capture)
        if self.tileir_version is not None:  # judged against that release, over the project's own key
            project.tileir_version = get_release(self.tileir_version).version
        return project

    def resolved_executor(self, project: Project) -> Executor:
        """The project's [executor] table with the command line's options over it."""
        return resolve_executor(project.executor, self.executor)


@dataclass
class PreparedTarget:
    """A phase command's project on this machine, its capture done, and the executor its workers run on."""

    project: Project
    machine: Machine
    executor: Executor

    def exit_code(self, code: ExitCode) -> ExitCode:
        """`code`, or FAILED where the capture was cut (its coverage is partial: never a pass), said on stderr."""
        cut = self.project.capture.cut if self.project.capture is not None else ""
        if not cut:
            return code
        err_console.print(f"cut: {cut}", markup=False, soft_wrap=True)
        return code if code == ExitCode.INTERRUPTED else max(code, ExitCode.FAILED)

    def ends_early(self, run: ValidateRun | BenchRun, code: ExitCode, *, saved: Path, progress: Progress, done: int,
                   unit: str, as_json: bool) -> ExitCode | None:
        """The exit code where a phase command ends before its tables: interrupted (what finished is saved, and
        said), or `--json` (the run printed); None: go on."""
        if run.interrupted:
            progress.say_interrupted(done, unit, saved)
            return ExitCode.INTERRUPTED
        if as_json:
            print_json(run)
            return code
        return None


def adopting_machine_facts(command: Callable[..., ExitCode]) -> Callable[..., ExitCode]:
    """A phase command (`command(options, ...)`) run with the machine's facts those `run` keeps
    (`check.machine_facts`: probed again when something they depend on changes, a day on, or with --fresh), so its
    own process neither imports torch nor asks CUDA for them, and its workers start at once."""
    @functools.wraps(command)
    def adopting(options: TargetOptions, **kwargs: Any) -> ExitCode:
        with machine_facts(options.fresh):
            return command(options, **kwargs)

    return adopting


def prepared(options: TargetOptions) -> PreparedTarget:
    """For validate and bench: the project, the machine judged for its release, the capture run first where the
    project asks for one (on this machine's GPU, or under the interpreter), the executor."""
    project = options.project()
    machine = Machine.probe(project.tileir_version)
    project = with_captured_kernels(project, machine, options.fresh)
    return PreparedTarget(project, machine, options.resolved_executor(project))
