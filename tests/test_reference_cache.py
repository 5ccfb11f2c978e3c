"""The original's output on a captured launch, saved once per run and device and loaded by later cases."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch

from tileiropt.project.launch import CapturedLaunch
from tileiropt.validate import reference_cache

CPU = {"name": "cpu", "capability": None}
LAUNCH = CapturedLaunch.from_json({"kernel": "k", "file": "k.py", "args": [
    {"name": "x", "tensor": {"shape": [4], "dtype": "float32"}}], "grid": [1]})


def test_the_key_names_the_file_the_launch_the_seed_and_the_device(tmp_path: Path) -> None:
    original = tmp_path / "k.py"
    original.write_text("x = 1\n")
    key = reference_cache.cache_key(str(original), LAUNCH, 0, CPU, "interpreter")
    assert key == reference_cache.cache_key(str(original), CapturedLaunch.from_json(LAUNCH.to_json()), 0, dict(CPU),
                                                 "interpreter")
    assert key != reference_cache.cache_key(str(original), LAUNCH, 1, CPU, "interpreter")
    assert key != reference_cache.cache_key(str(original), replace(LAUNCH, grid=(2,)), 0, CPU, "interpreter")
    assert key != reference_cache.cache_key(str(original), LAUNCH, 0, {"name": "NVIDIA H100", "capability": "9.0"},
                                          "interpreter")
    gpu = {"name": "NVIDIA B200", "capability": "10.0"}  # PTX (and the TileIR code forced on) vs the TileIR backend
    assert reference_cache.cache_key(str(original), LAUNCH, 0, gpu, "cuda") != \
        reference_cache.cache_key(str(original), LAUNCH, 0, gpu, "tileir")
    original.write_text("x = 2\n")  # the original changed: its outputs are another's
    assert key != reference_cache.cache_key(str(original), LAUNCH, 0, CPU, "interpreter")
    assert reference_cache.cache_key(str(original), LAUNCH.with_atomics(True), 0, gpu, "cuda") is None
    assert reference_cache.cache_key(str(original), LAUNCH.with_atomics(True), 0, CPU, "interpreter") is not None
    assert reference_cache.cache_key(str(tmp_path / "missing.py"), LAUNCH, 0, CPU, "interpreter") is None


def test_a_saved_reference_loads_back_and_a_damaged_or_absent_one_is_computed_again(tmp_path: Path) -> None:
    expected = (torch.arange(4.0), {"mean": torch.ones(2)})
    used = {"x": torch.zeros(3)}
    assert reference_cache.load(str(tmp_path), "k1", "cpu") is None
    reference_cache.save(str(tmp_path), "k1", expected, used)
    loaded, inputs = reference_cache.load(str(tmp_path), "k1", "cpu")
    assert torch.equal(loaded[0], expected[0]) and torch.equal(loaded[1]["mean"], expected[1]["mean"])
    assert torch.equal(inputs["x"], used["x"])
    assert not list(tmp_path.glob("*.part"))  # written whole, then renamed
    (tmp_path / "k2.pt").write_bytes(b"half a file")
    assert reference_cache.load(str(tmp_path), "k2", "cpu") is None
    reference_cache.save(str(tmp_path / "gone"), "k3", expected, used)  # the run's folder removed: no error
    assert reference_cache.load(None, "k1", "cpu") is None and reference_cache.load(str(tmp_path), None, "cpu") is None
