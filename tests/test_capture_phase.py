"""The capture phase of a run: a run that does not capture supersedes an earlier run's capture record (its report
never opens with another run's program and launch counts), and in a pipe its progress lines count the program's
time from the program's start."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from tileiropt.capture import phase as capture_phase
from tileiropt.capture.capture import CAPTURE_FILE, CaptureResult
from tileiropt.capture.phase import CapturePhase, supersede_capture
from tileiropt.cli import app
from tileiropt.contract.store import Store
from tileiropt.errors import ExitCode

from shared import TEST_FIXTURES

OLD_COMMAND = ["python", "earlier_library_tests.py"]


def _earlier_capture(folder: Path) -> Path:
    """capture.json as an earlier library run saved it."""
    result = CaptureResult(command=OLD_COMMAND, launches=[], counts={"old_kernel@/lib/ops.py": 1234},
                           expected=["old_kernel@/lib/ops.py"], ended="the program finished", seconds=6.0,
                           library="/lib")
    return Store(folder).save(CaptureResult, result.to_json())


def _context(folder: Path, capture: object = None) -> SimpleNamespace:
    return SimpleNamespace(project=SimpleNamespace(capture=capture), store=Store(folder))


def test_a_run_without_a_capture_removes_the_earlier_capture_record(tmp_path: Path) -> None:
    saved = _earlier_capture(tmp_path)
    (tmp_path / "check.json").write_text('{"schema_version": 1}')
    assert CapturePhase().wanted(_context(tmp_path, capture=object()))  # a run that captures: it saves its own
    assert saved.is_file()
    assert not CapturePhase().wanted(_context(tmp_path))
    assert not saved.exists() and (tmp_path / "check.json").is_file()  # only the capture record goes
    supersede_capture(Store(tmp_path / "missing"))  # no folder, no record: nothing to do


def test_only_a_capture_record_the_tool_wrote_is_removed(tmp_path: Path) -> None:
    mine = tmp_path / CAPTURE_FILE
    mine.write_text("my own notes, not a record\n")
    supersede_capture(Store(tmp_path))
    assert mine.read_text() == "my own notes, not a record\n"
    mine.unlink()
    target = _earlier_capture(tmp_path / "elsewhere")
    mine.symlink_to(target)
    supersede_capture(Store(tmp_path))
    assert mine.is_symlink() and target.is_file()  # a link, and the file behind it, are never removed


def test_a_kernel_file_run_after_a_library_run_reports_only_its_own_records(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(TEST_FIXTURES / "bench" / "scale.py", tmp_path / "scale.py")
    saved = _earlier_capture(tmp_path / ".tileiropt")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "scale.py", "--entry", "scale", "--shapes", '{"x": [500]}',
                                      "--reference", "x * alpha", "--args", '{"alpha": 3.0}', "--size", "128"])
    assert result.exit_code == ExitCode.OK, result.output
    assert not saved.exists()
    report = (tmp_path / ".tileiropt" / "report.md").read_text()
    assert "earlier_library_tests.py" not in report and "old_kernel" not in report and "Capture:" not in report


class _Console:
    is_terminal = False

    def __init__(self) -> None:
        self.lines: list[str] = []

    def print(self, text: str, **_: object) -> None:
        self.lines.append(text)


def test_in_a_pipe_the_first_progress_line_comes_30_s_into_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(capture_phase.time, "monotonic", lambda: clock[0])
    console = _Console()
    events: list[tuple[str, str]] = []
    context = SimpleNamespace(request=SimpleNamespace(console=console),
                              on_event=lambda phase, text: events.append((phase, text)))
    show = capture_phase.progress_line(context)  # the phase starts: its targets' kernels are found first
    clock[0] += 45.0  # the program starts 45 s into the phase
    show("0s, 0 launches, 0/12 kernels captured")
    clock[0] += 6.0
    show("6s, 0 launches, 0/12 kernels captured")  # a program that fails 6 s in: no line says "0s"
    assert console.lines == [] and len(events) == 2  # the phase's own line (a terminal's) has every update
    clock[0] += 25.0
    show("31s, 8 launches, 2/12 kernels captured")
    assert console.lines == ["capture: 31s, 8 launches, 2/12 kernels captured"]
