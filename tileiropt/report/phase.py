"""The `report` phase of a run, its last: report.md rendered from the records the run made, as it holds them (what
it did not make is read from the folder); run.json saved once, the report's verdicts and seconds in it.
`tileiropt report` on the same records, read from the folder, renders the same text."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from tileiropt.contract.outcome import PhaseResult
from tileiropt.contract.store import Store
from tileiropt.errors import ExitCode
from tileiropt.records.run import RunResult
from tileiropt.report.artifacts import REPORT_FILE, Artifacts, load_artifacts
from tileiropt.report.build import build_report
from tileiropt.report.markdown import write_markdown
from tileiropt.report.verdict import ATTENTION
from tileiropt.schema import PASS


def report_run(result: RunResult, held: Artifacts, on_event: Callable[[str, str], None],
               decide: Callable[[list[str | None]], ExitCode]) -> None:
    """Render report.md from the records the run `held` (those it did not make are read from its folder); the run's
    exit code is `decide`d once, from the causes of the kernels whose verdict needs attention (none, where the
    report could not be built)."""
    store = Store(held.folder)
    path = store.folder / REPORT_FILE
    phase = PhaseResult("report", PASS, detail=str(path))
    result.phases.append(phase)  # run.json lists the report phase when the report is rendered
    result.report = str(path)
    on_event("report", "start")
    started = time.monotonic()
    decided = False
    try:
        held.run = copy.deepcopy(result)
        report = build_report(load_artifacts(store.folder, held), result.kernels)
        verdicts = [k.verdict for k in report.kernels if k.verdict is not None]
        result.verdicts = {k.name: {"bucket": k.verdict.bucket, "text": k.verdict.text,
                                    **({"cause": str(k.verdict.cause)} if k.verdict.cause else {}),
                                    "exit_code": int(k.verdict.exit_code)}
                           for k in report.kernels if k.verdict is not None}
        result.exit_code = int(decide([v.cause for v in verdicts if v.bucket == ATTENTION]))
        decided = True
        report.run = copy.deepcopy(result)  # the verdicts and exit code run.json keeps
        write_markdown(report, path)
    finally:  # the run's record is saved whatever the rendering did
        if not decided:
            result.exit_code = int(decide([]))
        phase.seconds = round(time.monotonic() - started, 3)  # only this is not in what the report rendered
        store.save(RunResult, result)
    on_event("report", PASS)
