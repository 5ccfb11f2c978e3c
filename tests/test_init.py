"""`tileiropt init`: writes the shipped template, never overwrites by accident, and the template loads."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.errors import UserError
from tileiropt.project import file as project_file
from tileiropt.project.spec import load_project
from tileiropt.project.template import project_template_text

runner = CliRunner()

KERNEL_FILE = ('"""A stand-in kernel file: the project loader checks it exists and defines the entry."""\n\n\n'
               "def layer_norm(x, weight, bias, eps=1e-5):\n    return x\n")


def test_writes_default_file_in_cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init"])
    assert result.exit_code == 0, result.output
    written = tmp_path / "tileiropt.toml"
    assert written.read_text(encoding="utf-8") == project_template_text()
    assert "wrote tileiropt.toml" in result.stdout
    assert "[[kernel]]" in result.stdout


def test_refuses_to_overwrite(tmp_path):
    target = tmp_path / "mine.toml"
    target.write_text("# my own project\n")
    result = runner.invoke(app, ["init", str(target)])
    assert result.exit_code == 2
    assert str(target) in result.stderr
    assert "--force" in result.stderr
    assert "Traceback" not in result.output
    assert target.read_text() == "# my own project\n"


def test_force_overwrites_and_json(tmp_path):
    target = tmp_path / "mine.toml"
    target.write_text("# my own project\n")
    result = runner.invoke(app, ["init", str(target), "--force", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"written": str(target.resolve())}
    assert target.read_text(encoding="utf-8") == project_template_text()


def test_folder_gets_tileiropt_toml(tmp_path):
    result = runner.invoke(app, ["init", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["written"] == str((tmp_path / "tileiropt.toml").resolve())


def test_unwritable_target_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = runner.invoke(app, ["init", str(blocker / "sub" / "tileiropt.toml")])
    assert result.exit_code == 2
    assert "cannot write" in result.stderr
    assert "Traceback" not in result.output


def test_template_loads_once_its_kernel_exists(tmp_path):
    assert runner.invoke(app, ["init", str(tmp_path)]).exit_code == 0
    with pytest.raises(UserError, match="kernel file not found"):
        load_project(tmp_path)  # valid TOML and schema; only the example kernel file is missing
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "layer_norm.py").write_text(KERNEL_FILE)
    loaded = load_project(tmp_path)
    assert loaded.artifacts == tmp_path.resolve() / ".tileiropt"
    (kernel,) = loaded.kernels
    assert kernel.name == "layer_norm"
    assert kernel.entry == "layer_norm"
    assert kernel.path == (tmp_path / "kernels" / "layer_norm.py").resolve()
    assert kernel.shapes() == {"x": [4096, 4096], "weight": [4096], "bias": [4096]}
    assert kernel.sweep == ["M"]
    assert [variant["x"] for variant in kernel.dtypes] == ["bfloat16", "float16"]
    assert kernel.args == {"eps": 1e-5}


def test_template_explains_every_key(tmp_path):
    text = project_template_text()
    keys = project_file.KERNEL_KEYS | project_file.DEFAULT_KEYS | project_file.PROJECT_KEYS
    for key in sorted(keys):
        assert re.search(rf"^(# )?{key} = ", text, re.MULTILINE), f"template does not show `{key}`"


def test_commented_examples_are_valid(tmp_path):
    """Uncommenting the optional example lines still gives a project that loads."""
    text = project_template_text()
    keys = project_file.KERNEL_KEYS | project_file.DEFAULT_KEYS | project_file.PROJECT_KEYS
    uncommented = re.sub(rf"^# (({'|'.join(sorted(keys))}) = )", r"\1", text, flags=re.MULTILINE)
    assert uncommented != text
    (tmp_path / "tileiropt.toml").write_text(uncommented)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "layer_norm.py").write_text(KERNEL_FILE)
    for folder in ("ops", "ops/experimental"):  # the library example: include ops/*.py, exclude ops/experimental/*
        (tmp_path / "src" / "mypkg" / folder).mkdir(parents=True)
        (tmp_path / "src" / "mypkg" / folder / "norm.py").write_text(
            "import triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n")
    (kernel,) = load_project(tmp_path).kernels
    assert kernel.ranges == {"target": (0, 32000)}
    assert kernel.flops == "2 * M * N * K"
    assert kernel.bytes == "4 * M * N"
    assert kernel.optimized == (tmp_path / "kernels" / "layer_norm_tileir.py").resolve()
    capture = load_project(tmp_path).capture
    assert capture.command == ["pytest", "tests/test_layer_norm.py"] and capture.budget == 3600 and capture.stall == 300
    assert capture.files == [(tmp_path / "kernels" / "layer_norm.py").resolve(),
                             (tmp_path / "src" / "mypkg" / "ops" / "norm.py").resolve()]
    assert capture.library == (tmp_path / "src" / "mypkg").resolve()


def test_template_ships_in_the_package():
    import importlib.resources
    import importlib.util

    if importlib.util.find_spec("tileiropt.templates") is None:
        pytest.skip("tileiropt runs uninstalled here (source checkout on PYTHONPATH)")
    shipped = importlib.resources.files("tileiropt.templates").joinpath("tileiropt.toml")
    assert shipped.is_file()
    assert shipped.read_text(encoding="utf-8").startswith("# tileiropt project file")


def test_template_found_when_running_uninstalled(monkeypatch):
    """Run from a source checkout (PYTHONPATH, no install), `tileiropt.templates` does not exist."""
    import tileiropt.project.template as module

    def not_installed(package: str):
        raise ModuleNotFoundError(f"No module named {package!r}")

    monkeypatch.setattr(module, "files", not_installed)
    assert module.project_template_text().startswith("# tileiropt project file")
    with pytest.raises(UserError, match="missing from the installation"):
        module.read_template("no-such-template.toml")
