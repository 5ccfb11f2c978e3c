"""In-place math rewrites: each rewritten call behind the gate's constexpr, never a copy of the kernel; with the
gate off the kernel lowers to the very TTIR of the original (Triton compiles only the branch a constexpr takes), and
with it on to the TileIR form."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tileiropt.apply.apply import apply_file
from tileiropt.classify.ir.lowering import Specialization, available, lower
from tileiropt.harness.autotuners import innermost

from shared import ROOT

KERNELS = {  # file of examples/: (kernel, its signature, its constexprs)
    "softmax.py": ("softmax_kernel", {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32",
                                      "out_row_stride": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr"},
                   {"BLOCK_SIZE": 1024}),
    "swiglu.py": ("swiglu_kernel", {"a_ptr": "*fp16", "b_ptr": "*fp16", "out_ptr": "*fp16", "n_elements": "i32",
                                    "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 1024}),
}


def _load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code(ttir: str) -> str:
    """The TTIR without its source locations (the optimized file's lines differ from the original's)."""
    lines = [re.sub(r"\s*loc\([^()]*(\([^()]*\))?[^()]*\)", "", line) for line in ttir.splitlines()
             if not line.startswith("#loc")]
    return "\n".join(line for line in lines if line.strip())


@pytest.mark.parametrize("file", sorted(KERNELS))
def test_a_rewrite_in_place_lowers_to_the_original_with_the_gate_off(file: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if available():
        pytest.skip(available())
    monkeypatch.delenv("ENABLE_TILE", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    original = tmp_path / file
    original.write_text((ROOT / "examples" / file).read_text())
    result = apply_file(original, output=tmp_path / f"{original.stem}_tileir.py")
    source = Path(result.output).read_text()
    kernel, signature, constexprs = KERNELS[file]
    assert source.count("@triton.jit") == (ROOT / "examples" / file).read_text().count("@triton.jit")  # no copy
    assert f"def {kernel}_tileir" not in source and " if TILEIR else tl." in source
    spec = Specialization("test", signature, constexprs)
    before = lower(innermost(getattr(_load(original, f"orig_{original.stem}"), kernel)), spec)
    optimized = _load(Path(result.output), f"opt_{original.stem}")
    jit = innermost(getattr(optimized, kernel))  # under its autotuner
    assert not optimized.TILEIR  # the gate is off here
    assert _code(lower(jit, spec)) == _code(before)  # the same code, line for line
    monkeypatch.setattr(optimized, "TILEIR", type(optimized.TILEIR)(True))
    on = lower(jit, spec)
    assert _code(on) != _code(before) and "math.exp2" in on
