"""report: rendered from records alone. The records here are built from fixtures (bench rows with
made-up timings, hand-written validation records), so every section's wording can be checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bench import finished_rows, recorded  # the bench fixtures, shared
from typer.testing import CliRunner

from tileiropt.bench.records import BenchKernel, BenchRun, save_bench_run
from tileiropt.cli import app
from tileiropt.errors import ExitCode, UserError
from tileiropt.harness.provenance import Provenance
from tileiropt.output import save_record_file, to_jsonable
from tileiropt.records.run import run_from_dict
from tileiropt.report.artifacts import (
    APPLY_FILE,
    CHECK_FILE,
    CLASSIFY_FILE,
    RUN_FILE,
    load_artifacts,
)
from tileiropt.report.build import build_report
from tileiropt.report.command import resolve_artifacts
from tileiropt.report.markdown import render_markdown, split_template
from tileiropt.validate.records import ValidateRun, ValidationRecord, save_validate_run

from shared import EXAMPLES

SEED_HEADINGS = ("### Classification", "### Compatibility Check (ENABLE_TILE=0)", "### Transformations Applied",
                 "### TileIR Validation (ENABLE_TILE=1)", "### Benchmark Comparison", "### Output")
BROKEN_STOP = "the original file fail on ptx (-): 3 of 64 elements differ"


def save_record(folder: Path, name: str, data: object) -> Path:
    return save_record_file(data, folder, name)


def record(kernel: str, variant: str, backend: str, status: str, max_abs: float | None = None, reason: str = "",
           compiled: str | None = "cuda", config: str = "BLOCK=64") -> ValidationRecord:
    return ValidationRecord(kernel=kernel, variant=variant, backend=backend, config=config, status=status,
                            reason=reason, path=f"/fixture/{kernel}.py", dtypes={"x": "float16"}, max_abs=max_abs,
                            provenance=Provenance(compiled_backend=compiled if status != "not-run" else None,
                                                  fallback=backend == "tileir" and compiled not in (None, "tileir")))


def classified(kernel: str, cls: str, findings: list | None = None) -> dict:
    return {"file": f"/fixture/{kernel}.py", "kernel": f"{kernel}_kernel", "line": 12, "class": cls,
            "confidence": 0.9, "strategy": "s", "is_entry": True, "findings": findings or []}


def applied(kernel: str, changes: int) -> dict:
    return {"file": f"/fixture/{kernel}.py", "status": "pass", "output": f"/fixture/{kernel}_tileir.py",
            "changed": changes > 0, "already_prepared": False, "written": [f"/fixture/{kernel}_tileir.py"],
            "kernels": [{"kernel": f"{kernel}_kernel", "line": 12, "class": "dot", "twin": None, "configs_added": 8,
                         "changes": [{"line": 20 + i, "what": f"change {i}", "why": "because"}
                                     for i in range(changes)],
                         "skipped": ["TMA left alone: the loads are masked"]}]}


@pytest.fixture()
def artifacts(tmp_path: Path) -> Path:
    folder = tmp_path / "records"
    rows, notes = finished_rows()
    kernels = [BenchKernel(**k) for k in recorded()["kernels"]]
    kernels.append(BenchKernel("broken", "/fixture/broken.py", "/fixture/broken_tileir.py", "broken"))
    save_bench_run(BenchRun(rows=rows, kernels=kernels[:2], peaks=recorded()["peaks"], notes=notes,
                            peaks_note="cached in /fixture/peaks.json"), folder)
    save_validate_run(ValidateRun(records=[
        record("matmul", "original", "ptx", "pass", 1e-3),
        record("matmul", "original", "ptx", "pass", 2e-3, config="BLOCK=128"),
        record("matmul", "optimized", "ptx", "pass", 2e-3),
        record("matmul", "optimized", "tileir", "pass", 3e-3, compiled="tileir"),
        record("softmax", "original", "ptx", "pass", 1e-4),
        record("softmax", "optimized", "tileir", "not-run",
               reason="not run: nvtriton is not installed (triton.backends.tileir not found)"),
        record("softmax", "optimized", "tileir-code-on-ptx", "pass", 5e-4),
        record("broken", "original", "ptx", "fail", 1.0, reason="3 of 64 elements differ"),
    ], backends=["ptx", "tileir"]), folder)
    save_record(folder, CLASSIFY_FILE, {"schema_version": 1, "release": None, "files": [], "summary": {}, "kernels": [
        classified("matmul", "dot"),
        classified("softmax", "norm", [{"code": "TIR202", "severity": "perf", "line": 44, "message": "wide rows",
                                        "hint": "cap it"}]),
        classified("broken", "elementwise")]})
    save_record(folder, APPLY_FILE, {"schema_version": 1, "dry_run": False, "release": None,
                                     "files": [applied("matmul", 3), applied("softmax", 1)], "errors": []})
    save_record(folder, CHECK_FILE, {"python": "3.12", "triton": {"name": "nvtriton", "version": "3.6.0",
                                                                  "tileir_backend": True},
                                     "torch": {"version": "2.11.0", "cuda": "13.0"},
                                     "gpu": {"name": "FAKE GPU (test fixture)", "capability": "10.0",
                                             "sm_count": 148},
                                     "blackwell": True, "env": {"ENABLE_TILE": "1"}, "active_backend": "tileir",
                                     "active_backend_error": None, "tileiras": {"path": None},
                                     "tileir_ready": True, "reasons": [], "recommendation": "TileIR ready"})
    save_record(folder, RUN_FILE, {"kernels": [to_jsonable(k) for k in kernels], "command": ["tileiropt", "run"],
                                   "phases": [{"phase": "check", "status": "ok"}], "exit_code": 1,
                                   "seconds": 12.0, "started": "2026-01-01T00:00:00+00:00",
                                   "stopped": {"broken": {"phase": "compatibility", "reason": BROKEN_STOP}}})
    return folder


def sections(markdown: str, kernel: str) -> str:
    start = markdown.index(f"## TileIR Optimization: {kernel}\n")
    end = markdown.find("\n## TileIR Optimization:", start + 1)
    return markdown[start:] if end < 0 else markdown[start:end]


def test_every_seed_section_per_kernel(artifacts: Path) -> None:
    markdown = render_markdown(build_report(load_artifacts(artifacts)))
    for kernel in ("matmul", "softmax", "broken"):
        text = sections(markdown, kernel)
        positions = [text.index(heading) for heading in SEED_HEADINGS]
        assert positions == sorted(positions), kernel
    assert markdown.index("## Summary") < markdown.index("## Environment") < markdown.index("## TileIR Optimization")


def test_classification_compatibility_and_transformations(artifacts: Path) -> None:
    text = sections(render_markdown(build_report(load_artifacts(artifacts))), "matmul")
    assert "- Kernel type: dot-related\n- Strategy for its class: TMA + 2CTA" in text
    assert "PASSED — Max difference: 2.0e-03" in text
    assert "compiled by: cuda; 2 records" in text
    assert "`matmul_kernel` L20: change 0 (because)" in text and "left alone: TMA left alone" in text
    assert "File: matmul_tileir.py" in text
    softmax = sections(render_markdown(build_report(load_artifacts(artifacts))), "softmax")
    assert "- Kernel type: norm-like\n- Strategy for its class: High occupancy" in softmax
    assert "TIR202 perf at `softmax_kernel` L44: wide rows" in softmax


def test_tileir_validation_not_run_with_the_forced_code_line(artifacts: Path) -> None:
    markdown = render_markdown(build_report(load_artifacts(artifacts)))
    softmax = sections(markdown, "softmax")
    block = softmax.split("### TileIR Validation (ENABLE_TILE=1)\n")[1].split("###")[0]
    assert block.startswith("not run: nvtriton is not installed")
    assert "TileIR code forced on by tileiropt's harness, not the TileIR backend: PASSED — " \
           "Max difference: 5.0e-04" in block
    matmul = sections(markdown, "matmul").split("### TileIR Validation (ENABLE_TILE=1)\n")[1]
    assert matmul.startswith("PASSED — Max difference: 3.0e-03") and "compiled by: tileir" in matmul
    assert "Optimized file with its gate off (the PTX path): PASSED" in matmul


def test_benchmark_tables_speedups_peaks_and_fallback(artifacts: Path) -> None:
    text = sections(render_markdown(build_report(load_artifacts(artifacts))), "matmul")
    bench = text.split("### Benchmark Comparison\n")[1].split("### Output")[0]
    # a sweep: one table per dtype set, a column per size (time, speedup)
    assert "**float16** (time in ms, speedup against the original PTX; sizes 1024: M=1024, N=1024, K=1024; 4096:" \
        in bench
    assert "| Backend | 1024 | 4096 |" in bench
    assert "| PTX (ENABLE_TILE=0) | 0.0100, 1.00x | 0.2500, 1.00x |" in bench
    assert "| TileIR (ENABLE_TILE=1) | 0.0080, 1.25x | 0.2400, 1.04x (fallback: not TileIR) |" in bench
    assert "| TileIR (ENABLE_TILE=1), original file | 0.0090, 1.11x | error: timeout after 300s" in bench
    assert "<details><summary>Details: " in bench and bench.rstrip().endswith("</details>")  # folded
    assert "214.7 TFLOP/s" in bench and "36% of float16 matmul peak" in bench
    assert "autotune 1900 ms -> BLOCK_SIZE_K=64" in bench
    assert "cuda (FALLBACK)" in bench
    assert "1.010 (1024, float16), 1.200 (4096, float16) -- 1 outside the noise" in bench
    assert "Peaks: cached in /fixture/peaks.json" in bench


def test_stopped_kernel_says_why_later_phases_did_not_run(artifacts: Path) -> None:
    text = sections(render_markdown(build_report(load_artifacts(artifacts))), "broken")
    assert "FAILED — Max difference: 1.0e+00" in text
    assert "failure: BLOCK=64 [float16]: fail: 3 of 64 elements differ" in text
    stop = f"not run: stopped at compatibility: {BROKEN_STOP}"
    assert text.count(stop) >= 3  # transformations, TileIR validation, benchmark (and output)
    assert "- **broken**: stopped at compatibility" in render_markdown(build_report(load_artifacts(artifacts)))


def test_summary_and_environment(artifacts: Path) -> None:
    markdown = render_markdown(build_report(load_artifacts(artifacts)))
    summary = markdown.split("## Summary")[1].split("## Environment")[0]
    assert "| matmul | validated on TileIR | dot-related | PASSED (2.0e-03) | 3 changes | PASSED (3.0e-03) " \
           "| 1.01-1.20 | 1.04x-1.25x | matmul_tileir.py |" in summary
    assert "| broken | needs attention (exit 1) | element-wise | FAILED (1.0e+00) |" in summary
    environment = markdown.split("## Environment")[1]
    assert "3.6.0 (nvtriton), TileIR backend present" in environment
    assert "FAKE GPU (test fixture) (sm_100, 148 SMs)" in environment and "| TileIR ready | yes |" in environment


def test_missing_records_say_which_phase_to_run(tmp_path: Path) -> None:
    rows, _ = finished_rows()
    save_bench_run(BenchRun(rows=rows, kernels=[BenchKernel(**recorded()["kernels"][0])]), tmp_path)
    text = render_markdown(build_report(load_artifacts(tmp_path)))
    assert f"not run: no validate.json in {tmp_path} (run `tileiropt validate` or `tileiropt run`)" in text
    assert "not run: no classify.json" in text and "not run: no apply.json" in text
    assert "not run: no check record" in text


def test_json_format_and_template_contract(artifacts: Path) -> None:
    report = build_report(load_artifacts(artifacts))
    data = json.loads(json.dumps(to_jsonable(report)))
    assert [k["name"] for k in data["kernels"]] == ["matmul", "softmax", "broken"]
    assert data["kernels"][0]["compatibility"]["max_difference"] == 2e-3
    custom = "# {intro}\n{summary}\n{environment}\n{kernels}\n<!-- tileiropt:kernel-section -->\n= {name}: " \
             "{classification}|{compatibility}|{transformations}|{tileir_validation}|{benchmark}|{output}\n"
    assert "= softmax: - Kernel type: norm-like" in render_markdown(report, custom)
    with pytest.raises(ValueError):
        split_template("# no marker here")


def test_cli_renders_from_an_artifacts_folder(artifacts: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", str(artifacts)])
    assert result.exit_code == ExitCode.OK and "## TileIR Optimization: matmul" in result.stdout
    out = tmp_path / "out" / "report.md"
    result = runner.invoke(app, ["report", str(artifacts), "-o", str(out)])
    assert result.exit_code == ExitCode.OK and out.read_text().startswith("# TileIR optimization report")
    again = runner.invoke(app, ["report", str(artifacts), "-o", str(out)])  # its own report: replaced
    assert again.exit_code == ExitCode.OK
    records = next(p for p in artifacts.iterdir() if p.name == "validate.json")
    before = records.read_text()
    refused = runner.invoke(app, ["report", str(artifacts), "-o", str(records)])
    assert refused.exit_code == 2 and "not a report tileiropt wrote" in refused.output
    assert records.read_text() == before  # the records survive
    result = runner.invoke(app, ["report", str(artifacts), "--format", "json"])
    assert json.loads(result.stdout)["kernels"][1]["name"] == "softmax"
    assert json.loads(runner.invoke(app, ["report", str(artifacts), "--json"]).stdout)["artifacts"] == str(artifacts)


def test_cli_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == ExitCode.BAD_INPUT and "no records to report" in result.output
    assert "Traceback" not in result.output
    (tmp_path / "bench.json").write_text("{not json")
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == ExitCode.BAD_INPUT and "no readable record" in result.output
    result = runner.invoke(app, ["report", str(tmp_path), "--format", "html"])
    assert result.exit_code == ExitCode.BAD_INPUT


def test_a_project_file_points_at_its_artifacts(tmp_path: Path) -> None:
    examples = EXAMPLES
    folder, kernels, project_file = resolve_artifacts(examples / "tileiropt.toml")
    assert folder == examples / ".tileiropt" and kernels and kernels[0].name == "vector_add"
    assert project_file == (examples / "tileiropt.toml").resolve()
    with pytest.raises(UserError):
        resolve_artifacts(tmp_path)


def test_a_copied_project_folder_s_records_are_refused_for_this_project_and_read_as_a_folder(tmp_path: Path) -> None:
    made = tmp_path / "made" / "tileiropt.toml"
    copy = tmp_path / "copy"
    (copy / ".tileiropt").mkdir(parents=True)
    (copy / "k.py").write_text("def k(x):\n    return x\n")
    (copy / "tileiropt.toml").write_text("[[kernel]]\nname = 'k'\npath = 'k.py'\nentry = 'k'\n"
                                         "inputs = { x = [8] }\nreference = 'x'\n")
    save_validate_run(ValidateRun(records=[record("k", "original", "ptx", "pass", 0.0)], backends=["ptx"],
                                  project=str(made)), copy / ".tileiropt")
    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == ExitCode.BAD_INPUT
    said = result.output.replace("\n", "")
    assert f"every record here was made for another project (validate.json: {made})" in said
    assert f"`tileiropt report {copy / '.tileiropt'}` to render those records as they are" in said
    assert CliRunner().invoke(app, ["report", str(copy / ".tileiropt")]).exit_code == ExitCode.OK  # the records alone
    save_record(copy / ".tileiropt", RUN_FILE, {"kernels": [], "command": ["tileiropt", "run"], "phases": [],
                                                "exit_code": 0, "seconds": 1.0, "project": str(copy / "tileiropt.toml"),
                                                "started": "2026-01-01T00:00:00+00:00"})
    result = CliRunner().invoke(app, ["report", str(copy)])  # run again here, in part: the other's records flagged
    assert result.exit_code == ExitCode.OK
    assert f"made for another project ({made.resolve()}) than run.json" in result.stdout.replace("\n", " ")


def test_a_moved_folder_s_next_step_starts_in_the_folder_its_records_are_now(tmp_path: Path) -> None:
    """A run's folder copied with its records: the next step's `cd` goes to the copy (the same place in it), not
    to the folder the run was made in; where the copy lacks that folder or what the command names from it (the
    records copied alone), or the run started outside its project's folder, the run's own `cd` stays."""
    from tileiropt.report.markdown import moved_cwd

    made, copy, share = tmp_path / "made", tmp_path / "copy", tmp_path / "share"
    for root in (made, copy):
        (root / "sub").mkdir(parents=True)
        (root / "sub" / "k.py").write_text("")
        (root / "out" / "runs").mkdir(parents=True)
    share.mkdir()
    command = ["tileiropt", "run", "k.py", "--json"]
    assert moved_cwd(str(made), str(made / ".tileiropt"), str(copy / ".tileiropt")) == str(copy.resolve())
    assert moved_cwd(str(made / "sub"), str(made / ".tileiropt"), str(copy / ".tileiropt"), command) == \
        str(copy.resolve() / "sub")
    assert moved_cwd(str(made / "sub"), str(made / "out" / "runs"), str(copy / "out" / "runs"), command) == \
        str(copy.resolve() / "sub")  # a project's own artifacts path: its common trailing parts left off
    assert moved_cwd(str(made / "sub"), str(made / ".tileiropt"), str(share / ".tileiropt"), command) == \
        str(made / "sub")  # the records alone: the copy holds neither the folder nor k.py
    assert moved_cwd(str(tmp_path), str(made / ".tileiropt"), str(copy / ".tileiropt")) == str(tmp_path)
    assert moved_cwd(str(made), str(made / ".tileiropt"), str(made / ".tileiropt")) == str(made)
    assert moved_cwd(str(made), None, str(copy / ".tileiropt")) == str(made)


def test_malformed_records_are_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tileiropt.cli import app

    (tmp_path / "validate.json").write_text('{"records": [{"kernel": "k"}]}')
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "unexpected layout" in result.output


# ----------------------------------------------------------------------------- robust to its inputs


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON value."""
    yield prefix, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            yield from _paths(item, (*prefix, index))


def _replace(value, path, new):
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def test_malformed_records_never_crash_the_report(artifacts: Path) -> None:
    """Valid JSON of the wrong shape, field by field: the report renders (a line says which record is
    unreadable) or refuses in one line; never a traceback."""
    runner = CliRunner()
    originals = {p.name: p.read_text() for p in artifacts.iterdir() if p.suffix == ".json"}
    deep: object = 1
    for _ in range(200):
        deep = [deep]
    tried = tracebacks = 0
    for name, text in originals.items():
        data = json.loads(text)
        paths = [p for p, _ in _paths(data) if p][:40]
        for path in paths:
            for wrong in ("x", 7, None, [], {}, deep):
                (artifacts / name).write_text(json.dumps(_replace(data, path, wrong)))
                result = runner.invoke(app, ["report", str(artifacts)])
                tried += 1
                if result.exception is not None and not isinstance(result.exception, SystemExit):
                    tracebacks += 1
                assert result.exit_code in (0, 2), (name, path, wrong, result.output[-500:])
        (artifacts / name).write_text(text)
    assert tried > 300 and tracebacks == 0


def test_kernel_names_cannot_inject_markdown(artifacts: Path) -> None:
    bench = json.loads((artifacts / "bench.json").read_text())
    evil = "matmul\n\n# Injected heading | x"
    for row in bench["rows"]:
        if row["kernel"] == "matmul":
            row["kernel"] = evil
    for kernel in bench["kernels"]:
        if kernel["name"] == "matmul":
            kernel["name"] = evil
    (artifacts / "bench.json").write_text(json.dumps(bench))
    run = artifacts / "run.json"
    if run.exists():
        run.unlink()
    text = CliRunner().invoke(app, ["report", str(artifacts)]).stdout
    assert "\n# Injected heading" not in text


def test_records_of_a_changed_file_and_of_another_run_are_marked(tmp_path: Path) -> None:
    from tileiropt.harness.provenance import file_digest
    from tileiropt.report.artifacts import Artifacts
    from tileiropt.report.build import provenance_problems
    from tileiropt.validate.records import ValidateRun, ValidationRecord

    kernel = tmp_path / "k_tileir.py"
    kernel.write_text("a = 1\n")
    record = ValidationRecord(kernel="k", variant="optimized", backend="interpret", config="LAUNCH", status="pass",
                              path=str(kernel), source_sha256=file_digest(kernel))
    found = Artifacts(folder=tmp_path, validate=ValidateRun(records=[record], backends=["interpret"],
                                                           started="2026-11-22T10:00:00+00:00"),
                      run=run_from_dict({"started": "2026-11-22T10:00:00+00:00"}))
    assert provenance_problems(found) == {}
    kernel.write_text("a = 2\n")
    found.run = run_from_dict({"started": "2026-11-22T11:00:00+00:00"})
    problems = provenance_problems(found)
    assert "changed since its records were made" in problems["k_tileir.py"]
    assert "from an earlier run" in problems["validate.json"]


def test_records_of_the_earlier_schema_still_read_and_unknown_statuses_do_not(artifacts: Path) -> None:
    """Schema 1 said "ok" for a measured row; it reads as "pass". A status outside the vocabulary makes the
    record file unusable, said in one line, never a wrong verdict."""
    from tileiropt.bench.records import load_bench_run
    from tileiropt.validate.records import load_validate_run

    bench = json.loads((artifacts / "bench.json").read_text())
    measured = [row for row in bench["rows"] if row["status"] == "pass"]
    assert measured
    for row in measured:
        row["status"] = "ok"
    bench["schema_version"] = 1
    (artifacts / "bench.json").write_text(json.dumps(bench))
    run = load_bench_run(artifacts)
    assert sum(r.status == "pass" for r in run.rows) == len(measured)

    validate = json.loads((artifacts / "validate.json").read_text())
    validate["records"][0]["status"] = "passed-ish"
    (artifacts / "validate.json").write_text(json.dumps(validate))
    with pytest.raises(UserError, match="unexpected layout"):
        load_validate_run(artifacts)
    result = CliRunner().invoke(app, ["report", str(artifacts)])
    assert result.exit_code == 0
    assert "Record validate.json: validation records in an unexpected layout (status 'passed-ish'" in result.stdout


def test_a_captured_kernel_is_reported_with_the_helpers_it_calls_and_nothing_else() -> None:
    from tileiropt.report.sections import kernels_reached

    records = [{"kernel": "_inner", "calls": []}, {"kernel": "_desc", "calls": []},
               {"kernel": "fwd", "calls": ["_desc", "_inner"]}, {"kernel": "bwd", "calls": ["_bwd_dq"]},
               {"kernel": "_bwd_dq", "calls": ["_inner"]}]
    assert kernels_reached(records, "fwd") == {"fwd", "_desc", "_inner"}
    assert kernels_reached(records, "bwd") == {"bwd", "_bwd_dq", "_inner"}
    assert kernels_reached(records, "layer_norm") is None  # a wrapper: the whole file counts


def test_notes_of_passing_records_are_kept_whole_and_capped() -> None:
    from tileiropt.report.sections import MAX_NOTES, verdict

    reasons = ["TileIR code not attached at import: a (why a); b (why b)"] + [
        f"differs from itself by up to {i}e-3 between runs; atol widened to {2 * i}e-3" for i in range(1, 6)]
    result = verdict([record("k", "optimized", "ptx", "pass", 1e-3, reason=r) for r in reasons])
    assert result.notes[0] == reasons[0]  # a note holding "; " is one note
    assert len(result.notes) == MAX_NOTES + 1 and result.notes[-1].startswith("and 3 more different notes")


def test_a_note_shared_by_several_sections_is_said_once_at_the_top() -> None:
    from types import SimpleNamespace

    from tileiropt.report.build import lift_shared_notes

    def verdict(*notes: str) -> SimpleNamespace:
        return SimpleNamespace(notes=list(notes))

    raised = "the module's own call at t.py:9 raised AssertionError (its definitions were used)"
    a = SimpleNamespace(name="a", compatibility=verdict(f"{raised}; interpreter stand-ins: driver"),
                        tileir_validation=verdict(), tileir_code=verdict(f"{raised}; scaled N 4096 -> 256"),
                        optimized_ptx=None, tileir_emulated=None)
    b = SimpleNamespace(name="b", compatibility=verdict(raised), tileir_validation=verdict(), tileir_code=None,
                        optimized_ptx=verdict("only here"), tileir_emulated=None)
    assert lift_shared_notes([a, b]) == [raised]
    assert a.compatibility.notes == ["interpreter stand-ins: driver"]
    assert a.tileir_code.notes == ["scaled N 4096 -> 256"]
    assert b.compatibility.notes == [] and b.optimized_ptx.notes == ["only here"]
    c = SimpleNamespace(name="c", compatibility=verdict("x; y"), tileir_validation=verdict("y"), tileir_code=None,
                        optimized_ptx=None, tileir_emulated=None)
    d = SimpleNamespace(name="d", compatibility=verdict("z"), tileir_validation=verdict(), tileir_code=None,
                        optimized_ptx=None, tileir_emulated=None)
    assert lift_shared_notes([c, d]) == ["y (c)"]
    assert c.compatibility.notes == ["x"] and c.tileir_validation.notes == []


def test_a_file_left_as_it_was_has_notes_never_changes() -> None:
    from types import SimpleNamespace

    from tileiropt.bench.records import BenchKernel
    from tileiropt.contract.phase_records import ApplyFile, ApplyKernel, ApplyRecord, Change
    from tileiropt.report.sections import transformations_for
    from tileiropt.report.verdict import not_tuned

    kernel = ApplyKernel("k", 3, "norm", changes=[Change(3, "num_warps kept", "a hint")], skipped=["wrapped by e()"])
    unchanged = ApplyFile("/x/k.py", "pass", None, False, False, [], [kernel])
    artifacts = SimpleNamespace(apply=ApplyRecord(1, False, None, [unchanged], []), classify=None)
    section = transformations_for(BenchKernel("k", "/x/k.py", "/x/k_tileir.py", "k"), artifacts, None)
    assert section.count == 0 and "`k` L3: note: num_warps kept (a hint)" in section.lines
    assert not_tuned(SimpleNamespace(transformations=section)) == "wrapped by e()"


def test_a_tolerance_names_the_dtype_it_is_for() -> None:
    from tileiropt.report.sections import verdict
    from tileiropt.validate.records import ValidationRecord

    records = [ValidationRecord("k", "optimized", "interpret", "c", "pass", atol=1e-2, rtol=1e-2,
                                dtypes={"x": "bfloat16"}, max_abs=1e-3),
               ValidationRecord("k", "optimized", "interpret", "c", "pass", atol=1e-5, rtol=1e-5,
                                dtypes={"x": "float32"}, max_abs=1e-6)]
    assert verdict(records).tolerance == "atol 0.01, rtol 0.01 for bfloat16; atol 1e-05, rtol 1e-05 for float32"


def test_a_widened_backend_test_is_listed_with_the_kernels_changes_and_counted() -> None:
    from types import SimpleNamespace

    from tileiropt.bench.records import BenchKernel
    from tileiropt.contract.phase_records import ApplyFile, ApplyKernel, ApplyRecord, Change
    from tileiropt.report.sections import transformations_for

    kernel = ApplyKernel("k", 9, "dot", changes=[Change(12, "TileIR configs added", "dot")])
    host = [Change(4, '`target.backend in ("cuda", "tileir")`', "nvtriton's backend is tileir")]
    changed = ApplyFile("/x/k.py", "pass", "/x/k_tileir.py", True, False, [], [kernel], host)
    artifacts = SimpleNamespace(apply=ApplyRecord(1, False, None, [changed], []), classify=None)
    section = transformations_for(BenchKernel("k", "/x/k.py", "/x/k_tileir.py", "k"), artifacts, None)
    assert section.count == 2
    assert section.lines[-1] == ('L4, outside the kernels: backend test widened to `target.backend in ("cuda", '
                                 '"tileir")` (nvtriton\'s backend is tileir)')


def test_each_proven_kernel_is_named_once_with_its_launches_and_largest_difference() -> None:
    """Launches of one kernel proven at different differences make one entry; the bit-exact ones are grouped,
    every other kernel says the largest difference over its launches."""
    from tileiropt.report.markdown import proven_kernels

    text = proven_kernels({"_attn_fwd": [6.6e-39, 8.7e-39, 7.1e-39], "_dyt_fwd": [0.0, 0.0, 0.0], "_gelu": [0.0],
                           "_jsd": [None]})
    assert text == ("bit-exact: **_dyt_fwd** (3 launches), **_gelu**; within tolerance: **_attn_fwd** (3 launches, "
                    "max difference 8.7e-39), **_jsd** (max difference n/a)")


def test_a_long_program_command_is_folded_where_the_report_names_the_program() -> None:
    from tileiropt.report.markdown import short_command

    files = [f"test/transformers/test_op_{index}.py" for index in range(32)]
    assert short_command(["pytest", "-q", "test/a.py"]) == "pytest -q test/a.py"
    text = short_command(["python3", "-m", "pytest", "-q", "-n", "16", *files])
    assert text.startswith("python3 -m pytest -q -n 16 test/transformers/test_op_0.py") and len(text) < 160
    assert text.endswith("more arguments)")


def test_a_jit_helper_a_launched_kernel_calls_is_not_said_never_launched(tmp_path: Path) -> None:
    """`silu`, called by the launched `_swiglu_forward_kernel`, ran with it: the capture summary must not list it as
    "rewritten but never launched" while the kernel's section says it was validated as a helper."""
    import os
    from types import SimpleNamespace

    from tileiropt.report.build import helpers_run

    file = str(tmp_path / "swiglu.py")
    classify = SimpleNamespace(kernels=[
        {"file": file, "kernel": "_swiglu_forward_kernel", "calls": ["silu"]},
        {"file": file, "kernel": "silu", "calls": ["_sigmoid"]},
        {"file": file, "kernel": "_sigmoid", "calls": []},
        {"file": file, "kernel": "_swiglu_forward_kernel_tiled", "calls": ["silu"]}])
    real = os.path.realpath(file)
    reached = helpers_run({(real, "_swiglu_forward_kernel")}, SimpleNamespace(classify=classify))
    assert reached == {(real, "_swiglu_forward_kernel"), (real, "silu"), (real, "_sigmoid")}
    assert helpers_run({(real, "absent")}, SimpleNamespace(classify=None)) == set()


def test_a_pass_on_an_interpreter_that_computes_bfloat16_wrongly_is_agreement_not_proof() -> None:
    from types import SimpleNamespace

    from tileiropt.report.verdict import PROVEN, kernel_verdict
    from tileiropt.schema import BF16_WRONG

    def kernel(agrees_only: bool) -> SimpleNamespace:
        code = SimpleNamespace(status="pass", backend="tileir-code-on-interpret", backend_description="TileIR code "
                               "forced on, Triton interpreter", max_difference=0.05, notes=[], reason="",
                               fallback=False, failures=[], agrees_only=agrees_only)
        passed = SimpleNamespace(status="pass", failures=[], reason="", fallback=False)
        missing = SimpleNamespace(status="not-run", failures=[], reason="not run: no GPU", fallback=False)
        return SimpleNamespace(optimized_path="k_tileir.py", stopped=None, compatibility=passed, tileir_code=code,
                               tileir_validation=missing, tileir_emulated=None, optimized_ptx=None,
                               classification=SimpleNamespace(ran=False, findings=[]),
                               benchmark=SimpleNamespace(tileir_speedups=[], ptx_ratios=[]),
                               transformations=SimpleNamespace(ran=True, count=1, left_alone=[]))

    agreed = kernel_verdict(kernel(True))
    assert agreed.bucket == PROVEN and agreed.agrees_only and agreed.text.startswith("TileIR code agrees with")
    proven = kernel_verdict(kernel(False))
    assert proven.bucket == PROVEN and not proven.agrees_only and "proven correct" in proven.text
    # read from every passing record, not from the few notes the section shows
    from tileiropt.report.sections import verdict
    from tileiropt.validate.records import ValidationRecord

    records = [ValidationRecord("k", "optimized", "tileir-code-on-interpret", f"C{i}", "pass", f"note {i}",
                                max_abs=0.0, path="/k.py", dtypes={"x": "float32"}) for i in range(4)]
    records.append(ValidationRecord("k", "optimized", "tileir-code-on-interpret", "C9", "pass",
                                    f"{BF16_WRONG} in this Triton (probed): ...", max_abs=0.01, path="/k.py",
                                    dtypes={"x": "bfloat16"}, bf16_wrong=True))  # its field: never its words
    summary = verdict(records)
    assert summary.agrees_only and not any(BF16_WRONG in note for note in summary.notes)  # past the notes shown


def test_a_kernel_file_s_records_are_those_of_a_run_that_covered_it(tmp_path: Path) -> None:
    """A library file none of whose kernels was launched was still a target of the run: its records are the
    library run's, not another file's."""
    from types import SimpleNamespace

    from tileiropt.report.command import names_file

    k1, k2, k3 = (tmp_path / name for name in ("k1.py", "k2.py", "k3.py"))
    report = SimpleNamespace(kernels=[SimpleNamespace(path=str(k1))])
    library = SimpleNamespace(capture=SimpleNamespace(expected=[f"a@{k1}", f"b@{k2}"]))
    assert names_file(library, report, k1) and names_file(library, report, k2)
    assert not names_file(library, report, k3)
    assert not names_file(SimpleNamespace(capture=None), SimpleNamespace(kernels=[]), k1)
