"""Command-line conventions: -h everywhere, flags shown as flags, -q/-v, shell completion, `tileiropt rule`."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app

from shared import ROOT

runner = CliRunner()
COMMANDS = ["check", "classify", "rule", "init", "apply", "validate", "bench", "report", "run"]


@pytest.fixture(autouse=True)
def _default_verbosity():
    yield
    from tileiropt.verbosity import set_verbosity

    set_verbosity(reset=True)


@pytest.mark.parametrize("command", [[], *[[c] for c in COMMANDS]], ids=["root", *COMMANDS])
def test_dash_h_is_help_everywhere(command: list[str]) -> None:
    short = runner.invoke(app, [*command, "-h"], env={"COLUMNS": "200"})
    long = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert short.exit_code == 0 and short.output == long.output
    assert "Usage:" in short.output and "-h" in short.output


@pytest.mark.parametrize("command", [[], *[[c] for c in COMMANDS]], ids=["root", *COMMANDS])
def test_flags_are_shown_as_flags(command: list[str]) -> None:
    text = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output
    assert "<bool>" not in text
    if command == ["classify"]:
        assert re.search(r"--strict +Exit 1", text) and re.search(r"--json +Same as --output-format json", text)
        assert re.search(r"--select +<list\[str\]>", text)  # options with a value keep their type


def test_completion_is_offered() -> None:
    text = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "--install-completion" in text and "--show-completion" in text


KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, tl.erf(x), mask=offs < n)
    """)


def test_quiet_and_verbose_change_classify_output(tmp_path: Path) -> None:
    path = tmp_path / "k.py"
    path.write_text(KERNEL, encoding="utf-8")
    args = ["classify", str(path), "--no-ir", "--tileir-version", "13.4"]
    normal = runner.invoke(app, args).stdout
    quiet = runner.invoke(app, [*args, "-q"]).stdout
    quiet_global = runner.invoke(app, ["-q", *args]).stdout
    verbose = runner.invoke(app, [*args, "-v"]).stdout
    assert quiet == quiet_global
    assert [line.split(": ")[0] + ": " + line.split(": ")[1].split(" ")[0] for line in quiet.splitlines()] == [
        f"{path}:9:5: TIR006", f"{path}:9:5: TIR101"]
    assert "Triton kernels in" in normal and "1 kernel in 1 file " in normal and "line 8:" not in normal
    assert "Triton kernels in" not in quiet and "in 1 file " not in quiet
    assert f"{path}:6: k: elementwise (confidence 0.90, strategy: occupancy + num_stages)" in verbose
    assert len(verbose.splitlines()) > len(normal.splitlines())


def test_quiet_silences_other_commands_but_not_their_errors(tmp_path: Path) -> None:
    written = runner.invoke(app, ["-q", "init", str(tmp_path / "tileiropt.toml")])
    assert written.exit_code == 0 and written.stdout == "" and (tmp_path / "tileiropt.toml").is_file()
    again = runner.invoke(app, ["-q", "init", str(tmp_path / "tileiropt.toml")])
    assert again.exit_code == 2
    assert again.output == (f"error: {tmp_path / 'tileiropt.toml'}: file exists; not overwriting it (fix: pass --force "
                            "to replace it, or give another path)\n")
    loud = runner.invoke(app, ["init", str(tmp_path / "second.toml")])
    assert loud.stdout.replace("\n", "").startswith(f"wrote {tmp_path / 'second.toml'}")  # the next one is not quiet


def test_quiet_and_verbose_together_are_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["-q", "-v", "rule"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: -q/--quiet and -v/--verbose exclude each other (fix: give one of them)"


@pytest.mark.parametrize(("argv", "command", "said"), [
    (["apply", "k.py", "--max-configs", "abc", "--json"], "tileiropt apply", "Invalid value for '--max-configs'"),
    (["classify", "--nope", "--json"], "tileiropt classify", "No such option: --nope"),
    (["bogus", "--json"], "tileiropt", "No such command 'bogus'"),
    (["validate", "--json", "--variant"], "tileiropt validate", "Option '--variant' requires an argument"),
    (["apply", "k.py", "--max-configs", "-3", "--json"], "tileiropt apply", "Invalid value for '--max-configs'"),
    (["run", "--max-configs", "0", "--json"], "tileiropt run", "Invalid value for '--max-configs'"),
])
def test_a_usage_error_is_one_line_naming_the_command_and_its_fix(argv: list[str], command: str, said: str) -> None:
    import json
    import subprocess
    import sys

    executable = Path(sys.executable).parent / "tileiropt"  # the installed command, as a user runs it
    done = subprocess.run([str(executable), *argv], capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ, "COLUMNS": "80"})
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()  # one line, no usage block
    assert line.startswith(f"error: {command}: {said}") and line.endswith(f"(fix: see `{command} -h`)")
    error = json.loads(done.stdout)["error"]
    assert error["fix"] == f"see `{command} -h`" and error["exit_code"] == 2 and error["message"].startswith(said)
    assert {"file", "line"} <= set(error)


@pytest.mark.parametrize("argv, moved", [
    (["--json", "run", "k.py"], ["run", "--json", "k.py"]),
    (["-q", "--json", "classify", "src/"], ["-q", "classify", "--json", "src/"]),
    (["run", "k.py", "--", "python", "--json", "run"], ["run", "k.py", "--", "python", "--json", "run"]),
    (["--json"], ["--json"]),
    (["run", "--json", "k.py"], ["run", "--json", "k.py"]),
])
def test_json_before_the_command_is_the_command_s_flag(argv: list[str], moved: list[str]) -> None:
    """`tileiropt --json run k.py` is read as `tileiropt run --json k.py`; a capture command's own `--json` (after
    `--`) and a `--json` already after the command stay where they are."""
    from tileiropt.cli import json_after_command

    assert json_after_command(argv) == moved


def test_json_before_the_command_gives_the_command_s_document(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    kernel = tmp_path / "k.py"
    kernel.write_text((ROOT / "examples" / "vector_add.py").read_text())
    executable = Path(sys.executable).parent / "tileiropt"
    done = subprocess.run([str(executable), "--json", "classify", str(kernel)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert [k["kernel"] for k in json.loads(done.stdout)["kernels"]] == ["add_kernel"]


def test_rule_command_pages_and_list() -> None:
    page = runner.invoke(app, ["rule", "TIR006"])
    assert page.exit_code == 0 and page.stdout.startswith("## TIR006 erf\n\nSeverity: **error**")
    assert runner.invoke(app, ["rule", "erf"]).stdout == page.stdout  # by name too
    listing = runner.invoke(app, ["rule"]).stdout.splitlines()
    assert len(listing) == 26
    assert listing[-1].startswith("TIR203  branch-alternative-definition  perf")
    assert listing[12] == ("TIR013  block-pointer                  error    block pointers (tl.make_block_ptr / "
                           "tl.advance) are not supported by TileIR")
    unknown = runner.invoke(app, ["rule", "TIR999"])
    assert unknown.exit_code == 2 and unknown.output.startswith("error: no lint rule 'TIR999'; known: TIR001, ")
    both = runner.invoke(app, ["rule", "TIR006", "--all"])
    assert both.exit_code == 2 and "give a rule code or --all, not both" in both.output


def test_the_readme_s_table_of_phases_is_the_one_list() -> None:
    """README's phases are `tileiropt.phases.PHASES` as `phases_table` writes them (the run's help reads the same)."""
    from tileiropt.phases import PHASES, phases_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert phases_table() in readme
    assert [p.name for p in PHASES] == ["check", "capture", "compatibility", "classify", "apply", "validate", "bench",
                                        "report"]


COMMANDS = {"check": "tileiropt.check.command", "classify": "tileiropt.classify.command",
            "rule": "tileiropt.classify.rule_command", "init": "tileiropt.capture.init_command",
            "apply": "tileiropt.apply.command", "validate": "tileiropt.validate.command",
            "bench": "tileiropt.bench.command", "report": "tileiropt.report.command", "run": "tileiropt.run.command"}


def test_every_command_is_one_function_of_its_phase_named_after_it() -> None:
    """`tileiropt X` parses its flags and calls `X_command` of its phase's package, which returns the exit code."""
    import importlib
    import inspect

    from tileiropt import cli

    assert sorted(c.name or c.callback.__name__ for c in cli.app.registered_commands) == sorted(COMMANDS)
    for name, module in COMMANDS.items():
        function = getattr(importlib.import_module(module), f"{name}_command")
        assert inspect.signature(function).return_annotation == "ExitCode", name
        assert f"{name}_command(" in inspect.getsource(getattr(cli, name)), f"tileiropt {name} calls {module}"


def test_an_option_read_as_the_kernels_name_is_said_so(tmp_path: Path) -> None:
    """`validate --kernel --json`: click takes `--json` as the kernel's name; the error says so and how to write it."""
    import shutil

    shutil.copytree(ROOT / "examples", tmp_path / "ex")
    result = runner.invoke(app, ["validate", str(tmp_path / "ex" / "tileiropt.toml"), "--kernel", "--json"])
    assert result.exit_code == 2
    assert "--json was read as --kernel's value" in result.output and "fix: --kernel NAME --json, NAME among: " \
        "vector_add" in result.output


def test_run_s_max_configs_and_hint_autotune_are_given_to_apply(tmp_path: Path, monkeypatch) -> None:
    import shutil

    from tileiropt.run import command

    shutil.copytree(ROOT / "examples", tmp_path / "ex")
    seen: list[tuple] = []

    def pipeline(project, **_) -> None:  # the phases are not run: only what they were given is looked at
        seen.append((project.max_configs, project.hint_autotune))
        raise SystemExit(0)

    monkeypatch.setattr(command, "run_pipeline", pipeline)
    for extra, expected in (([], (16, ())), (["--max-configs", "4"], (4, ())),
                            (["--hint-autotune", "matmul_kernel", "--hint-autotune", "all"],
                             (16, ("matmul_kernel", "all")))):
        runner.invoke(app, ["run", str(tmp_path / "ex" / "tileiropt.toml"), "--json", *extra])
        assert seen[-1] == expected


@pytest.mark.parametrize("command, dashes", [("run", True), ("init", True), ("run", False)])
def test_a_second_target_before_the_program_is_said_so(tmp_path: Path, command: str, dashes: bool) -> None:
    """`tileiropt run a.py b.py -- python drive.py` (or with no `--`): `b.py` is not taken as the program's first
    word."""
    import subprocess
    import sys

    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text((ROOT / "examples" / "vector_add.py").read_text())
    executable = Path(sys.executable).parent / "tileiropt"
    program = ["--", "python", "drive.py"] if dashes else []
    done = subprocess.run([str(executable), command, "a.py", "b.py", *program], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()
    where = " before `--`" if dashes else ""
    assert line == (f"error: {command} takes one target; also given{where}: b.py (fix: a program to run goes after "
                    f"`--` (tileiropt {command} FILE -- COMMAND); several kernel files: their folder (tileiropt "
                    f"{command} DIR -- COMMAND) or a project file)")
    assert not (tmp_path / ".tileiropt").exists()
