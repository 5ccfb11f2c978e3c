"""The TileIR gate: ENABLE_TILE x a TileIR backend importable x the harness's surface forced on.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

import importlib.machinery
import itertools
import sys
import types
from typing import Any

import pytest

from tileiropt.harness.gate import gate_source

# --------------------------------------------------------------------------- the gate


def _tileir_backend(monkeypatch: pytest.MonkeyPatch, present: bool) -> None:
    """nvtriton's TileIR backend module importable (simulated) or not."""
    if present:
        fake = types.ModuleType("triton.backends.tileir")
        fake.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir", None)
        monkeypatch.setitem(sys.modules, "triton.backends.tileir", fake)
    else:
        monkeypatch.delitem(sys.modules, "triton.backends.tileir", raising=False)


def _gate(monkeypatch: pytest.MonkeyPatch, enable_tile: str | None, backend: bool) -> dict:
    if enable_tile is None:
        monkeypatch.delenv("ENABLE_TILE", raising=False)
    else:
        monkeypatch.setenv("ENABLE_TILE", enable_tile)
    _tileir_backend(monkeypatch, backend)
    namespace: dict[str, Any] = {}
    exec(compile(gate_source(), "<gate>", "exec"), namespace)  # the gate exactly as apply writes it
    return namespace


@pytest.mark.parametrize(("enable_tile", "backend", "forced"),
                         list(itertools.product([None, "0", "1", "true", " 1"], [False, True], [False, True])))
def test_gate_over_every_combination(monkeypatch: pytest.MonkeyPatch, enable_tile: str | None, backend: bool,
                                     forced: bool) -> None:
    import triton

    from tileiropt.harness.tileir_surface import force_tileir_code, is_stand_in, tileir_code_on

    gate = _gate(monkeypatch, enable_tile, backend)
    tileir_backend = enable_tile == "1" and backend  # both halves: the variable and the backend installed
    assert gate["is_tileir"]() is tileir_backend
    assert tileir_code_on() is tileir_backend  # the harness reads the file's gate the same way
    assert is_stand_in() is False
    if forced:  # the harness in a worker of a forced backend: the TileIR code on, on the backend Triton chose
        monkeypatch.setattr(triton.Config, "__init__", triton.Config.__init__)
        monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
        force_tileir_code()
        assert gate["is_tileir"]() is True and tileir_code_on() is True
        assert is_stand_in() is (not backend)  # nvtriton's module, where it is installed, is never replaced
        config = triton.Config({"BLOCK": 64}, occupancy=4, num_ctas=2, num_stages=3)
        assert config.num_ctas == 1 and config.tileir_dropped == {"occupancy": 4, "num_ctas": 2}
        if not backend:
            sys.modules.pop("triton.backends.tileir", None)


@pytest.mark.parametrize(("hints", "occupancy", "tileir"), [
    ({"occupancy": 2}, None, True),  # given a hint under the harness's surface
    ({}, None, False), (None, None, False),  # the user's own configs
    (None, 1, True), (None, 0, True),  # nvtriton's Config holding an occupancy (even 0 is set)
])
def test_a_config_is_a_tileir_config_when_it_carries_a_hint(hints: dict | None, occupancy: int | None,
                                                             tileir: bool) -> None:
    from tileiropt.harness.tileir_surface import tileir_configs

    config = types.SimpleNamespace(tileir_hints=hints, occupancy=occupancy)
    assert tileir_configs([config]) == ([config] if tileir else [])


def test_the_harness_reads_a_broken_or_marked_backend_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.harness import tileir_surface

    def broken(name: str) -> None:
        raise ValueError("triton.backends.tileir.__spec__ is None")

    monkeypatch.setenv("ENABLE_TILE", "1")
    monkeypatch.delitem(sys.modules, "triton.backends.tileir", raising=False)
    monkeypatch.setattr(tileir_surface.importlib.util, "find_spec", broken)
    assert tileir_surface.tileir_code_on() is False and tileir_surface.is_stand_in() is False
    marked = types.ModuleType("triton.backends.tileir")
    setattr(marked, tileir_surface.STAND_IN_MARK, "stand-in")
    monkeypatch.setitem(sys.modules, "triton.backends.tileir", marked)
    assert tileir_surface.is_stand_in() is True
    monkeypatch.setitem(sys.modules, "triton.backends.tileir", types.ModuleType("triton.backends.tileir"))
    assert tileir_surface.is_stand_in() is False  # nvtriton's own


