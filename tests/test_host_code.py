"""An optimized file runs its author's host code with the gate off (`harness.host_code.same_host_code`): what
tileiropt adds around the kernels is skipped then, so where each kernel also compiled to the same code at the same
config, the bench does not time an entry's pair (an identical copy timed in one process read as 5% slower on an
H200 whose host was busy) -- and a change to host code that runs with the gate off keeps the pair timed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tileiropt.apply.apply import apply_file
from tileiropt.harness.host_code import same_host_code

from shared import EXAMPLES, TEST_FIXTURES


@pytest.mark.parametrize("source", [*(EXAMPLES / name for name in ("matmul.py", "softmax.py", "vector_add.py",
                                                                   "layer_norm.py")),
                                    TEST_FIXTURES / "bench" / "keyed" / "rowwise.py",
                                    TEST_FIXTURES / "branches" / "try_ops.py"])
def test_what_apply_adds_runs_only_under_the_gate(tmp_path: Path, source: Path) -> None:
    original = tmp_path / source.name
    shutil.copy(source, original)
    optimized = tmp_path / f"{source.stem}_tileir.py"
    apply_file(original, output=optimized)
    assert optimized.read_text() != original.read_text()
    assert same_host_code(optimized, original)


BACKEND_TEST = '''\
import triton
import triton.language as tl


def is_cuda():
    return triton.runtime.driver.active.get_current_target().backend == "cuda"


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def scale(x):
    scale_kernel[(1,)](x, x.numel(), BLOCK=1024)
    return x
'''


def test_host_code_that_runs_with_the_gate_off_is_a_difference(tmp_path: Path) -> None:
    original = tmp_path / "scale.py"
    original.write_text(BACKEND_TEST)
    optimized = tmp_path / "scale_tileir.py"
    apply_file(original, output=optimized)
    assert 'backend in ("cuda", "tileir")' in optimized.read_text()  # the backend test widened: host code
    assert not same_host_code(optimized, original)
    optimized.write_text(BACKEND_TEST.replace("return x\n", "return x.clone()\n"))
    assert not same_host_code(optimized, original)  # an edit of the wrapper
    assert same_host_code(original, original)
    assert not same_host_code(tmp_path / "missing.py", original)
