"""Library mode: `tileiropt run DIR -- COMMAND` on a folder of kernel files without a project file, and the same
from a project file (`library = "..."`) or `init DIR -- COMMAND`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.errors import ExitCode
from tileiropt.project.library import defines_kernel, library_files, mirrored_output

from shared import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "library"
COMMAND = ["--", "pytest", "-q", "tests/check_mylib.py"]


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "work"
    shutil.copytree(FIXTURE, target)
    monkeypatch.chdir(target)
    return target


def _sources(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.py"))}


def test_the_kernel_files_of_a_folder(library: Path) -> None:
    found = library_files(library / "mylib")
    assert [p.relative_to(library / "mylib").as_posix() for p in found.kernel_files] == [
        "ops/add.py", "ops/scale.py", "ops/unused.py"]
    assert found.without_kernels == 3  # the two __init__.py and utils.py
    only = library_files(library / "mylib", include=["ops/s*.py"])
    assert [p.name for p in only.kernel_files] == ["scale.py"]
    assert [p.name for p in library_files(library / "mylib", exclude=["unused.py"]).kernel_files] == [
        "add.py", "scale.py"]
    (library / "mylib" / "ops" / "broken.py").write_text("import triton\n@triton.jit\ndef k(:\n")
    assert {p.name: why for p, why in library_files(library / "mylib").unreadable.items()} == {
        "broken.py": "line 3: invalid syntax"}
    assert mirrored_output(library / "mylib" / "ops" / "add.py", library / "mylib", library / ".t") == \
        library / ".t" / "optimized" / "mylib" / "ops" / "add_tileir.py"


@pytest.mark.parametrize(("source", "expected"), [
    ("import triton\n@triton.jit\ndef k(x): pass\n", True),
    ("import triton\ntry:\n    import triton\n    @triton.jit\n    def k(x): pass\nexcept ImportError:\n"
     "    pass\n", True),
    ("HAS = True\nif HAS:\n    if HAS:\n        @triton.autotune(configs=[], key=[])\n        @triton.jit\n"
     "        def k(x): pass\n", True),
    ("from triton import jit\nwith open('x'):\n    @jit\n    def k(x): pass\n", True),
    ("import triton\ndef make():\n    @triton.jit\n    def k(x): pass\n    return k\n", False),
    ("import triton\nclass C:\n    @triton.jit\n    def k(x): pass\n", False),
    ("import functools\n@functools.lru_cache\ndef f(): pass\n", False),
])
def test_what_defines_a_kernel(source: str, expected: bool) -> None:
    import ast

    assert defines_kernel(ast.parse(source)) is expected


def test_only_the_imports_a_kernel_decorator_names_are_followed_into_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`@tr.jit` with `tr` from a module of the package: that module is read; the file's other imports from its
    package are not (following all of them read hundreds of torch's modules for a file inside torch)."""
    from tileiropt.classify import reexports

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_triton.py").write_text("import triton as tr\n")
    (package / "heavy.py").write_text("import triton\nthing = 1\n")
    (package / "ops.py").write_text("from ._triton import tr\nfrom .heavy import thing\n\n"
                                    "@tr.jit\ndef k(x): pass\n")
    (package / "plain.py").write_text("from .heavy import thing\nimport triton\n# triton.jit below in text only\n")
    read: list[str] = []
    original = reexports.module_triton_names
    monkeypatch.setattr(reexports, "module_triton_names", lambda path, *a: read.append(Path(path).name) or
                        original(path, *a))
    found = library_files(package)
    assert [p.name for p in found.kernel_files] == ["ops.py"] and found.without_kernels == 4
    assert read == ["_triton.py"]  # heavy.py is never read; plain.py (no decorator line) is never parsed


MADE_BY_A_CALL = ("def build():\n    import triton\n    import triton.language as tl\n\n    @triton.jit\n"
                  "    def made_kernel(x_ptr):\n        tl.store(x_ptr, tl.load(x_ptr) + 1)\n\n"
                  "    return made_kernel\n")


def test_run_on_a_library_folder_captures_every_kernel_file_and_never_writes_into_it(library: Path) -> None:
    (library / "mylib" / "ops" / "made.py").write_text(MADE_BY_A_CALL)  # torchao's factories: said, not covered
    assert [p.name for p in library_files(library / "mylib").made_by_call] == ["made.py"]
    before = _sources(library / "mylib")
    result = CliRunner().invoke(app, ["run", "mylib", "--json", *COMMAND])
    assert result.exit_code == ExitCode.OK, result.output
    assert _sources(library / "mylib") == before
    optimized = sorted(p.relative_to(library / ".tileiropt").as_posix()
                       for p in (library / ".tileiropt" / "optimized").rglob("*.py"))
    assert optimized == ["optimized/mylib/_tileir.py", "optimized/mylib/ops/add_tileir.py",
                         "optimized/mylib/ops/scale_tileir.py"]  # the library's one helper module, its files
    for name in ("add", "scale"):  # each imports the gate from it instead of holding a copy
        text = (library / ".tileiropt" / "optimized" / "mylib" / "ops" / f"{name}_tileir.py").read_text()
        assert "\nfrom .._tileir import is_tileir\n" in text and "def is_tileir" not in text
    records = json.loads((library / ".tileiropt" / "validate.json").read_text())["records"]
    assert {r["kernel"] for r in records} == {"add._kernel", "scale._kernel"}  # one name, two files: told apart
    assert all(r["status"] in ("pass", "not-run") for r in records)
    assert {r["kernel"] for r in records if r["status"] == "pass" and r["variant"] == "optimized"} == {
        "add._kernel", "scale._kernel"}
    classified = json.loads((library / ".tileiropt" / "classify.json").read_text())
    assert sorted(k["kernel"] for k in classified["kernels"]) == ["_kernel", "_kernel", "negate_kernel"]
    report = (library / ".tileiropt" / "report.md").read_text()
    first_screen = report.split("## Summary")[0]
    assert first_screen.startswith("# TileIR optimization report\n\n**Library `mylib/`**: 3 kernel(s) in 3 file(s); "
                                   "the command launched 2 of them in 2 distinct launch(es) (67% of the library); 1 "
                                   "never launched.")
    assert "By class: elementwise 3." in first_screen
    assert "Not covered: 1 file(s) define kernels only inside functions (made by a call, which a capture cannot " \
           "replay from the module): `ops/made.py`." in first_screen
    assert "`ops/unused.py`" not in first_screen.split("Never launched")[0]  # no row: counted per folder, folded
    assert "Never launched by the command: 1 kernel(s), 1 in 1 file(s) none of whose kernels was launched; by " \
           "folder: `ops/` 1." in first_screen
    assert "- `ops/`: `unused.py` `negate_kernel`" in first_screen
    # a column per verdict seen, counting launches
    assert "| file | kernels | launched | ready to try on TileIR (launches) | never launched |" in first_screen
    assert "| `ops/add.py` | 1 | 1 | 1 | 0 |" in first_screen
    assert "[`report-kernels.md`](report-kernels.md)" in report  # each launch's sections: in a second file
    assert "## TileIR Optimization" not in report
    kernels = (library / ".tileiropt" / "report-kernels.md").read_text()
    assert "<details><summary>ops/add.py: 1 captured launch(es)</summary>" in kernels
    assert "## TileIR Optimization: add._kernel" in kernels
    # the file no launch needs was classified beside the later phases; classify.json holds every file, and an
    # unchanged re-run reuses it whole
    classify = next(p for p in json.loads(result.stdout)["phases"] if p["phase"] == "classify")
    assert classify["detail"] == ("3 Triton kernel(s) in 3 file(s); 1 of the files, those no captured launch needs, "
                                  "classified beside the later phases") + classify["detail"].split("phases", 1)[1]
    assert sorted(Path(f["file"]).name for f in classified["files"]) == ["add.py", "scale.py", "unused.py"]
    again = CliRunner().invoke(app, ["run", "mylib", "--json", *COMMAND])
    classify = next(p for p in json.loads(again.stdout)["phases"] if p["phase"] == "classify")
    assert classify["detail"].endswith("(reused: the files, the release and the tool unchanged)")


def test_a_library_needs_a_command_and_a_kernel(library: Path) -> None:
    no_command = CliRunner().invoke(app, ["run", "mylib"])
    assert no_command.exit_code == ExitCode.BAD_INPUT
    assert "project file not found (fix: run `tileiropt init` to write one, pass a kernel file, or a library folder " \
           "and the command that exercises it: tileiropt run src/mypkg -- pytest tests/)" in \
           " ".join(no_command.output.split())
    (library / "empty").mkdir()
    (library / "empty" / "helpers.py").write_text("def f():\n    return 1\n")
    no_kernel = CliRunner().invoke(app, ["run", "empty", *COMMAND])
    assert no_kernel.exit_code == ExitCode.BAD_INPUT
    assert "no Python file under the folder defines a Triton kernel" in " ".join(no_kernel.output.split())
    globs_on_a_file = CliRunner().invoke(app, ["run", "mylib/ops/add.py", "--include", "*.py"])
    assert globs_on_a_file.exit_code == ExitCode.BAD_INPUT
    assert not (library / ".tileiropt").exists()  # nothing ran


def test_files_tileiropt_wrote_are_never_the_library_s(library: Path) -> None:
    ops = library / "mylib" / "ops"
    (ops / "add_tileir.py").write_text("# tileiropt gate: ...\n" + (ops / "add.py").read_text())
    (ops / "own_tileir.py").write_text((ops / "add.py").read_text())  # the user's own file of that name: kept
    found = library_files(library / "mylib")
    assert [p.name for p in found.kernel_files] == ["add.py", "own_tileir.py", "scale.py", "unused.py"]
    assert [p.name for p in found.written_by_tool] == ["add_tileir.py"]


def test_a_command_that_cannot_start_ends_before_any_phase(library: Path) -> None:
    (library / ".tileiropt").mkdir()
    (library / ".tileiropt" / "report.md").write_text("the last good report\n")
    typo = CliRunner().invoke(app, ["run", "mylib", "--", "python", "tests/chek_mylib.py"])
    assert typo.exit_code == ExitCode.BAD_INPUT
    assert "tests/chek_mylib.py: the command after `--` cannot start: its script is not there" in \
        " ".join(typo.output.split())
    missing = CliRunner().invoke(app, ["run", "mylib", "--", "pytset", "-q"])
    assert missing.exit_code == ExitCode.BAD_INPUT
    assert "'pytset' is not a program on PATH" in " ".join(missing.output.split())
    assert (library / ".tileiropt" / "report.md").read_text() == "the last good report\n"  # as it was
    assert sorted(p.name for p in (library / ".tileiropt").iterdir()) == ["report.md"]  # no phase ran


def test_init_writes_a_library_project_that_run_reads(library: Path) -> None:
    result = CliRunner().invoke(app, ["init", "mylib", "--exclude", "unused.py", *COMMAND])
    assert result.exit_code == ExitCode.OK, result.output
    text = (library / "tileiropt.toml").read_text()
    assert '[project]\ncapture = "pytest -q tests/check_mylib.py"\nlibrary = "mylib"\nexclude = ["unused.py"]\n' \
        in text
    from tileiropt.project.spec import load_project

    project = load_project(library / "tileiropt.toml")
    assert project.capture is not None and project.capture.library == (library / "mylib").resolve()
    assert [p.name for p in project.capture.files] == ["add.py", "scale.py"]


@pytest.mark.parametrize(("table", "message"), [
    ('library = "mylib"', "[project.library] needs `capture`"),
    ('capture = "pytest"\nlibrary = "nowhere"', "[project.library] nowhere: folder not found"),
    ('capture = "pytest"\nlibrary = 3', "[project.library] must be a folder path, got 3"),
    ('capture = "pytest"\nlibrary = "mylib"\ninclude = "ops"', "[project.include] must be a list of globs"),
    ('capture = "pytest"\ninclude = ["x"]', "[project.include] needs `library`"),
    ('capture = "pytest"\nlibrary = "mylib"\ninclude = ["nothing*.py"]', "no Python file defines a Triton kernel"),
    ('library = "mylib"\ninclude = ["x"]', "[project.library] needs `capture`"),
])
def test_library_keys_of_a_project_file(library: Path, table: str, message: str) -> None:
    from tileiropt.errors import UserError
    from tileiropt.project.spec import load_project

    (library / "tileiropt.toml").write_text(f"[project]\n{table}\n")
    with pytest.raises(UserError) as caught:
        load_project(library / "tileiropt.toml")
    assert message in str(caught.value)


def test_a_library_s_files_share_one_helper_module_which_in_place_copies_beside_them(library: Path,
                                                                                      tmp_path: Path) -> None:
    from tileiropt.apply.apply import apply_library, copy_helper
    from tileiropt.errors import UserError

    results, helper = apply_library(library / "mylib", tmp_path)
    assert helper == tmp_path / "optimized" / "mylib" / "_tileir.py"
    assert "def is_tileir():" in helper.read_text() and "_tileiropt_tma_dispatch" in helper.read_text()
    changed = [r for r in results if r.changed]
    assert changed and all("from .._tileir import is_tileir" in r.new_source for r in changed)
    user_file = tmp_path / "user" / "mylib" / "ops" / "add.py"  # as --in-place leaves it: the optimized text
    user_file.parent.mkdir(parents=True)
    user_file.write_text(Path(changed[0].output).read_text())
    assert copy_helper(Path(changed[0].output), user_file) == tmp_path / "user" / "mylib" / "_tileir.py"
    own = tmp_path / "user" / "mylib" / "_tileir.py"
    own.write_text("USER = 1\n")  # a module of the user's own by that name is never replaced
    with pytest.raises(UserError):
        copy_helper(Path(changed[0].output), user_file)
    assert own.read_text() == "USER = 1\n"


def test_the_capture_names_kernels_never_launched_with_their_files() -> None:
    from tileiropt.capture.capture import CaptureResult

    few = CaptureResult(command=[], exit_code=0, ended="", seconds=1.0, launches=[],
                        expected=["_kernel@/l/ops/add.py", "_kernel@/l/ops/scale.py", "k@/l/ops/x.py"],
                        counts={"k@/l/ops/x.py": 3})
    assert few.never_launched_text() == "add.py:_kernel, scale.py:_kernel"  # one name in two files: told apart
    many = CaptureResult(command=[], exit_code=0, ended="", seconds=1.0, launches=[],
                         expected=[f"k{i}@/l/ops/f{i % 4}.py" for i in range(20)], counts={})
    assert many.never_launched_text() == "20 kernel(s) in 4 file(s) (listed in the report)"
