"""Any input file gives one line and a non-zero exit, never a traceback or a hang: pipes, devices,
names the system refuses, expressions nested beyond the parser or the analysis, bad spaces files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app

from shared import ROOT

runner = CliRunner()

KERNEL = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, {value}, mask=offs < n)


def launch(x):
    k[(1,)](x, x.numel(), BLOCK=128)
"""


def _invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    (tmp_path / "parser_deep.py").write_text(KERNEL.format(value=" + ".join(["1"] * 5000)))
    (tmp_path / "analysis_deep.py").write_text(KERNEL.format(value=" + ".join(["tl.load(x_ptr)"] * 700)))
    os.mkfifo(tmp_path / "pipe.py")
    return tmp_path


@pytest.mark.parametrize("command", ["classify", "apply"])
@pytest.mark.parametrize("name", ["parser_deep.py", "analysis_deep.py", "pipe.py", "/dev/zero",
                                  "a" * 300 + ".py"])
def test_bad_files_give_one_line(hostile: Path, command: str, name: str) -> None:
    path = name if name.startswith("/") else str(hostile / name)
    args = [command, path] + (["--dry-run"] if command == "apply" else [])
    output = _one_line_error(_invoke(*args))
    assert any(word in output for word in ("nested too deeply", "not a regular file", "too long")), output


def test_folder_with_bad_files_still_rewrites_the_good_one(hostile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (hostile / "good.py").write_text(KERNEL.format(value="1.0"))
    monkeypatch.chdir(hostile)  # short paths: the table's columns never fold a name, however long tmp_path is
    result = _invoke("apply", ".", "--dry-run")
    output = _one_line_error(result)
    assert "would write" in output and "good_tileir.py" in output
    assert output.count("nested too deeply") == 2


def test_spaces_files_that_are_not_utf8_too_large_or_a_pipe(hostile: Path) -> None:
    good = hostile / "good.py"
    good.write_text(KERNEL.format(value="1.0"))
    latin = hostile / "latin.toml"
    latin.write_bytes("[dot]\noccupancy = [1]\n# caf\xe9\n".encode("latin-1"))
    assert "UTF-8" in _one_line_error(_invoke("apply", str(good), "--dry-run", "--spaces", str(latin)))
    wide = hostile / "wide.toml"
    lists = ", ".join(["1"] * 1000)
    wide.write_text("".join(f"[{c}]\noccupancy = [{lists}]\n" for c in ("dot", "norm", "elementwise", "reduction")))
    assert "1 to 32 integers" in _one_line_error(_invoke("apply", str(good), "--dry-run", "--spaces", str(wide)))
    product = hostile / "product.toml"
    values = str(list(range(1, 33)))
    product.write_text("".join(f"[{c}]\noccupancy = {values}\nnum_stages = {values}\nnum_ctas = {values}\n"
                               "tiles = {M = " + values + "}\n" for c in ("dot", "norm", "elementwise", "reduction")))
    assert "combinations" in _one_line_error(_invoke("apply", str(good), "--dry-run", "--spaces", str(product)))
    assert "not a regular" in _one_line_error(_invoke("apply", str(good), "--dry-run", "--spaces",
                                                      str(hostile / "pipe.py")))


def test_non_finite_config_values_are_derived_at_import_not_written(tmp_path: Path) -> None:
    """`1e999` would be written back as `inf`, a NameError on import: such configs are not copied."""
    source = KERNEL.format(value="1.0").replace(
        "@triton.jit", '@triton.autotune(configs=[triton.Config({"SCALE": 1e999})], key=["n"])\n@triton.jit'
    ).replace("BLOCK: tl.constexpr)", "BLOCK: tl.constexpr, SCALE: tl.constexpr)")
    path = tmp_path / "k.py"
    path.write_text(source)
    result = _invoke("apply", str(path))
    assert result.exit_code == 0, result.output
    written = (tmp_path / "k_tileir.py").read_text()
    assert "inf" not in written.replace("info", "")
    compile(written, "k_tileir.py", "exec")
    assert "for d in k.configs[:i])][:3]\n        for o, n, s in [" in written  # read at import, its first configs


@pytest.mark.parametrize("args", [
    ["run", "examples", "--timeout", "nan"], ["run", "examples", "--timeout", "inf"],
    ["validate", "examples", "--timeout", "1e300"], ["bench", "examples", "--rep-ms", "nan"],
    ["bench", "examples", "--warmup-ms", "-1"], ["run", "examples/vector_add.py", "--capture-budget", "nan"],
])
def test_nan_infinite_and_huge_durations_are_refused(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    output = _one_line_error(_invoke(*args))
    assert "must be a number of" in output


def test_project_file_durations_are_refused(tmp_path: Path) -> None:
    from tileiropt.errors import UserError
    from tileiropt.project.spec import parse_project

    (tmp_path / "k.py").write_text(KERNEL.format(value="1.0"))
    kernel = {"path": "k.py", "entry": "launch", "inputs": {"x": [8]}, "reference": "x"}
    for value in (float("nan"), float("inf"), 1e300, -1):
        with pytest.raises(UserError, match="timeout"):
            parse_project({"kernel": [{**kernel, "timeout": value}]}, None, tmp_path)
        with pytest.raises(UserError, match="capture_budget"):
            parse_project({"project": {"capture": "python k.py", "capture_budget": value}, "kernel": [kernel]},
                          None, tmp_path)
    for cap in (0, 2.5, True, "6", 10**6):
        with pytest.raises(UserError, match="capture_cap"):
            parse_project({"project": {"capture": "python k.py", "capture_cap": cap}, "kernel": [kernel]},
                          None, tmp_path)
    project = parse_project({"project": {"capture": "python k.py", "capture_cap": 6}, "kernel": [kernel]},
                            None, tmp_path)
    assert project.capture is not None and project.capture.cap == 6


PROJECT_WITH_SWEEP = """[[kernel]]
name = "k"
path = "k.py"
entry = "launch"
reference = "x"
inputs = {{ x = ["N"] }}
dims = {{ N = 256 }}
sweep = {sweep}
"""


@pytest.mark.parametrize("sweep", ['[["N"]]', '[{ a = 1 }]', '[[]]', '["N", ["N"]]', "[1]", '{ N = 1 }'])
def test_sweep_holding_lists_or_tables_is_refused_in_one_line(tmp_path: Path, sweep: str) -> None:
    (tmp_path / "k.py").write_text(KERNEL.format(value="1.0"))
    (tmp_path / "tileiropt.toml").write_text(PROJECT_WITH_SWEEP.format(sweep=sweep))
    output = _one_line_error(_invoke("validate", str(tmp_path / "tileiropt.toml")))
    assert "[kernel[0].sweep] sweep must list dims defined in `dims`" in output, output


VALIDATE_RECORD = {"records": [], "backends": ["ptx"], "command": ["tileiropt", "validate"], "environment": {},
                   "started": "2026-01-01T00:00:00", "seconds": 1.0}


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("environment", 7, "ValidateRun.environment must be an object, got int"),
    ("environment", "x", "ValidateRun.environment must be an object, got str"),
    ("seconds", True, "ValidateRun.seconds must be a number, got bool"),
    ("backends", {"ptx": 1}, "ValidateRun.backends must be a list, got dict"),
])
def test_records_holding_the_wrong_json_type_are_refused_on_read(tmp_path: Path, key: str, value, expected: str):
    import json

    from tileiropt.errors import UserError
    from tileiropt.validate.records import load_validate_run

    (tmp_path / "validate.json").write_text(json.dumps({**VALIDATE_RECORD, key: value}))
    with pytest.raises(UserError) as caught:
        load_validate_run(tmp_path)
    assert expected in str(caught.value)
    (tmp_path / "validate.json").write_text(json.dumps(VALIDATE_RECORD))
    assert load_validate_run(tmp_path).environment == {}


def test_a_record_with_a_non_finite_float_written_by_us_still_reads(tmp_path: Path) -> None:
    import json

    from tileiropt.validate.records import load_validate_run

    record = {"kernel": "k", "variant": "original", "backend": "ptx", "config": "", "status": "fail", "reason": "",
              "path": "k.py", "shapes": {}, "dtypes": {}, "max_abs": "inf", "max_rel": "nan"}
    (tmp_path / "validate.json").write_text(json.dumps({**VALIDATE_RECORD, "records": [record]}))
    loaded = load_validate_run(tmp_path).records[0]
    assert loaded.max_abs == float("inf")


def test_a_record_nested_100000_deep_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "art"
    folder.mkdir()
    (folder / "validate.json").write_text('{"records": ' + "[" * 100_000 + "]" * 100_000 + "}")
    from tileiropt.errors import UserError
    from tileiropt.validate.records import load_validate_run

    with pytest.raises(UserError, match="cannot read validation records"):
        load_validate_run(folder)
    output = _one_line_error(_invoke("report", str(folder), "-o", str(tmp_path / "report.md")))
    assert "validate.json: cannot read validation records: maximum recursion depth exceeded" in output
