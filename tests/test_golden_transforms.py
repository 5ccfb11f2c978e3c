"""Golden before/after tests of `apply`, as LibCST's codemod tests do: each example kernel file and the exact
file `apply` writes for it (the tool's version as VERSION). A change of
the rewrite shows as a diff of these files; `TILEIROPT_UPDATE_GOLDEN=1 pytest tests/test_golden_transforms.py`
writes them again after a reviewed change."""

from __future__ import annotations

import os

import pytest

from tileiropt import __version__
from tileiropt.apply.apply import transform_source
from tileiropt.apply.transforms import TRANSFORMS, Transform, by_name
from tileiropt.harness.gate import gate_source
from tileiropt.releases import get_release

from shared import EXAMPLES, TEST_FIXTURES

GOLDEN = TEST_FIXTURES / "golden"
# what each example shows: the rewrite it exercises
CASES = {
    "vector_add": "an elementwise kernel without autotuner: its launch keeps its options, a literal hint gated",
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


# One golden file per transform (`apply/transforms.py`): the file `apply` writes for the transform's own EXAMPLE when
# only that transform runs, with the ones it NEEDS; what each adds is read in its file alone.
TRANSFORM_GOLDEN = GOLDEN / "transforms"


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.name)
def test_each_transform_alone_writes_its_golden_file(transform: Transform) -> None:
    chosen = by_name([transform.name, *transform.NEEDS])
    result = transform_source(transform.EXAMPLE, f"{transform.name}.py", release=get_release("13.4"),
                              transforms=chosen, hint_autotune=transform.ASKED)
    assert result.changed, f"{transform.name}: its example is one it changes"
    written = result.new_source.replace(__version__, "VERSION")
    golden = TRANSFORM_GOLDEN / f"{transform.name}.expected"
    if os.environ.get("TILEIROPT_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(written)
    assert written == golden.read_text(), f"{transform.name}: the rewrite changed (see the module's docstring)"
    changes = [c.what for kernel in result.kernels for c in kernel.changes]
    assert changes, f"{transform.name}: a change the report shows"


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.name)
def test_each_transform_s_example_is_changed_by_it_and_not_without_it(transform: Transform) -> None:
    others = tuple(t for t in by_name(transform.NEEDS))
    alone = transform_source(transform.EXAMPLE, "x.py", release=get_release("13.4"), transforms=others,
                             hint_autotune=transform.ASKED)
    full = transform_source(transform.EXAMPLE, "x.py", release=get_release("13.4"),
                            transforms=by_name([transform.name, *transform.NEEDS]), hint_autotune=transform.ASKED)
    assert alone.new_source != full.new_source  # what the transform adds, and nothing else makes it


def test_the_transforms_run_in_their_declared_order() -> None:
    assert [t.name for t in TRANSFORMS] == ["math_in_place", "tma_twin", "autotuner_configs", "launch_hints",
                                            "hint_only_configs", "rebinding"]
    assert by_name(["rebinding", "math_in_place"]) == (TRANSFORMS[0], TRANSFORMS[5])
    with pytest.raises(ValueError, match="no transform named nope"):
        by_name(["nope"])
