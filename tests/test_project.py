"""The project file: every bad case is one line naming the file, the key path and the fix; the
seed-style flags build the same model."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.errors import ExitCode, UserError
from tileiropt.project.spec import DEFAULT_TIMEOUT_S, load_project, project_from_flags, resolve_target

KERNEL = "import triton\n\n\ndef add(x, y, alpha=1.0):\n    return x + y\n"

GOOD = '''
[defaults]
sizes = [128, 1024]
seed = 3

[[kernel]]
name = "add"
path = "add.py"
entry = "add"
reference = "x + y"
inputs = { x = ["M", 64], y = ["M", 64] }
dims = { M = 256 }
dtypes = ["float16", "bf16"]
args = { alpha = 1.0 }
ranges = { idx = [0, 10] }
flops = "M * 64"
'''


def _project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "add.py").write_text(KERNEL)
    (tmp_path / "tileiropt.toml").write_text(text)
    return tmp_path / "tileiropt.toml"


def test_good_project_loads_with_named_dims_and_dtype_sweep(tmp_path: Path) -> None:
    project = load_project(_project(tmp_path, GOOD).parent)
    (spec,) = project.kernels
    assert spec.shapes() == {"x": [256, 64], "y": [256, 64]}
    assert spec.sweep == ["M"] and spec.sweep_dims(1024) == {"M": 1024}
    assert spec.dtypes == [{"x": "float16", "y": "float16"}, {"x": "bfloat16", "y": "bfloat16"}]
    assert spec.tolerances(spec.dtypes[1]) == (2e-2, 2e-2)  # by the loosest input dtype
    assert spec.seed == 3 and spec.timeout == DEFAULT_TIMEOUT_S and spec.sizes == [128, 1024]
    assert spec.optimized_path == tmp_path / "add_tileir.py"
    assert project.hint_autotune == ()  # launch hints, no autotuner added, unless asked
    asked = load_project(_project(tmp_path, '[project]\nhint_autotune = ["add", "all"]\n' + GOOD).parent)
    assert asked.hint_autotune == ("add", "all")


BAD_CASES = [
    ("[[kernel]]\npath = 'add.py'\n", "kernel[0].entry", "missing required key"),
    ("[[kernel]\n", None, "invalid TOML"),
    ("[kernel]\npath = 'add.py'\n", "kernel", "no [[kernel]] table"),
    (GOOD.replace('path = "add.py"', 'path = "missing.py"'), "kernel[0].path", "kernel file not found"),
    (GOOD.replace('dtypes = ["float16", "bf16"]', 'dtypes = "float13"'), "kernel[0].dtypes[0]", "unknown dtype"),
    (GOOD.replace('x = ["M", 64]', 'x = "M x 64"'), "kernel[0].inputs.x", "shape must be a list"),
    (GOOD.replace('x = ["M", 64]', 'x = ["M", -1]'), "kernel[0].inputs.x[1]", "must be >= 0"),
    (GOOD.replace("dims = { M = 256 }", "dims = { N = 256 }"), "kernel[0].dims", "'M' is used in inputs"),
    (GOOD.replace("sizes = [128, 1024]", 'sizes = "x"'), "defaults.sizes", "positive integers"),
    (GOOD.replace("seed = 3", 'seed = "abc"'), "defaults.seed", "must be an integer"),
    (GOOD.replace("seed = 3", 'seed = 3\ndtypes = "float61"'), "defaults.dtypes[0]", "unknown dtype"),
    (GOOD.replace("ranges = { idx = [0, 10] }", "ranges = 5"), "kernel[0].ranges", "must be a table"),
    (GOOD.replace("ranges = { idx = [0, 10] }", "ranges = { idx = [10, 0] }"), "kernel[0].ranges.idx", "[low, high)"),
    (GOOD.replace('flops = "M * 64"', "timeout = 0"), "kernel[0].timeout", "in (0, "),
    (GOOD.replace('flops = "M * 64"', "colour = 1"), "kernel[0].colour", "unknown key"),
    (GOOD + '\n[[kernel]]\nname = "add"\npath = "add.py"\nentry = "add"\ninputs = { x = [4], y = [4] }\n',
     "kernel[1].name", "duplicate kernel name"),
    ("[project]\nhint_autotune = \"add\"\n" + GOOD, "project.hint_autotune", "list of kernel names"),
    (GOOD.replace('reference = "x + y"', 'reference = "x + z"'), "kernel[0].reference", "reads 'z'"),
    (GOOD.replace('reference = "x + y"', 'reference = "nopkg_here.mod:fn"'), "kernel[0].reference",
     "no module named 'nopkg_here'"),
    (GOOD.replace('reference = "x + y"', 'reference = "x + "'), "kernel[0].reference", "not a Python expression"),
]


@pytest.mark.parametrize(("text", "key", "message"), BAD_CASES, ids=[c[2] for c in BAD_CASES])
def test_bad_project_names_file_key_and_fix(tmp_path: Path, text: str, key: str | None, message: str) -> None:
    path = _project(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_project(path)
    error = str(info.value)
    assert error.startswith(str(path.resolve()) if key else str(path)) and message in error
    if key:
        assert f"[{key}]" in error
    # through the command line: one line on stderr, exit 2, the key path intact (not eaten as markup)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "Traceback" not in result.output and message in result.output
    if key:
        assert f"[{key}]" in result.output


def test_a_project_error_names_the_line_of_its_key(tmp_path: Path) -> None:
    """As a linter does: file, line and key; the key's own line inside the right `[[kernel]]`, else its table's."""
    from tileiropt.project.file import key_line

    second = GOOD + '\n[[kernel]]\nname = "add2"\npath = "add.py"\nentry = "add"\nreference = "x + q"\n' \
                    'inputs = { x = [4] }\n'
    with pytest.raises(UserError) as info:
        load_project(_project(tmp_path, second))
    lines = second.splitlines()
    assert "[kernel[1].reference]" in str(info.value) and lines[info.value.line - 1] == 'reference = "x + q"'
    assert f"tileiropt.toml:{info.value.line}: " in str(info.value)
    assert lines[key_line(second, "defaults.sizes") - 1] == "sizes = [128, 1024]"
    assert lines[key_line(second, "kernel[0].colour") - 1] == "[[kernel]]"  # no such line: the table's header
    assert key_line(second, "kernel[5].path") is None and key_line("", "defaults.seed") is None
    spelled = ('[[kernel]]\nname = "a"\ndims.N = 4\n\n[kernel.args]\neps = 1e-5\n\n[[kernel]]\nname = "b"\n'
               '[[kernels]]\n')
    lines = spelled.splitlines()
    assert lines[key_line(spelled, "kernel[0].dims.N") - 1] == "dims.N = 4"  # a dotted key
    assert lines[key_line(spelled, "kernel[0].args.eps") - 1] == "[kernel.args]"  # a sub-table of its own
    assert lines[key_line(spelled, "kernel[1].name") - 1] == 'name = "b"'
    assert lines[key_line(spelled, "kernels") - 1] == "[[kernels]]"  # a misspelled table, as written


def test_a_function_reference_beside_the_project_or_installed_loads(tmp_path: Path) -> None:
    """Found without importing it: a module beside the project file (the workers put its folder on sys.path) or an
    installed one; a dotted name without `:` is told how a function is written."""
    (tmp_path / "refs.py").write_text("def add(x, y):\n    return x + y\n")
    for reference in ("refs:add", "math:fsum", "torch.nn.functional:relu"):
        load_project(_project(tmp_path, GOOD.replace('reference = "x + y"', f'reference = "{reference}"')))
    with pytest.raises(UserError) as info:
        load_project(_project(tmp_path, GOOD.replace('reference = "x + y"', 'reference = "refs.add"')))
    assert "a function is written refs:add" in str(info.value)


def test_an_expression_reference_may_read_its_inputs_dims_args_torch_and_what_it_binds() -> None:
    from tileiropt.harness.entry_ref import unknown_names

    known = ["x", "y", "M", "alpha"]
    assert unknown_names("torch.stack([x[i] * alpha for i in range(M)]).sum(0) + F.relu(y) + math.pi", known) == []
    assert unknown_names("(lambda a, *rest, b=1: a + b)(x) + abs(y)", known) == []
    assert unknown_names("x + z * w", known) == ["w", "z"]
    assert unknown_names("__builtins__['abs'](x)", known) == []
    assert unknown_names("original", known) == [] and unknown_names("pkg.mod:fn", known) == []


@pytest.mark.parametrize(("old", "new", "fix"), [
    ("sizes = [128, 1024]", 'sizes = "128"', "e.g. sizes = [1024, 4096]"),
    ('flops = "M * 64"', 'atol = "1e-2"', "write it unquoted: atol = 1e-2"),
    ("dims = { M = 256 }", 'dims = { M = "64" }', "write it unquoted: M = 64"),
    ("dims = { M = 256 }", "dims = { N = 256 }", "add M = 1024 to dims"),  # not a second `dims` key
    ('reference = "x + y"', 'reference = "x + "', '"pkg.mod:fn" or "original"'),
])
def test_a_project_value_error_gives_its_fix(tmp_path: Path, old: str, new: str, fix: str) -> None:
    with pytest.raises(UserError) as info:
        load_project(_project(tmp_path, GOOD.replace(old, new)))
    assert fix in (info.value.hint or ""), str(info.value)
    assert info.value.line is not None


def test_flags_build_the_same_model(tmp_path: Path) -> None:
    (tmp_path / "add.py").write_text(KERNEL)
    project = project_from_flags(tmp_path / "add.py", entry="add", shapes='{"x": [8, 4], "y": [8, 4]}',
                                 dtypes='{"x": "bfloat16", "y": "bfloat16"}', reference="x + y", args='{"alpha": 2}')
    (spec,) = project.kernels
    assert spec.shapes() == {"x": [8, 4], "y": [8, 4]}
    assert spec.dtypes == [{"x": "bfloat16", "y": "bfloat16"}] and spec.args == {"alpha": 2}
    single = project_from_flags(tmp_path / "add.py", entry="add", shapes='{"x": [8], "y": [8]}', dtypes="fp16")
    assert single.kernels[0].dtypes == [{"x": "float16", "y": "float16"}]


@pytest.mark.parametrize(("flags", "message"), [
    ({"entry": "add", "shapes": "{x: [1]}"}, "--shapes: not valid JSON"),
    ({"entry": "add", "shapes": "[1, 2]"}, "expected a JSON dict"),
    ({"entry": None, "shapes": '{"x": [1]}'}, "--entry is required"),
    ({"entry": "add", "shapes": None}, "--shapes is required"),
    ({"entry": "add", "shapes": '{"x": [1]}', "dtypes": '{"x": "float99"}'}, "unknown dtype"),
])
def test_bad_flags(tmp_path: Path, flags: dict, message: str) -> None:
    (tmp_path / "add.py").write_text(KERNEL)
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        project_from_flags(tmp_path / "add.py", **flags)


def test_kernel_flags_on_a_project_are_refused(tmp_path: Path) -> None:
    path = _project(tmp_path, GOOD)
    with pytest.raises(UserError, match="--reference apply to a kernel .py file"):
        resolve_target(path, entry=None, shapes=None, dtypes=None, reference="x * 3", args=None)


def test_unknown_entry_is_bad_input_before_anything_runs(tmp_path: Path) -> None:
    path = _project(tmp_path, GOOD.replace('entry = "add"', 'entry = "nope"'))
    with pytest.raises(UserError, match=r"\[kernel\[0\].entry\] 'nope' is not defined at module level in add.py"):
        load_project(path)
    (tmp_path / "add.py").write_text("from helpers import *\n")  # may define anything: left to the run
    assert load_project(path).kernels[0].entry == "nope"


@pytest.mark.parametrize(("cut", "code", "expected"), [
    ("", 0, 0), ("", 3, 3),  # no capture cut: the phase's own code
    ("the capture budget of 15 s was spent", 0, 1), ("the capture budget of 15 s was spent", 3, 3),
    ("no progress for 300 s", 130, 130),  # an interrupted run stays interrupted
])
def test_a_cut_capture_is_never_a_pass_for_validate_or_bench(cut: str, code: int, expected: int,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from tileiropt.capture.targets import PreparedTarget
    from tileiropt.check.device import Device
    from tileiropt.check.machine import Machine
    from tileiropt.engine.executors import Executor
    from tileiropt.errors import ExitCode
    from tileiropt.project.model import CaptureRequest, Project

    project = Project(file=None, root=Path("."), artifacts=Path("."), kernels=[],
                      capture=CaptureRequest(files=[], command=["pytest"], cut=cut))
    target = PreparedTarget(project, Machine(Device(), ["no GPU"]), Executor())
    assert target.exit_code(ExitCode(code)) == expected
    assert (f"cut: {cut}" in capsys.readouterr().err) == bool(cut)


def test_a_project_s_capture_command_is_checked_where_a_run_starts_it_not_where_records_are_read(
        tmp_path: Path) -> None:
    """`report` reads a project whose program this machine lacks; `run` refuses a command that cannot start,
    naming the key; python's options that take a value are not its script."""
    from tileiropt.project.spec import check_command
    from tileiropt.run.command import check_capture

    path = _project(tmp_path, "[project]\ncapture = 'pythn drive.py'\n" + GOOD)
    project = load_project(path)  # read as any command reads it: no refusal here
    with pytest.raises(UserError) as info:
        check_capture(project.capture.command, path, tmp_path)
    assert "[project.capture] the capture command cannot start: 'pythn' is not a program on PATH" in str(info.value)
    assert f"tileiropt.toml:{info.value.line}: " in str(info.value) and \
        path.read_text().splitlines()[info.value.line - 1] == "capture = 'pythn drive.py'"
    (tmp_path / "drive.py").write_text("")
    for command in (["python", "-W", "ignore", "drive.py"], ["python", "-X", "dev", "drive.py"],
                    ["python", "-m", "pytest", "-q"]):
        check_command(command, tmp_path)
    with pytest.raises(UserError, match="its script is not there"):
        check_command(["python", "-W", "ignore", "drivr.py"], tmp_path)
    with pytest.raises(UserError) as info:
        check_command(["FOO=1", "python", "drive.py"], tmp_path)
    assert "env FOO=1 python" in (info.value.hint or "")


def test_a_function_reference_is_found_where_a_package_kernel_s_worker_imports_from(tmp_path: Path) -> None:
    package = tmp_path / "src" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(KERNEL)
    (package / "ref.py").write_text("def add_ref(x, y):\n    return x + y\n")
    project = GOOD.replace('path = "add.py"', 'path = "src/mypkg/ops.py"').replace('reference = "x + y"',
                                                                                  'reference = "mypkg.ref:add_ref"')
    (tmp_path / "tileiropt.toml").write_text(project)
    assert load_project(tmp_path / "tileiropt.toml").kernels[0].reference == "mypkg.ref:add_ref"
