"""run: the five phases end to end on the CPU (Triton's interpreter), then the report.

`run` over all the examples is slow under the interpreter (one to two minutes): it runs once per
session (module fixture) and the tests read its artifacts.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.check.machine import Machine
from tileiropt.cli import app
from tileiropt.errors import ExitCode
from tileiropt.schema import BF16_WRONG

from shared import EXAMPLES, TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "bench"
SEED_HEADINGS = ("### Classification", "### Compatibility Check (ENABLE_TILE=0)", "### Transformations Applied",
                 "### TileIR Validation (ENABLE_TILE=1)", "### Benchmark Comparison", "### Output")
RECORDS = ("check.json", "classify.json", "apply.json", "validate.json", "bench.json", "run.json", "report.md")
EXAMPLE_KERNELS = ("vector_add", "swiglu", "softmax", "layer_norm", "rms_norm", "row_sum", "matmul", "attention")

pytestmark = pytest.mark.skipif(Machine.probe().has_gpu, reason="these tests describe a machine without a GPU")


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("run") / "examples"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".tileiropt", "*_tileir.py", "__pycache__"))
    started = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(folder)])
    return {"folder": folder, "result": result, "seconds": time.monotonic() - started,
            "report": (folder / ".tileiropt" / "report.md").read_text() if (folder / ".tileiropt" / "report.md")
            .is_file() else ""}


def kernel_section(report: str, kernel: str) -> str:
    start = report.index(f"## TileIR Optimization: {kernel}\n")
    end = report.find("\n## TileIR Optimization:", start + 1)
    return report[start:] if end < 0 else report[start:end]


def test_run_examples_passes_and_writes_every_artifact(examples_run: dict) -> None:
    result, folder = examples_run["result"], examples_run["folder"]
    assert result.exit_code == ExitCode.OK, result.output
    for name in RECORDS:
        assert (folder / ".tileiropt" / name).is_file(), name
    for kernel in ("vector_add", "swiglu", "softmax", "layer_norm", "rms_norm", "row_sum", "matmul", "attention"):
        assert (folder / f"{kernel}_tileir.py").is_file()
    run = json.loads((folder / ".tileiropt" / "run.json").read_text())
    assert [p["phase"] for p in run["phases"]] == ["check", "compatibility", "classify", "apply", "validate",
                                                   "bench", "report"]
    status = {p["phase"]: p["status"] for p in run["phases"]}
    assert status["bench"] == "not-run" and status["compatibility"] == status["validate"] == "pass"
    assert run["exit_code"] == 0 and run["stopped"] == {}


def test_report_has_every_seed_section_with_numbers(examples_run: dict) -> None:
    report = examples_run["report"]
    for kernel in EXAMPLE_KERNELS:
        text = kernel_section(report, kernel)
        positions = [text.index(heading) for heading in SEED_HEADINGS]
        assert positions == sorted(positions), kernel
        compatibility = text.split("### Compatibility Check (ENABLE_TILE=0)\n")[1]
        assert compatibility.startswith("PASSED — Max difference: "), kernel
        assert "backend: Triton interpreter (TRITON_INTERPRET=1, CPU tensors); compiled by: interpreter" in \
            compatibility
        tileir = text.split("### TileIR Validation (ENABLE_TILE=1)\n")[1].split("###")[0]
        assert tileir.startswith("The TileIR backend did not run here (the reason is given once, at the top"), kernel
        assert "TileIR code forced on by tileiropt's harness, not the TileIR backend: PASSED" in tileir
        bench = text.split("### Benchmark Comparison\n")[1].split("###")[0]
        assert bench.strip() == "No benchmark ran here (the reason is given once, at the top of the report)."
        # where this Triton's interpreter computes bfloat16 products wrongly (probed), a pass is agreement only
        agrees = kernel in ("swiglu", "layer_norm", "rms_norm") and BF16_WRONG in report
        said = "agrees with the original" if agrees else "proven correct"
        assert f"**Verdict: ready to try on TileIR** — TileIR code {said} with the TileIR code forced on" in text
        assert text.count("scaled for the interpreter") <= 1, kernel  # said in the compatibility section only
        assert f"File: {kernel}_tileir.py" in text
    # what did not run for any kernel is said once, at the top; no line repeats the one before it
    assert "Not run on this machine, for every kernel: the TileIR backend (nvtriton is not installed" in report \
        and "the benchmarks (no GPU)" in report
    lines = report.splitlines()
    assert sum("not run" in line for line in lines) <= 15
    assert not [a for a, b in zip(lines, lines[1:]) if a == b and a.strip()]
    assert "- Kernel type: dot-related" in kernel_section(report, "matmul")
    assert "- Kernel type: norm-like" in kernel_section(report, "layer_norm")


def test_report_rerenders_from_the_records_alone(examples_run: dict, tmp_path: Path) -> None:
    folder = examples_run["folder"]
    copied = tmp_path / "copied-records"
    shutil.copytree(folder / ".tileiropt", copied)
    moved = folder.with_name("examples-moved-away")
    folder.rename(moved)  # no kernel file, project file or optimized file to read any more
    try:
        result = CliRunner().invoke(app, ["report", str(copied), "-o", str(tmp_path / "again.md")])
    finally:
        moved.rename(folder)
    assert result.exit_code == ExitCode.OK, result.output
    again = (tmp_path / "again.md").read_text()
    original = examples_run["report"]
    assert again.replace(str(copied), "<records>") == original.replace(str(folder / ".tileiropt"), "<records>")


def write_project(folder: Path) -> Path:
    for name in ("scale.py", "wrong_scale.py"):
        shutil.copy(FIXTURES / name, folder / name)
    project = folder / "tileiropt.toml"
    project.write_text("""
[defaults]
sizes = [1024]
[[kernel]]
name = "wrong"
path = "wrong_scale.py"
entry = "scale"
reference = "x * alpha"
inputs = { x = ["N"] }
dims = { N = 1000 }
args = { alpha = 2.0 }
[[kernel]]
name = "good"
path = "scale.py"
entry = "scale"
reference = "x * alpha"
inputs = { x = ["N"] }
dims = { N = 1000 }
args = { alpha = 2.0 }
""")
    return project


def test_a_failing_original_stops_its_kernel_and_the_others_go_on(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    result = CliRunner().invoke(app, ["run", str(project), "--json"])
    assert result.exit_code == ExitCode.FAILED, result.output
    data = json.loads(result.stdout)
    assert data["stopped"]["wrong"]["phase"] == "compatibility"
    assert "the original file: fail" in data["stopped"]["wrong"]["reason"]
    assert "good" not in data["stopped"] and (tmp_path / "scale_tileir.py").is_file()
    assert not (tmp_path / "wrong_scale_tileir.py").exists()
    report = (tmp_path / ".tileiropt" / "report.md").read_text()
    wrong = kernel_section(report, "wrong")
    assert "FAILED — Max difference: 1.0e+00" in wrong
    assert wrong.count("not run: stopped at compatibility: the original file: fail") >= 3
    good = kernel_section(report, "good")
    assert "PASSED — Max difference: 0.0e+00" in good and "not run: no GPU (every row, sizes 1024)" in good


def test_a_kernel_file_with_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(FIXTURES / "scale.py", tmp_path / "scale.py")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "scale.py", "--entry", "scale", "--shapes", '{"x": [500]}',
                                      "--reference", "x * alpha", "--args", '{"alpha": 3.0}', "--size", "128"])
    assert result.exit_code == ExitCode.OK, result.output
    assert "report: " in result.stdout and (tmp_path / ".tileiropt" / "report.md").is_file()
    assert "## TileIR Optimization: scale" in (tmp_path / ".tileiropt" / "report.md").read_text()


def test_bad_input_exits_2(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(tmp_path)])
    assert result.exit_code == ExitCode.BAD_INPUT and "project file not found" in result.output
    result = runner.invoke(app, ["run", str(tmp_path / "missing.py"), "--entry", "f", "--shapes", "{}"])
    assert result.exit_code == ExitCode.BAD_INPUT and "Traceback" not in result.output
    result = runner.invoke(app, ["run", str(EXAMPLES), "--kernel", "nope"])
    assert result.exit_code == ExitCode.BAD_INPUT and "no kernel named nope" in result.output


def _statuses(value: object, where: str = "") -> list[tuple[str, object]]:
    """Every `status` value in a JSON document, with where it is."""
    found: list[tuple[str, object]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "status":
                found.append((where, item))
            found += _statuses(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _statuses(item, f"{where}[{index}]")
    return found


def test_every_record_and_json_output_speaks_one_vocabulary(examples_run: dict) -> None:
    """One schema key and one status enum across the records `run` wrote and every command's --json."""
    from tileiropt.schema import SCHEMA_VERSION, STATUSES

    folder = examples_run["folder"]
    documents = {name: json.loads((folder / ".tileiropt" / name).read_text())
                 for name in RECORDS if name.endswith(".json")}
    runner = CliRunner()
    for command in (["check", "--json"], ["classify", str(folder), "--json"],
                    ["apply", str(folder / "softmax.py"), "--dry-run", "--json"], ["report", str(folder), "--json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == ExitCode.OK, (command, result.output)
        documents[" ".join(command[:1])] = json.loads(result.stdout)
    for name, document in documents.items():
        assert document["schema_version"] == SCHEMA_VERSION, name
        statuses = _statuses(document)
        assert statuses or name in ("check.json", "check"), name
        odd = [(where, status) for where, status in statuses if status not in STATUSES]
        assert not odd, (name, odd[:5])


@pytest.mark.slow
def test_two_runs_at_once_do_not_disturb_each_other(tmp_path: Path) -> None:
    """Two `tileiropt run`s on one machine at once (a CI matrix, one per library), sharing the user's cache folder:
    each passes, and each report renders again, from its own records alone, to the same text."""
    import subprocess
    import sys

    folders = []
    for name in ("one", "two"):
        folder = tmp_path / name
        shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".tileiropt", "*_tileir.py", "__pycache__"))
        folders.append(folder)
    runs = [subprocess.Popen([sys.executable, "-m", "tileiropt", "run", str(folder), "--kernel", "vector_add",
                              "--kernel", "softmax"],
                             cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for folder in folders]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    for folder, run, output in zip(folders, runs, outputs):
        assert run.returncode == ExitCode.OK, output
        report = folder / ".tileiropt" / "report.md"
        again = CliRunner().invoke(app, ["report", str(report.parent), "-o", str(folder / "again.md")])
        assert again.exit_code == ExitCode.OK, again.output
        assert (folder / "again.md").read_text() == report.read_text()


def test_a_verdict_that_needs_attention_is_said_on_the_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """The report's "needs attention" makes the run's answer no (exit 1): the terminal says which kernel and why,
    not only the report."""
    from tileiropt.records.run import RunResult
    from tileiropt.run.command import print_outcome

    reason = "the TileIR compiler would reject it: TIR004 at `loss_kernel` L9: libdevice fast_logf"
    print_outcome(RunResult(phases=[], kernels=[], stopped={}, artifacts=".tileiropt", exit_code=1, verdicts={
        "loss_kernel": {"bucket": "attention", "text": reason},
        "other_kernel": {"bucket": "proven", "text": "ready to try on TileIR"}}))
    err = capsys.readouterr().err
    assert f"needs attention loss_kernel: {reason}" in " ".join(err.split())
    assert "other_kernel" not in err
