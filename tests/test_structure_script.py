"""benchmarks/structure.py on a fixture package: every figure, exactly, and a one-line error on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from shared import ROOT, TEST_FIXTURES

SCRIPT = ROOT / "benchmarks" / "structure.py"
DEMO = TEST_FIXTURES / "structure" / "demo"



def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


def test_the_figures_of_the_fixture_package() -> None:
    done = run(str(DEMO), "--long", "12", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "package": "demo",
        # the block of code and the f-string template; not prose, bare calls, nor "\n"-escaped pieces
        "code_in_strings": [{"where": "demo.e:5", "lines": 2}, {"where": "demo.e:12", "lines": 3}],
        "code_in_strings_lines": 5,
        # the package's imports inside functions (relative too), not the standard library's
        "deferred_imports": 3,
        "deferred_by_module": {"demo.b": 1, "demo.c": 1, "demo.sub.f": 1},
        "cycles": [["demo.c", "demo.d"]],  # load-time imports, one inside `try`; not TYPE_CHECKING's
        "cycles_with_deferred": [["demo.a", "demo.b"], ["demo.c", "demo.d"]],
        "long_bound": 12,
        "long_modules": {"demo.e": 29, "demo.b": 13},
        "lines_per_folder": {".": 64, "sub": 20},
        "root_modules": ["a", "b", "c", "d", "e"],
        "string_key_lookups": {},  # the fixture reads no record by string keys
        "mutual_packages": [[".", "sub"]],  # c imports sub.g (deferred), sub.f imports e
        "any_parameters": 2,  # `value: Any` and `*rest: Any`; not `named: int`, not the return
        "any_by_folder": {"sub": 2},
    }


def test_the_text_output_lists_each_figure() -> None:
    done = run(str(DEMO))
    assert done.returncode == 0, done.stderr
    assert "code in string literals: 5 lines in 2 strings" in done.stdout
    assert "demo.a <-> demo.b" in done.stdout
    assert "modules over 600 lines: 0" in done.stdout


def test_a_folder_that_is_not_a_package_is_a_one_line_error(tmp_path: Path) -> None:
    done = run(str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "not a package folder" in done.stderr


def test_string_key_lookups_and_root_modules() -> None:
    """`launch["grid"]` and `launch.get("num_warps", 4)` count; `names[0]` and `.get(1, ...)` do not."""
    done = run(str(TEST_FIXTURES / "structure" / "records"), "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["string_key_lookups"] == {".": 2} and figures["root_modules"] == []


def test_the_entry_point_is_a_node_of_its_own(tmp_path: Path) -> None:
    """`__main__` runs the command line, which reads the root's modules: no pair; a root module that imports the
    command line back still makes one."""
    package = tmp_path / "pkg"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "__main__.py").write_text("from pkg.cli import main\n")
    (package / "cli" / "__init__.py").write_text("from pkg.errors import *\n\ndef main():\n    pass\n")
    done = run(str(package), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mutual_packages"] == []
    (package / "errors.py").write_text("def f():\n    from pkg.cli import main\n")
    assert json.loads(run(str(package), "--json").stdout)["mutual_packages"] == [[".", "cli"]]
