"""Where a worker's bytecode goes: beside the installed sources when they carry it, else the tool's cache."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tileiropt.engine import workers


def test_installed_bytecode_leaves_the_environment_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "installed_bytecode", lambda: True)
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    workers.keep_bytecode(env)
    assert env == {"PYTHONDONTWRITEBYTECODE": "1"}  # no prefix: Python reads the installed bytecode


def test_no_installed_bytecode_keeps_it_in_the_tools_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(workers, "installed_bytecode", lambda: False)
    monkeypatch.setenv("TILEIROPT_CACHE_DIR", str(tmp_path))
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    workers.keep_bytecode(env)
    assert env == {"PYTHONPYCACHEPREFIX": str(tmp_path / "bytecode")}
    own = {"PYTHONPYCACHEPREFIX": "/elsewhere"}  # the user's own prefix is kept
    workers.keep_bytecode(own)
    assert own == {"PYTHONPYCACHEPREFIX": "/elsewhere"}


def test_installed_bytecode_reads_torchs_own_pycache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "bytecode_sample_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    workers.installed_bytecode.cache_clear()
    try:
        assert not workers.installed_bytecode("bytecode_sample_package")
        (package / "__pycache__").mkdir()
        (package / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc").write_bytes(b"")
        workers.installed_bytecode.cache_clear()
        assert workers.installed_bytecode("bytecode_sample_package")
    finally:
        workers.installed_bytecode.cache_clear()
