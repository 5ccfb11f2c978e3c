"""Shared test fixtures: the harness's TileIR surface (an optimized file's TileIR code turned on under standard
Triton) applied and undone around one test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture
def tileir_code_forced(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`force_tileir_code()` in this process for one test: ENABLE_TILE=1, the stand-in `triton.backends.tileir`,
    a `triton.Config` that drops the TileIR hints; all undone after the test."""
    import triton

    from tileiropt.harness.tileir_surface import BACKEND_MODULE, force_tileir_code

    monkeypatch.setattr(triton.Config, "__init__", triton.Config.__init__)  # restored after the test
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv("ENABLE_TILE", "0")
    force_tileir_code()
    yield
    sys.modules.pop(BACKEND_MODULE, None)


def gate_of(module: ModuleType) -> bool:
    """What a transformed module's gate answers now (`is_tileir()`, or its other name)."""
    from tileiropt.harness.gate import GATE_NAME, OTHER_NAME

    return (getattr(module, GATE_NAME, None) or getattr(module, OTHER_NAME))()


def _cache_typer_commands() -> None:
    """typer's test runner builds the click command of the app again on every `invoke` (about 50 ms for tileiropt's
    nine commands, most of a report fuzz's time); the command is the same each time, so it is built once per app."""
    import functools

    import typer.testing

    build = getattr(typer.testing, "_get_command", None)
    if build is not None and not hasattr(build, "cache_info"):
        typer.testing._get_command = functools.lru_cache(maxsize=None)(build)


_cache_typer_commands()


@pytest.fixture(autouse=True, scope="session")
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tool's cache folder (the lint cache among it) of this test session, never the user's."""
    if os.environ.get("TILEIROPT_CACHE_DIR"):
        yield
        return
    os.environ["TILEIROPT_CACHE_DIR"] = str(tmp_path_factory.mktemp("tileiropt_cache"))
    try:
        yield
    finally:
        os.environ.pop("TILEIROPT_CACHE_DIR", None)
