"""Golden before/after tests of `apply`, as LibCST's codemod tests do: each example kernel file and the exact
file `apply` writes for it (the tool's version as VERSION). A change of
the rewrite shows as a diff of these files; `TILEIROPT_UPDATE_GOLDEN=1 pytest tests/test_golden_transforms.py`
writes them again after a reviewed change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tileiropt import __version__
from tileiropt.apply.apply import transform_source
from tileiropt.apply.gate import gate_source
from tileiropt.releases import get_release

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GOLDEN = Path(__file__).parent / "fixtures" / "golden"
# what each example shows: the rewrite it exercises
CASES = {
    "vector_add": "an elementwise kernel without autotuner: hint-only autotune under the gate",
    "swiglu": "tl.sigmoid rewritten through exp2 in the TileIR twin",
    "softmax": "a norm kernel: occupancy hints",
    "layer_norm": "a norm kernel with its own block size",
    "row_sum": "a reduction",
    "matmul": "a dot kernel with an autotuner: TileIR configs added, the TMA twin",
    "attention": "a dot kernel in a loop: the TMA twin of an attention forward",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_apply_writes_exactly_the_golden_file(name: str) -> None:
    source = (EXAMPLES / f"{name}.py").read_text()
    result = transform_source(source, f"{name}.py", release=get_release("13.4"))
    assert result.new_source.count(gate_source().strip()) == 1  # the gate is there, once, as gate.py writes it
    written = result.new_source.replace(__version__, "VERSION")
    golden = GOLDEN / f"{name}_tileir.expected"
    if os.environ.get("TILEIROPT_UPDATE_GOLDEN") == "1":
        golden.write_text(written)
    assert written == golden.read_text(), f"{name}: {CASES[name]}; the rewrite changed (see the docstring)"
