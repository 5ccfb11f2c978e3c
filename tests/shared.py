"""What several test modules share, imported where it is used (`from shared import EXAMPLES`): the repository's
folders and the fake machines tests describe (a CPU, a Hopper GPU) without probing this one."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tileiropt.check.device import Device
from tileiropt.check.machine import Machine

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TEST_FIXTURES = ROOT / "tests" / "fixtures"


def cpu_machine(blockers: list[str] | None = None) -> Machine:
    """A machine without a GPU: TileIR cannot run, the interpreter validates."""
    return Machine(device=Device(), tileir_blockers=list(blockers or ["no GPU"]))


def gpu_machine(name: str = "FAKE H100 (test)", capability: str = "9.0", sm_count: int = 132,
                blockers: list[str] | None = None) -> Machine:
    """A GPU that is not this machine's (by default a Hopper one, where TileIR cannot run)."""
    return Machine(device=Device(name, capability, sm_count),
                   tileir_blockers=list(blockers or [f"{name} is sm_{capability.replace('.', '')}; TileIR needs "
                                                      "Blackwell (sm_100+)"]))


def whole_report(report: Path | str) -> str:
    """A report's text with, for a library run, its second file (each captured launch's sections) after it."""
    from tileiropt.report.markdown import kernels_path

    path = Path(report)
    companion = kernels_path(path)
    return path.read_text() + (companion.read_text() if companion.is_file() else "")


class Settling:
    """The run's last step alone (`run.settle.settle`) over the records a test gives it: the validation run, the
    bench run, the kernels, whether --in-place was asked."""

    def __init__(self, specs: list, in_place: bool = False):
        from tileiropt.records.run import RunResult

        self.specs, self.in_place = specs, in_place
        self.validation: object = None
        self.bench_run: object = None
        self.result = RunResult(phases=[], kernels=[], stopped={}, artifacts="")

    def settle(self):
        """The settle step's outcome (`not_run_here`, `fails_run`); what it did is in `result`."""
        from types import SimpleNamespace

        from tileiropt.contract.outcome import Outcome
        from tileiropt.run.settle import settle

        context = SimpleNamespace(specs=self.specs, on_event=lambda *a: None,
                                  request=SimpleNamespace(in_place=self.in_place))
        outcomes = [Outcome.of("validate", "pass", record=self.validation),
                    Outcome.of("bench", "pass", record=self.bench_run)]
        return settle(context, outcomes, self.result)  # type: ignore[arg-type]


def write_rewrite(path: Path, new_source: str, encoding: str = "utf-8") -> Path:
    """Write an optimized file as apply writes it: the file and, where it runs one (a single file's TMA dispatch,
    `runpy.run_path(... "_tileir.py")` under the gate), the helper module beside it."""
    from tileiropt.apply.apply import helper_source
    from tileiropt.harness.gate import HELPER_MODULE, helper_import_level

    path.write_text(new_source, encoding=encoding)
    if helper_import_level(new_source) == 0:
        (path.parent / f"{HELPER_MODULE}.py").write_text(helper_source(), encoding="utf-8")
    return path


def with_sigint(command: list[str], ignored: bool = False) -> list[str]:
    """`command` (a Python one: `[python, ...]`) started with SIGINT at its default disposition (or ignored): a test
    that sends SIGINT must not depend on how its own runner was started (a background job's SIGINT is ignored, and
    Python then installs no KeyboardInterrupt handler). An exec keeps the disposition; no preexec_fn is needed."""
    import sys

    disposition = "SIG_IGN" if ignored else "SIG_DFL"
    return [sys.executable, "-c", f"import os, signal, sys; signal.signal(signal.SIGINT, signal.{disposition}); "
            "os.execv(sys.argv[1], sys.argv[1:])", *command]


def package(root: Path, **modules: str) -> Path:
    """A package `pkg` under `root`: an empty `__init__.py` and each module (`name=source`, dedented), its folder."""
    folder = root / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return folder
