"""run.json read back typed: every phase, job and stop checked on read; a damaged record named in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.contract.job_timing import JobTiming
from tileiropt.output import to_jsonable
from tileiropt.records.run import PhaseResult, RunResult, run_from_dict
from tileiropt.report.markdown import tool_cost_md


def _run() -> RunResult:
    job = JobTiming(phase="validate", kernel="k", backend="ptx", slot="gpu 0", seconds=1.5, worker_start_s=4.25,
                    parts={"import": 0.5, "items": 1.0})
    return RunResult(phases=[PhaseResult("check", "pass", 0.012),
                             PhaseResult("validate", "pass", 6.0, "2 pass", workers=1, worker_start_s=4.25,
                                         jobs=[job])],
                     kernels=[], stopped={"k": {"phase": "validate", "reason": "fail"}}, artifacts="/a",
                     command=["tileiropt", "run", "k.py"], exit_code=1)


def test_a_run_reads_back_as_it_was_written() -> None:
    run = _run()
    again = run_from_dict(json.loads(json.dumps(to_jsonable(run))))
    assert again == run
    assert again.phases[1].jobs[0].parts == {"import": 0.5, "items": 1.0}


@pytest.mark.parametrize(("change", "named"), [
    ({"phases": 7}, "RunResult.phases must be a list"),
    ({"phases": ["check"]}, "a phase must be an object"),
    ({"phases": [{"phase": "check", "status": "pass", "seconds": "slow"}]}, "PhaseResult.seconds"),
    ({"phases": [{"phase": "v", "status": "pass", "jobs": [{"phase": "v"}]}]}, "JobTiming"),
    ({"stopped": {"k": "validate"}}, "RunResult.stopped['k'] must be an object"),
    ({"rejected": []}, "RunResult.rejected must be an object"),
    ({"exit_code": "one"}, "RunResult.exit_code"),
])
def test_a_damaged_run_is_refused_naming_the_field(change: dict, named: str) -> None:
    with pytest.raises(TypeError, match=named.replace("[", r"\[").replace("]", r"\]")):
        run_from_dict({**json.loads(json.dumps(to_jsonable(_run()))), **change})


def test_the_report_names_a_damaged_run_json_in_one_line(tmp_path: Path) -> None:
    artifacts = tmp_path / ".tileiropt"
    artifacts.mkdir()
    (artifacts / "run.json").write_text(json.dumps({**to_jsonable(_run()), "stopped": {"k": 3}}))
    result = CliRunner().invoke(app, ["report", str(artifacts)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "run.json: unreadable record: TypeError: RunResult.stopped['k'] must be an object, got int" in result.output


def test_the_tool_cost_line_gives_each_phase_its_seconds_workers_and_jobs() -> None:
    assert tool_cost_md(_run()) == ("The tool's own time: check 0.0 s; validate 6.0 s (1 worker(s) started, 4.2 s "
                                    "start-up, 1 job(s)).")


def test_the_command_s_own_time_is_said_in_all_in_the_phases_and_before_them() -> None:
    from tileiropt.run.command import cost_line, process_seconds

    run = _run()
    assert cost_line(run) is None  # run.json, saved before the command ends, has no wall time
    run.seconds, run.wall_seconds = 1.0, 3.6
    assert cost_line(run) == ("took 3.6 s: 1.0 s from the first phase to the report (the phases above, and their "
                              "waits), 2.6 s before and after (Python, the tool's imports, reading the target, "
                              "rendering the report)")
    age = process_seconds()
    assert age is None or age > 0  # this very process has run a while: None only where /proc is not there


def test_the_wait_for_a_phase_s_background_work_joins_its_row_s_seconds(monkeypatch) -> None:
    """A library's other files, classified beside the later phases: what the run waited for them at the end is
    classify's, so the phase rows add up to the run (what ran beside the other phases is not counted twice)."""
    from types import SimpleNamespace

    from tileiropt.contract.outcome import Outcome
    from tileiropt.run import pipeline

    clock = iter([100.0, 109.3])
    monkeypatch.setattr(pipeline.time, "monotonic", lambda: next(clock))
    outcome = Outcome.of("classify", "pass", "3 kernels in 1 file")
    outcome.result.seconds = 0.1
    outcome.later = lambda: ("pass", "5 kernels in 2 files", None)
    pipeline.Pipeline.join_later(SimpleNamespace(outcomes=[outcome]))
    assert outcome.result.seconds == 9.4 and outcome.result.detail == "5 kernels in 2 files"
    assert outcome.later is None


def test_a_run_says_when_it_replaces_the_records_of_a_run_of_another_target(tmp_path: Path) -> None:
    """Two kernel files run in one folder share its `.tileiropt`: the second run says whose records it replaces."""
    import json

    from tileiropt.run.command import other_target

    artifacts = tmp_path / ".tileiropt"
    artifacts.mkdir()
    assert other_target(artifacts, "/k/02.py") is None  # no earlier run
    (artifacts / "run.json").write_text(json.dumps({"command": ["tileiropt", "run", "01.py"], "target": "/k/01.py"}))
    assert other_target(artifacts, "/k/02.py") == "tileiropt run 01.py"
    assert other_target(artifacts, "/k/01.py") is None
    (artifacts / "run.json").write_text(json.dumps({"command": ["tileiropt", "run"]}))  # written before `target`
    assert other_target(artifacts, "/k/02.py") is None


def test_a_run_s_target_is_its_project_file_library_folder_or_kernel_files(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from tileiropt.run.pipeline import run_target

    project = SimpleNamespace(file=tmp_path / "tileiropt.toml", capture=None, kernels=[])
    assert run_target(project) == str((tmp_path / "tileiropt.toml").resolve())
    library = SimpleNamespace(file=None, kernels=[], capture=SimpleNamespace(library=tmp_path / "ops",
                                                                            files=[tmp_path / "ops" / "a.py"]))
    assert run_target(library) == f"library {(tmp_path / 'ops').resolve()}"  # a file added: the same target
    captured = SimpleNamespace(file=None, kernels=[], capture=SimpleNamespace(library=None, files=[tmp_path / "k.py"]))
    flags = SimpleNamespace(file=None, capture=None, kernels=[SimpleNamespace(path=tmp_path / "k.py")])
    assert run_target(captured) == run_target(flags) == str((tmp_path / "k.py").resolve())  # `--entry` or not


def test_the_run_table_never_folds_the_report_s_path() -> None:
    """The report's path is printed whole below the table (a path folded mid-word in a narrow column cannot be
    pasted); its row says so."""
    from rich.console import Console

    from tileiropt.run.command import outcome_table

    path = "/a/rather/long/folder/of/a/project/whose/name/goes/on/.tileiropt/report.md"
    result = RunResult(phases=[PhaseResult("report", "pass", detail=path)], kernels=[], stopped={}, artifacts="",
                       report=path)
    console = Console(width=80, record=True)
    console.print(outcome_table(result))
    text = console.export_text()
    assert "written (its path below, whole)" in text and "report.md" not in text
