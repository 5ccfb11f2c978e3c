"""The artifacts folder: the JSON record of each phase, written by the phases and read by `report`.

    check.json      `tileiropt check --json`: the environment (CheckReport)
    classify.json   `tileiropt classify --json`: every kernel's class, evidence and lint findings
    apply.json      `tileiropt apply --json`: what each rewrite changed or left alone
    validate.json   `tileiropt validate`: numerics per kernel, variant, backend and config
    bench.json      `tileiropt bench`: times per kernel, variant, backend and size
    run.json        `tileiropt run`: the phases, their outcome, the kernels, where it stopped
    report.md       the rendered report

Each file is optional: `report` says which phase did not run, and why when run.json knows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tileiropt.bench.records import BENCH_FILE, BenchRun, load_bench_run
from tileiropt.capture.capture import CAPTURE_FILE, CaptureResult
from tileiropt.check.environment import CheckReport
from tileiropt.contract.phase_records import ApplyRecord, ClassifyRecord, apply_from_dict, classify_from_dict
from tileiropt.errors import UserError
from tileiropt.output import dataclass_from_dict
from tileiropt.records.run import RunResult, run_from_dict
from tileiropt.validate.records import VALIDATE_FILE, ValidateRun, load_validate_run

T = TypeVar("T")
CHECK_FILE = CheckReport.FILE  # each record type names its file (`contract.store`)
CLASSIFY_FILE = ClassifyRecord.FILE
APPLY_FILE = ApplyRecord.FILE
RUN_FILE = RunResult.FILE
REPORT_FILE = "report.md"
RECORD_FILES = (CHECK_FILE, CLASSIFY_FILE, APPLY_FILE, VALIDATE_FILE, BENCH_FILE, RUN_FILE, CAPTURE_FILE)


@dataclass
class Artifacts:
    folder: Path
    check: CheckReport | None = None
    classify: ClassifyRecord | None = None
    apply: ApplyRecord | None = None
    validate: ValidateRun | None = None
    bench: BenchRun | None = None
    run: RunResult | None = None
    capture: CaptureResult | None = None
    problems: dict[str, str] = field(default_factory=dict)  # record file -> why it could not be read

    @property
    def empty(self) -> bool:
        return not any((self.check, self.classify, self.apply, self.validate, self.bench, self.run))


def _read_json(path: Path, problems: dict[str, str]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        problems[path.name] = f"unreadable: {exc}"
        return None
    if not isinstance(data, dict):
        problems[path.name] = "not a JSON object"
        return None
    return data


def _typed(path: Path, read: Callable[[Any], T], problems: dict[str, str]) -> T | None:
    """A typed record from its JSON file; a record of the wrong shape is a problem, as an unreadable one."""
    data = _read_json(path, problems)
    if data is None:
        return None
    try:
        return read(data)
    except (TypeError, ValueError, KeyError, RecursionError) as exc:
        problems[path.name] = f"unreadable record: {type(exc).__name__}: {exc}"
        return None


def projects_of(artifacts: Artifacts) -> dict[str, str]:
    """Record file -> the project file it was made for (validate.json, bench.json and run.json name it)."""
    found = {}
    for record in (artifacts.validate, artifacts.bench, artifacts.run):
        if record is not None and record.project:
            found[record.FILE] = str(Path(record.project).resolve())
    return found


def is_artifacts_folder(folder: Path) -> bool:
    return folder.is_dir() and any((folder / name).is_file() for name in RECORD_FILES)


def load_artifacts(folder: Path | str, held: Artifacts | None = None) -> Artifacts:
    """Read every record present in `folder`; a missing record is simply absent. `held`: the records a run holds
    in memory (what it made and saved): only those it does not hold are read from the folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError("artifacts folder not found", file=str(folder),
                        hint="run `tileiropt run` first, or pass the folder that holds its JSON records")
    found = held or Artifacts(folder=folder)
    found.check = found.check or _typed(folder / CHECK_FILE, lambda data: dataclass_from_dict(CheckReport, data),
                                        found.problems)
    found.classify = found.classify or _typed(folder / CLASSIFY_FILE, classify_from_dict, found.problems)
    found.apply = found.apply or _typed(folder / APPLY_FILE, apply_from_dict, found.problems)
    found.run = found.run or _typed(folder / RUN_FILE, run_from_dict, found.problems)
    found.capture = found.capture or _typed(folder / CAPTURE_FILE, CaptureResult.from_json, found.problems)
    for name, loader, attribute in ((VALIDATE_FILE, load_validate_run, "validate"),
                                    (BENCH_FILE, load_bench_run, "bench")):
        if getattr(found, attribute) is None and (folder / name).is_file():
            try:
                setattr(found, attribute, loader(folder / name))
            except UserError as exc:
                found.problems[name] = exc.message
            except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:  # valid JSON, wrong shape
                found.problems[name] = f"unreadable record: {type(exc).__name__}: {exc}"
    return found
