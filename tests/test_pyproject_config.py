"""`[tool.tileiropt]` in pyproject.toml: found by walking up from each file, layered with the command line as
ruff layers it, per-file-ignores, and the release: command line > tileiropt.toml > pyproject."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app

runner = CliRunner()

# one finding of each severity family: TIR006 (error), TIR101 (warning), TIR013 (error on 13.1, perf on 13.4)
KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, n, M, N, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, tl.erf(x), mask=offs < n)
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
        tl.store(x_ptr + offs, tl.load(p))
    """)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _lint(root: Path, *args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["classify", str(root), "--no-ir", "--json", *args])
    data = json.loads(result.stdout)
    if "error" in data:
        return result.exit_code, data
    codes = {Path(k["file"]).relative_to(root).as_posix(): sorted({f["code"] for f in k["findings"]})
             for k in data["kernels"]}
    return result.exit_code, {"codes": codes, "release": data["release"]}


def test_nearest_table_per_file_and_ruff_layering(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "pyproject.toml": '[tool.tileiropt]\nselect = ["TIR0", "TIR1"]\nignore = ["TIR013"]\n',
        "a/k.py": KERNEL,
        "b/pyproject.toml": "[project]\nname = 'b'\n",  # no [tool.tileiropt]: passed over
        "b/k.py": KERNEL,
        "c/pyproject.toml": '[tool.tileiropt]\nignore = ["TIR1"]\n',  # the nearest table wins, no merging
        "c/k.py": KERNEL,
    })
    code, found = _lint(tmp_path)
    assert code == 0
    assert found["codes"] == {"a/k.py": ["TIR006", "TIR101"], "b/k.py": ["TIR006", "TIR101"],
                              "c/k.py": ["TIR006", "TIR013"]}
    # --select starts again from every rule (the table's ignore goes with it); --ignore drops more
    assert _lint(tmp_path, "--select", "TIR013")[1]["codes"] == {"a/k.py": ["TIR013"], "b/k.py": ["TIR013"],
                                                                  "c/k.py": ["TIR013"]}
    assert _lint(tmp_path, "--ignore", "TIR006")[1]["codes"] == {"a/k.py": ["TIR101"], "b/k.py": ["TIR101"],
                                                                  "c/k.py": ["TIR013"]}


def test_per_file_ignores(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "pyproject.toml": '[tool.tileiropt]\nper-file-ignores = { "tests/*" = ["TIR1"], "legacy_*.py" = ["TIR0"] }\n',
        "ops/k.py": KERNEL, "tests/k.py": KERNEL, "ops/deep/legacy_k.py": KERNEL,
    })
    assert _lint(tmp_path)[1]["codes"] == {"ops/deep/legacy_k.py": ["TIR101"], "ops/k.py": ["TIR006", "TIR013",
                                                                                         "TIR101"],
                                           "tests/k.py": ["TIR006", "TIR013"]}


def test_release_precedence_command_line_then_tileiropt_toml_then_pyproject(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": '[tool.tileiropt]\ntileir_version = "13.1"\n', "k.py": KERNEL})
    code, found = _lint(tmp_path)
    assert found["release"] == {"version": "13.1", "origin": f"from {tmp_path / 'pyproject.toml'} [tool.tileiropt]"}
    assert found["codes"]["k.py"] == ["TIR006", "TIR013", "TIR101"]  # block pointers: an error on 13.1
    (tmp_path / "tileiropt.toml").write_text('[project]\ntileir_version = "13.4"\n', encoding="utf-8")
    assert _lint(tmp_path)[1]["release"] == {"version": "13.4", "origin": f"from {tmp_path / 'tileiropt.toml'}"}
    assert _lint(tmp_path, "--tileir-version", "13.5")[1]["release"] == {"version": "13.5", "origin": "requested"}


def test_files_asking_for_different_releases_are_bad_input(tmp_path: Path) -> None:
    _tree(tmp_path, {"a/pyproject.toml": '[tool.tileiropt]\ntileir_version = "13.1"\n', "a/k.py": KERNEL,
                     "b/pyproject.toml": '[tool.tileiropt]\ntileir_version = "13.4"\n', "b/k.py": KERNEL})
    code, data = _lint(tmp_path)
    assert code == 2
    assert data["error"]["text"] == (
        f"the files ask for different CUDA Tile IR releases: 13.1 ({tmp_path / 'a' / 'pyproject.toml'} "
        f"[tool.tileiropt]); 13.4 ({tmp_path / 'b' / 'pyproject.toml'} [tool.tileiropt]) (fix: one release per run: "
        "pass --tileir-version, or classify them separately)")
    assert _lint(tmp_path, "--tileir-version", "13.4")[0] == 0


@pytest.mark.parametrize("table, text", [
    ('select = ["NOPE"]', "[tool.tileiropt] select: no lint rule matches 'NOPE' (codes look like TIR001, prefixes "
                          "like TIR0)"),
    ("select = 3", "[tool.tileiropt] select: must be a list of rule codes or prefixes, got 3"),
    ('tileir_version = "12.0"', "[tool.tileiropt] tileir_version: unknown CUDA Tile IR release '12.0'; known: 13.1, "
                                "13.4, 13.5"),
    ("colour = true", "[tool.tileiropt] colour: unknown key; known: select, ignore, per-file-ignores, "
                      "tileir_version"),
    ('per-file-ignores = ["x"]', "[tool.tileiropt] per-file-ignores: must be a table of glob = [codes]"),
])
def test_bad_tables_are_one_line_errors(tmp_path: Path, table: str, text: str) -> None:
    _tree(tmp_path, {"pyproject.toml": f"[tool.tileiropt]\n{table}\n", "k.py": KERNEL})
    result = runner.invoke(app, ["classify", str(tmp_path), "--no-ir"])
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: {tmp_path / 'pyproject.toml'}: {text} (fix: see docs/linting.md for the "
                                     "keys (select, ignore, per-file-ignores, tileir_version))")


def test_unparsable_pyproject_is_a_one_line_error(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": "[tool.tileiropt\n", "k.py": KERNEL})
    result = runner.invoke(app, ["classify", str(tmp_path / "k.py"), "--no-ir"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert result.output.startswith(f"error: {tmp_path / 'pyproject.toml'}: not valid TOML: ")
