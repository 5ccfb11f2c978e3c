"""classify remembers a file's results by what they depend on (its bytes, its local imports, the rules, the release,
the tool), and spreads many files over processes with the same results as one process."""

from __future__ import annotations

import concurrent.futures
import json
import shutil
from pathlib import Path

import pytest

from tileiropt.classify import classify as classify_module
from tileiropt.classify import parallel as parallel_module
from tileiropt.classify.classify import classify_files, classify_paths, collect_files
from tileiropt.classify.lint_cache import LintCache, file_result, local_imports
from tileiropt.classify.rules import ALL_RULES

from shared import EXAMPLES, package


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TILEIROPT_CACHE_DIR", str(folder))
    monkeypatch.delenv("TILEIROPT_NO_LINT_CACHE", raising=False)
    return folder


def _json(results) -> list[dict]:
    """The results as JSON, without the IR check's timings (they are the time each run took)."""
    data = json.loads(json.dumps([r.to_json() for r in results]))
    for result in data:
        for kernel in result["kernels"]:
            if kernel["ir"]:
                kernel["ir"].pop("seconds", None)
    return data


def test_a_second_classify_reads_every_unchanged_file_from_the_cache(cache_folder: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "kernels"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("*.toml", "__pycache__"))
    first = classify_paths([folder])
    assert len(list((cache_folder / "classify").rglob("*.json"))) == len(first)
    calls: list[Path] = []
    original = classify_module.classify_file
    monkeypatch.setattr(classify_module, "classify_file", lambda path, **kw: calls.append(path) or original(path, **kw))
    again = classify_paths([folder])
    assert calls == [] and _json(again) == _json(first)  # nothing classified again, the same results
    (folder / "softmax.py").write_text((folder / "softmax.py").read_text() + "\n# edited\n")
    third = classify_paths([folder])
    assert [p.name for p in calls] == ["softmax.py"] and _json(third) == _json(first)
    classify_paths([folder], select=["TIR001"])  # other rules: another key
    assert len(calls) == 1 + len(first)


def test_a_changed_local_module_a_file_imports_is_read_again(cache_folder: Path, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("import triton\n\n@triton.jit\ndef twice(x):\n    return x * 2\n")
    kernel = package / "ops.py"
    kernel.write_text("import triton\nfrom .helpers import twice\nfrom pkg import helpers\nimport torch\n")
    assert local_imports(kernel, kernel.read_bytes()) == [package / "helpers.py", package / "__init__.py"]
    cache = LintCache(cache_folder, {})
    before = cache.key(kernel, kernel.read_bytes(), ["TIR001"])
    (package / "helpers.py").write_text((package / "helpers.py").read_text() + "\n")
    assert cache.key(kernel, kernel.read_bytes(), ["TIR001"]) != before


def test_a_damaged_entry_is_a_miss_and_the_cache_can_be_turned_off(cache_folder: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = EXAMPLES / "softmax.py"
    (result,) = classify_paths([path])
    (entry,) = (cache_folder / "classify").rglob("*.json")
    assert _json([file_result(json.loads(entry.read_text()))]) == _json([result])
    entry.write_text("{not json")
    assert _json(classify_paths([path])) == _json([result])  # classified again, and stored again
    assert json.loads(entry.read_text())["file"] == str(path)
    monkeypatch.setenv("TILEIROPT_NO_LINT_CACHE", "1")
    shutil.rmtree(cache_folder)
    classify_paths([path])
    assert not cache_folder.exists()


def test_many_files_in_processes_give_what_one_process_gives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TILEIROPT_NO_LINT_CACHE", "1")
    monkeypatch.setattr(parallel_module, "PARALLEL_FILES", 2)
    monkeypatch.setattr(parallel_module, "FILES_PER_JOB", 1)
    monkeypatch.setattr(parallel_module, "FILES_PER_WORKER", 1)
    files = [p for p in collect_files([EXAMPLES]) if p.suffix == ".py"]
    rules = list(ALL_RULES)
    serial = classify_files(files, lambda _: rules, jobs=1)
    pools: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor",
                        lambda max_workers, **kw: pools.append(max_workers) or real(max_workers, **kw))
    spread = classify_files(files, lambda _: rules, jobs=2)
    assert pools == [2] and len(files) >= 8 and _json(spread) == _json(serial)


def test_a_module_imported_through_another_and_the_resolved_release_are_in_the_key(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import middle\n")
    (package / "b.py").write_text("from pkg.c import leaf\n")
    (package / "c.py").write_text("import triton\n")
    a = package / "a.py"
    assert local_imports(a, a.read_bytes()) == [package / "b.py", package / "c.py"]  # c through b
    cache = LintCache(tmp_path / "cache", {})
    before = cache.key(a, a.read_bytes(), ["TIR001"])
    (package / "c.py").write_text("import triton\n\n# changed\n")
    assert cache.key(a, a.read_bytes(), ["TIR001"]) != before
    from tileiropt.classify.classify import lint_context
    from tileiropt.releases import get_release

    assert lint_context(get_release("13.4"), True, None)["resolved"] != lint_context(get_release("13.5"), True,
                                                                                     None)["resolved"]


def test_the_environment_variables_a_helper_module_branches_on_are_in_the_key(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = package(tmp_path, op="import os\nFAST = os.environ.get('PKG_FAST', '0') == '1'\n",
                     ops="import triton\nfrom .op import FAST\n") / "ops.py"
    cache = LintCache(tmp_path / "cache", {})
    monkeypatch.delenv("PKG_FAST", raising=False)
    unset = cache.key(kernel, kernel.read_bytes(), ["TIR004"])
    monkeypatch.setenv("PKG_FAST", "1")
    assert cache.key(kernel, kernel.read_bytes(), ["TIR004"]) != unset
    monkeypatch.setenv("OTHER_VARIABLE", "1")  # a variable no module reads changes nothing
    fast = cache.key(kernel, kernel.read_bytes(), ["TIR004"])
    monkeypatch.delenv("OTHER_VARIABLE")
    assert cache.key(kernel, kernel.read_bytes(), ["TIR004"]) == fast
