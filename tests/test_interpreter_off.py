"""The IR check gives the same findings whatever TRITON_INTERPRET the shell has: Triton decorates its own library
as interpreted functions when it is imported with the variable on, and lowering a kernel that calls one runs the
interpreter inside the code generator (it fails, and patches `triton.language` for the next kernels). So the IR
check lowers in worker processes that drop the variable first; the lint cache's key leaves the variable out, since
no result depends on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tileiropt.classify.classify import IROptions, classify_source
from tileiropt.classify.ir import interpreter_off
from tileiropt.classify.lint_cache import LintCache
from tileiropt.classify.parallel import Workers
from tileiropt.releases import newest

from shared import ROOT, TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "interpret"
FILES = [FIXTURES / "library_calls.py", FIXTURES / "hinted_copy.py", FIXTURES / "reads_interpret.py"]


def _classify(cache: Path, interpret: str | None) -> dict:
    """`tileiropt classify FILES --json` in a process of its own, with TRITON_INTERPRET as given (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TILEIROPT_NO_LINT_CACHE")}
    env.update({"TILEIROPT_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)})
    if interpret is not None:
        env["TRITON_INTERPRET"] = interpret
    done = subprocess.run([sys.executable, "-m", "tileiropt", "classify", *map(str, FILES), "--json"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode in (0, 1), done.stderr
    data = json.loads(done.stdout)
    for kernel in data["kernels"]:
        (kernel["ir"] or {}).pop("seconds", None)  # the time each lowering took
    return data


def _entries(cache: Path) -> set[str]:
    return {p.name for p in (cache / "classify").rglob("*.json")}


def test_the_ir_check_finds_the_same_under_every_triton_interpret(tmp_path: Path) -> None:
    unset = _classify(tmp_path / "unset", None)
    assert {k["kernel"]: k["ir"]["status"] for k in unset["kernels"]} == \
        {"scaled_sigmoid": "pass", "hinted_copy": "pass", "doubled": "pass"}
    assert all(f["via"] == "ir" for k in unset["kernels"][:2] for f in k["findings"] if f["code"] == "TIR006")
    for value in ("1", "true", "0"):
        assert _classify(tmp_path / f"interpret-{value}", value) == unset, value


def test_the_cache_serves_results_made_under_the_interpreter_to_a_shell_without_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    made_under_interpret = _classify(cache, "1")
    entries = _entries(cache)
    assert len(entries) == len(FILES)
    assert _classify(cache, "0") == made_under_interpret == _classify(tmp_path / "fresh", "0")
    assert _entries(cache) == entries  # the same keys: every file was a hit, none classified again


def test_the_key_leaves_triton_interpret_out_even_for_a_file_that_reads_it(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "reads_interpret.py"
    cache = LintCache(tmp_path / "cache", {})
    keys = set()
    for value in ("1", "0", None):
        if value is None:
            monkeypatch.delenv("TRITON_INTERPRET", raising=False)
        else:
            monkeypatch.setenv("TRITON_INTERPRET", value)
        keys.add(cache.key(path, path.read_bytes(), ["TIR006"]))
    assert len(keys) == 1


@pytest.mark.parametrize(("value", "on"), [("1", True), ("true", True), ("ON", True), ("yes", True), ("y", True),
                                           ("0", False), ("off", False), ("", False), ("2", False), (None, False)])
def test_the_variable_is_read_as_triton_reads_it(value: str | None, on: bool) -> None:
    assert interpreter_off.on({} if value is None else {"TRITON_INTERPRET": value}) is on


def test_with_the_variable_on_the_files_go_to_workers_that_drop_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert Workers(newest(), ir=True, dtypes=None, jobs=1).isolated
    assert not Workers(newest(), ir=False, dtypes=None, jobs=1).isolated  # no lowering: any process will do
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not Workers(newest(), ir=True, dtypes=None, jobs=16).isolated


def test_a_process_with_the_variable_on_never_lowers_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    source = (FIXTURES / "library_calls.py").read_text()
    [record] = classify_source(source, str(FIXTURES / "library_calls.py"), ir=IROptions()).kernels
    assert record.ir is not None and record.ir["status"] == "not-run"
    assert "TRITON_INTERPRET" in record.ir["reason"] and "started without it" in record.ir["reason"]
    assert {f.code: f.via for f in record.findings}["TIR006"] == "syntax"  # the syntax findings stand
