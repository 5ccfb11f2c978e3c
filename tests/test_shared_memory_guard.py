"""The shared-memory guard of the tool's GPU workers: a config too large for the GPU's shared memory is refused with
Triton's own OutOfResources before LLVM optimizes it; one that fits compiles to the very same code. Compiled for an
sm_90 target on the CPU (Triton compiles without a GPU; only loading needs one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import triton
import triton.language as tl
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.errors import OutOfResources

from tileiropt.harness import harness, shared_memory_guard

H100_SHARED = 232448  # bytes of shared memory per block on an H100, as Triton's loader reads it


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BLOCK_N + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc.to(tl.float16))


def _compile(block: int, stages: int) -> triton.compiler.CompiledKernel:
    names = _dot_kernel.arg_names
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32",
                 "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    constants = {(names.index(name),): block for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    return triton.compile(ASTSource(_dot_kernel, signature, constants), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "num_stages": stages})


@pytest.fixture
def guard(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The guard installed with an H100's limit, a fresh Triton cache folder (returned), and everything it wraps
    put back afterwards."""
    from triton._C.libtriton import llvm
    from triton.backends.nvidia.compiler import CUDABackend

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(llvm, "optimize_module", llvm.optimize_module)
    monkeypatch.setattr(CUDABackend, "make_ttir", CUDABackend.__dict__["make_ttir"])
    monkeypatch.setattr(CUDABackend, "make_llir", CUDABackend.__dict__["make_llir"])
    monkeypatch.setattr(shared_memory_guard, "_refused", {})
    assert shared_memory_guard.install(lambda: H100_SHARED)
    return tmp_path


def test_a_config_over_the_shared_memory_is_refused_before_llvm_with_tritons_own_error(guard: Path) -> None:
    with pytest.raises(OutOfResources) as raised:
        _compile(block=256, stages=4)  # 4 stages of two 256x256 fp16 tiles: 1 MiB of buffers
    assert raised.value.name == "shared memory"
    assert raised.value.required > H100_SHARED and raised.value.limit == H100_SHARED
    assert "found before LLVM optimized the code" in str(raised.value)
    assert harness.autotuner_skip(raised.value) == "the config does not fit this device"  # as Triton's own


def test_a_refused_compile_is_refused_at_its_first_stage_the_next_time_in_any_worker(
        guard: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triton.backends.nvidia.compiler import CUDABackend

    with pytest.raises(OutOfResources) as first:
        _compile(block=256, stages=4)
    markers = list((guard / shared_memory_guard.MARKERS).iterdir())
    assert len(markers) == 1  # in the cache folder the run's workers share
    lowered: list[str] = []
    make_llir = CUDABackend.make_llir
    monkeypatch.setattr(CUDABackend, "make_llir", lambda *a: lowered.append("llir") or make_llir(*a))
    monkeypatch.setattr(shared_memory_guard, "_refused", {})  # another worker: only the marker file
    with pytest.raises(OutOfResources) as again:
        _compile(block=256, stages=4)
    assert lowered == [] and again.value.required == first.value.required  # never lowered again


def test_a_config_that_fits_compiles_to_the_code_it_compiles_to_without_the_guard(
        guard: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    guarded = _compile(block=64, stages=2)
    assert guarded.metadata.shared <= H100_SHARED
    monkeypatch.undo()  # the plain Triton
    monkeypatch.setenv("TRITON_CACHE_DIR", str(guard / "plain"))
    plain = _compile(block=64, stages=2)
    assert guarded.asm["ptx"] == plain.asm["ptx"]
    assert guarded.hash == plain.hash  # the cache key is unchanged: workers with and without it share a cache


def test_the_guard_sets_no_stages_hook_and_wraps_once(guard: Path) -> None:
    from triton._C.libtriton import llvm
    from triton.backends.nvidia.compiler import CUDABackend

    assert knobs.runtime.add_stages_inspection_hook is None  # Triton 3.7+ would fold a hook into every cache key
    wrapped = (llvm.optimize_module, CUDABackend.make_llir)
    assert shared_memory_guard.install(lambda: H100_SHARED)
    assert (llvm.optimize_module, CUDABackend.make_llir) == wrapped
