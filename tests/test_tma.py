"""TMA twins of dot kernels: before/after rewrites per pattern, what is left alone and why, the
generated dispatch, and the twins' numerics under Triton's interpreter.

The numerical checks run `tests/fixtures/tma/run_cases.py` once, in a child process with
TRITON_INTERPRET=1 and the TileIR code forced on by the harness (Triton fixes the backend at decoration time):
fp16 and fp32, ragged shapes, and cases whose strides TMA cannot take (the pointer path).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import libcst as cst
import pytest
import triton

from tileiropt.apply.apply import transform_source
from tileiropt.apply.tma_runtime import RUNTIME_SOURCE
from tileiropt.harness.autotuners import autotuners, config_label, pinned, tma_dispatches
from tileiropt.harness.gate import gate_source

from shared import ROOT, TEST_FIXTURES, write_rewrite

FIXTURES = TEST_FIXTURES / "tma"
NAMES = ["gemm", "gemm_i64", "persistent_gemm", "batched_gemm", "linear_nt", "attention_fwd"]


def _dot(info, kernel) -> str:
    return "dot"


def _apply(source: str, **options):
    return transform_source(source, "k.py", classify=_dot, max_configs=4, **options)


def _twin(source: str, name: str) -> str:
    """The text of the function `name` in `source`."""
    module = cst.parse_module(source)
    gated = [inner for s in module.body if isinstance(s, cst.If) for inner in s.body.body]  # twins live in the gate
    for statement in [*module.body, *gated]:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return module.code_for_node(statement)
    raise AssertionError(f"no function {name}")


def _fixture(name: str, **options):
    source = (FIXTURES / f"{name}.py").read_text() if name != "gemm_i64" else \
        (FIXTURES / "gemm.py").read_text().replace("tl.program_id(axis=0)\n", "tl.program_id(axis=0).to(tl.int64)\n")
    result = _apply(source, **options)
    return source, result, result.new_source


def _assert_preserved(before: str, after: str) -> None:
    position = 0
    for statement in cst.parse_module(before).body:
        text = cst.parse_module(before).code_for_node(statement)
        found = after.find(text, position)
        assert found >= 0, text[:200]
        position = found + len(text)


# ----------------------------------------------------------------------------- before / after


def test_gemm_twin_loads_and_stores_through_descriptors() -> None:
    source, result, out = _fixture("gemm")
    _assert_preserved(source, out)
    twin = _twin(out, "gemm_kernel_tileir")
    assert "tl.load" not in twin and "tl.store" not in twin
    assert "a_ptrs" not in twin and "k_remaining" not in twin  # the pointer arithmetic is gone
    assert ("a_desc = tl.make_tensor_descriptor(\n            a_ptr, shape=[M, K], strides=[stride_am, 1], "
            "block_shape=[BLOCK_M, BLOCK_K])") in twin
    assert "b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])" in twin
    assert ("    c_desc.store([pid_n * BLOCK_N, pid_m * BLOCK_M], tl.trans(c)) if TMA_T_C_PTR "
            "else c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], c)\n") in twin
    assert "TMA_T_A_PTR: tl.constexpr = False" in twin  # A may come transposed: a layout flag
    assert "('c_ptr', (('stride_cm',), ('stride_cn',)), (), 'nt', 'TMA_T_C_PTR')" in out  # the dispatch's checks
    assert "gemm_kernel_tileir_pointer = gemm_kernel" in out
    (report,) = result.kernels
    assert report.twin == "gemm_kernel_tileir" and not report.skipped
    assert [c.line for c in report.changes if "tl.load of" in c.what] == [43, 44]
    assert transform_source(out, "k.py", classify=_dot).new_source == out  # idempotent


def test_coordinates_from_64_bit_program_ids_are_cast_to_int32(tmp_path: Path) -> None:
    """Tile IR takes descriptor coordinates as 32-bit (TIR012): a twin of a kernel computing its tile starts from
    64-bit values casts them, and classify finds nothing to say of the twin it wrote."""
    from tileiropt.classify.classify import classify_paths

    _, result, out = _fixture("gemm_i64")
    twin = _twin(out, "gemm_kernel_tileir")
    assert "a_desc.load([(pid_m * BLOCK_M).to(tl.int32), k * BLOCK_K])" in twin  # k stays: a 32-bit loop index
    assert "c_desc.store([(pid_m * BLOCK_M).to(tl.int32), (pid_n * BLOCK_N).to(tl.int32)], c)" in twin
    written = tmp_path / "gemm_i64_tileir.py"
    written.write_text(out)
    [classified] = classify_paths([written])
    assert not [f for k in classified.kernels for f in k.findings if f.code == "TIR012"]
    _, _, plain = _fixture("gemm")
    assert ".to(tl.int32)" not in plain  # 32-bit starts are written as they are


def test_persistent_gemm_gets_descriptors_outside_the_tile_loop_and_two_cta_configs() -> None:
    _, result, out = _fixture("persistent_gemm")
    twin = _twin(out, "persistent_gemm_kernel_tileir")
    assert twin.index("a_desc = ") < twin.index("for tile_id in tl.range(")
    assert "a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])" in twin
    block = out[out.index("\n    persistent_gemm_kernel_tileir_pointer = "):]
    assert re.search(r"\(\d+, 2, \d+", block)  # 2-CTA configs (o, n=2, s), timed by the autotuner as launched
    assert "guard" not in out
    assert any("2-CTA configs on a persistent kernel: under num_ctas=2 each of its NUM_SMS programs" in c.what
               for c in result.kernels[0].changes)


def test_persistent_kernel_without_a_recognised_tile_loop_gets_no_persistent_note() -> None:
    source = (FIXTURES / "persistent_gemm.py").read_text().replace(
        "tl.range(start_pid, num_tiles, NUM_SMS)", "tl.range(start_pid, num_tiles, tl.num_programs(0))")
    result = transform_source(source, "k.py", classify=_dot, max_configs=8)
    block = result.new_source[result.new_source.index("\nif is_tileir():"):]
    assert "for c in persistent_gemm_kernel_tileir.configs" in block
    assert not any("persistent kernel" in c.what for c in result.kernels[0].changes)


def test_a_dot_kernel_whose_loads_cannot_take_descriptors_gets_no_twin_for_its_store() -> None:
    gathered = "offs_k = tl.load(k_order_ptr + ki * BLOCK_K + tl.arange(0, BLOCK_K))"  # K in an order of its own
    source = (FIXTURES / "persistent_gemm.py").read_text().replace(
        "offs_k = ki * BLOCK_K + tl.arange(0, BLOCK_K)", gathered).replace(
        "    a_ptr, b_ptr, c_ptr,\n", "    a_ptr, b_ptr, c_ptr, k_order_ptr,\n")
    result = transform_source(source, "k.py", classify=_dot, max_configs=8)
    (report,) = result.kernels
    assert report.twin is None and "_tileiropt_tma_dispatch" not in result.new_source
    assert any(s.startswith("no TMA twin: only its stores could take a descriptor") for s in report.skipped)
    # its configs still go to its own autotuner
    assert "persistent_gemm_kernel.configs = persistent_gemm_kernel.configs + [" in result.new_source


def test_batched_gemm_folds_the_batch_into_the_base_pointer() -> None:
    _, _, out = _fixture("batched_gemm")
    twin = _twin(out, "bmm_kernel_tileir")
    assert "a_ptr += pid_b * stride_ab" in twin  # kept: the descriptor is built from the moved pointer
    assert "            a_ptr, shape=[M, K], strides=[stride_am, 1]" in twin
    assert "            b_ptr + pid_b * stride_bb, shape=[K, N], strides=[stride_bk, 1]" in twin
    assert "a_desc.load([pid_m * BLOCK_M, k])" in twin  # `range(0, K, BLOCK_K)`: k is the offset itself
    assert "('b_ptr', (('stride_bk',), ('stride_bn',)), (('stride_bb',),), 'nt', 'TMA_T_B_PTR')" in out


def test_transposed_operand_and_hint_only_kernel() -> None:
    _, result, out = _fixture("linear_nt", hint_autotune=("all",))
    twin = _twin(out, "linear_kernel_tileir")
    assert ("w = (tl.trans(w_desc.load([pid_n * BLOCK_N, k * BLOCK_K])) if TMA_T_W_PTR "
            "else w_desc.load([k * BLOCK_K, pid_n * BLOCK_N]))") in twin
    assert "shape=[N, K], strides=[stride_wn, 1], block_shape=[BLOCK_N, BLOCK_K]" in twin
    block = out[out.index("\n    linear_kernel_tileir_pointer = "):]
    dispatch = block.index("linear_kernel = _tileiropt_tma_dispatch(")
    hints = [block.index(f"{path} = triton.autotune(\n") for path in ("linear_kernel_tileir_pointer",
                                                                         "linear_kernel_tileir")]
    assert max(hints) < dispatch  # each path its own hint autotuner; the dispatch chooses between them
    assert result.kernels[0].twin == "linear_kernel_tileir"


def test_attention_forward_q_kt_then_p_v() -> None:
    _, result, out = _fixture("attention_fwd")
    twin = _twin(out, "attn_fwd_kernel_tileir")
    assert "Q + off_h * stride_qh + off_z * stride_qz, shape=[N_CTX, HEAD_DIM], strides=[stride_qm, 1]" in twin
    # K is read as K^T (HEAD_DIM x BLOCK_N): with K contiguous the flag picks the N_CTX x HEAD_DIM view
    assert "kt = (tl.trans(K_desc.load([start_n, 0])) if TMA_T_K else K_desc.load([0, start_n]))" in twin
    assert "v = (tl.trans(V_desc.load([0, start_n])) if TMA_T_V else V_desc.load([start_n, 0]))" in twin
    assert twin.index("K_desc = ") < twin.index("for start_n in range(")  # built once, outside the loop
    assert "Out_desc.store([start_m * BLOCK_M, 0], acc.to(Out.dtype.element_ty))" in twin
    assert "kt_ptrs" not in twin and "p = tl.exp2(qk - m_ij[:, None])" in twin
    assert "(('stride_qz',), ('stride_qh',))" in out
    assert len([c for c in result.kernels[0].changes if "tile of" in c.what]) == 4


def test_examples_get_tma_twins() -> None:
    for name, kernel, accesses in (("matmul", "matmul_kernel", 3), ("attention", "attention_kernel", 4)):
        result = transform_source((ROOT / "examples" / f"{name}.py").read_text(), f"{name}.py", classify=_dot)
        (report,) = result.kernels
        assert report.twin == f"{kernel}_tileir"
        assert len([c for c in report.changes if "tile of" in c.what]) == accesses, report.changes
        assert not [s for s in report.skipped if "kept" in s or "no TMA twin" in s]


# ----------------------------------------------------------------------------- left alone, with reasons

KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def k(a_ptr, b_ptr, c_ptr, idx_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            LOADS
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc,
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
''')

A_TILE = "a_ptr + offs_m[:, None] * stride_am + (k * BLOCK_K + offs_k)[None, :] * stride_ak"
B_TILE = "b_ptr + (k * BLOCK_K + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn"
B_LOAD = f"b = tl.load({B_TILE}, mask=((k * BLOCK_K + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)"


CLAMPED = ("rows = tl.where(offs_m < M, offs_m, 0)\n        "
           "a = tl.load(a_ptr + rows[:, None] * stride_am + (k * BLOCK_K + offs_k)[None, :] * stride_ak, "
           "mask=(k * BLOCK_K + offs_k)[None, :] < K, other=0.0)")
GATHER = ("rows = tl.load(idx_ptr + offs_m)\n        "
          "a = tl.load(a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak, mask=offs_k[None, :] < K)")


@pytest.mark.parametrize(("a_load", "reason"), [
    (f"a = tl.load({A_TILE}, mask=(offs_m[:, None] < M) & ((k * BLOCK_K + offs_k)[None, :] < K), other=1.0)",
     "masked lanes read `other=1.0`"),
    (f"a = tl.load({A_TILE}, mask=(k * BLOCK_K + offs_k)[None, :] < K, other=0.0)",
     "dim 0 has no mask bound and starts at `pid_m * BLOCK_M`"),
    (f"a = tl.load({A_TILE}, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)",
     "the bound of dim 1 (`K + k * BLOCK_K`) moves with the loop"),  # the mask's K index is not the tile's
    (CLAMPED + "\n        tl.store(idx_ptr + offs_m, tl.sum(a, axis=1))",
     "`a` is used other than as the first operand"),
    (GATHER, "pointer not understood: indices loaded from memory (a gather)"),
])
def test_unrecognised_loads_are_kept_with_the_reason(a_load: str, reason: str) -> None:
    source = KERNEL.replace("LOADS", f"{a_load}\n        {B_LOAD}\n        acc = tl.dot(a, b, acc)")
    (report,) = _apply(source).kernels
    kept = [s for s in report.skipped if "tl.load kept" in s]
    assert kept and reason in kept[-1], report.skipped
    assert kept[-1].startswith("line ")
    assert any("tile of b_ptr" in c.what for c in report.changes)  # the B load still converts


WRAPPED = ("rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M\n        "
           "a = tl.load(a_ptr + rows[:, None] * stride_am + (k * BLOCK_K + offs_k)[None, :] * stride_ak, "
           "mask=(k * BLOCK_K + offs_k)[None, :] < K, other=0.0)")


@pytest.mark.parametrize("a_load", [WRAPPED, CLAMPED])
def test_wrapped_and_clamped_rows_become_descriptor_loads_where_exact(a_load: str) -> None:
    """`(offs % M)` and `tl.where(offs < M, offs, 0)` read real rows past M where a descriptor reads zeros;
    those rows only reach accumulator rows past M, which the bounded store drops."""
    source = KERNEL.replace("LOADS", f"{a_load}\n        {B_LOAD}\n        acc = tl.dot(a, b, acc)")
    (report,) = _apply(source).kernels
    (change,) = [c for c in report.changes if "tile of a_ptr" in c.what]
    assert "a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])" in change.what
    assert "rows wrap at M" in change.what and "which every store drops" in change.what
    reduced = source.replace("    tl.store(c_ptr", "    acc = acc - tl.sum(acc, axis=0)[None, :]\n    tl.store(c_ptr")
    assert reduced != source
    (report,) = _apply(reduced).kernels
    assert any("wrapped index" in s and "reduces" in s for s in report.skipped), report.skipped
    unbounded = source.replace("mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))", "mask=offs_n[None, :] < N)")
    (report,) = _apply(unbounded).kernels
    assert not any("tile of a_ptr" in c.what for c in report.changes)


def test_block_pointers_descriptors_and_helpers_are_left_alone() -> None:
    block_ptr = KERNEL.replace("LOADS", "p = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (0, 0), "
                                        "(BLOCK_M, BLOCK_K), (1, 0))\n        "
                                        "acc += tl.dot(tl.load(p), tl.load(p))")
    (report,) = _apply(block_ptr).kernels
    assert any("no TMA twin: it uses block pointers" in s for s in report.skipped)
    described = KERNEL.replace("LOADS", "d = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], "
                                        "[BLOCK_M, BLOCK_K])\n        acc += tl.dot(d.load([0, 0]), d.load([0, 0]))")
    (report,) = _apply(described).kernels
    assert any("builds tensor descriptors already" in s for s in report.skipped)
    one_d = KERNEL.replace("LOADS", "x = tl.load(a_ptr + offs_k, mask=offs_k < K)\n        acc += tl.dot(x, x)")
    (report,) = _apply(one_d).kernels
    assert any("not a 2-D tile" in s for s in report.skipped)


# ----------------------------------------------------------------------------- the generated runtime


def _runtime() -> dict:
    namespace: dict = {}
    exec(gate_source() + RUNTIME_SOURCE, namespace)  # noqa: S102 - the generated code under test
    return namespace


class _Tensor:
    def __init__(self, address: int, size: int = 2, elements: int = 1 << 20):
        self.address, self.size, self.elements = address, size, elements

    def data_ptr(self) -> int:
        return self.address

    def element_size(self) -> int:
        return self.size

    def untyped_storage(self):
        return types.SimpleNamespace(nbytes=lambda: self.elements * self.size)


@pytest.mark.parametrize(("arguments", "expected"), [
    ({"a": _Tensor(256), "sm": 64, "sk": 1, "sb": 4096}, ({"T_A": False}, "")),
    ({"a": _Tensor(256), "sm": 1, "sk": 64, "sb": 4096}, ({"T_A": True}, "")),
    ({"a": _Tensor(258), "sm": 64, "sk": 1, "sb": 4096}, (None, "a is not 16-byte aligned")),
    ({"a": _Tensor(256), "sm": 33, "sk": 1, "sb": 4096}, (None, "a has strides (33, 1) of 2-byte elements")),
    ({"a": _Tensor(256), "sm": 64, "sk": 1, "sb": 4097},
     (None, "a has a batch offset that is not a multiple of 16 bytes")),
    ({"a": _Tensor(256), "sm": 64, "sk": 1}, (None, "a: argument 'sb' not passed")),
    ({"a": 7, "sm": 64, "sk": 1, "sb": 64}, (None, "a is not a tensor")),
    ({"a": _Tensor(256, elements=1 << 31), "sm": 64, "sk": 1, "sb": 64}, (None, "a may need 64-bit offsets")),
])
def test_dispatch_checks_tma_rules_on_the_launch_arguments(arguments: dict, expected: tuple) -> None:
    flags, reason = _runtime()["_tileiropt_tma_flags"]([("a", (("sm",), ("sk",)), (("sb",),), "nt", "T_A")],
                                                       arguments)
    assert flags == expected[0]
    assert reason.startswith(expected[1])


class _Kernel:
    """A stand-in for a Triton kernel: records its launches."""

    def __init__(self, arg_names: list[str]):
        self.arg_names = arg_names
        self.configs = ["own"]
        self.launches: list[tuple] = []

    def run(self, *args, **kwargs):
        self.launches.append((args, kwargs))
        return "launched"


def test_dispatch_picks_the_path_forwards_attributes_and_sets_an_allocator(monkeypatch) -> None:
    allocators = []
    monkeypatch.setattr(triton, "set_allocator", allocators.append)
    from triton.runtime import _allocation

    monkeypatch.setattr(_allocation, "_allocator", types.SimpleNamespace(get=lambda: _allocation.NullAllocator()))
    runtime = _runtime()
    tma, pointer = _Kernel(["a", "sm", "sk"]), _Kernel(["a", "sm", "sk"])
    dispatch = runtime["_tileiropt_tma_dispatch"](tma, pointer, [("a", (("sm",), ("sk",)), (), "nt", "T_A")])
    assert dispatch[(4,)](_Tensor(256), 1, 8) == "launched"
    assert dispatch.last_path == "tma" and tma.launches[-1][1] == {"grid": (4,), "warmup": False, "T_A": True}
    assert allocators == [runtime["_tileiropt_allocator"]]  # set lazily, at the first TMA launch
    dispatch[(4,)](_Tensor(256), 3, 1)
    assert dispatch.last_path == "pointer" and "strides (3, 1)" in dispatch.last_reason
    assert "T_A" not in pointer.launches[-1][1]  # the pointer kernel has no layout flag
    assert dispatch.configs == ["own"] and dispatch.arg_names == ["a", "sm", "sk"]
    dispatch.configs = ["pinned"]  # what `pinned()` does: both paths follow
    assert tma.configs == ["pinned"] and pointer.configs == ["pinned"]


def test_dispatch_leaves_a_program_allocator_alone(monkeypatch) -> None:
    allocators = []
    monkeypatch.setattr(triton, "set_allocator", allocators.append)
    from triton.runtime import _allocation

    monkeypatch.setattr(_allocation, "_allocator", types.SimpleNamespace(get=lambda: (lambda *a: None)))
    runtime = _runtime()
    tma = _Kernel(["a", "sm", "sk"])
    runtime["_tileiropt_tma_dispatch"](tma, _Kernel(["a"]), [("a", (("sm",), ("sk",)), (), "n", None)])[(1,)](
        _Tensor(0), 8, 1)
    assert tma.launches and allocators == []


# ----------------------------------------------------------------------------- PTX path, and numerics


@pytest.mark.parametrize("name", NAMES)
def test_gate_off_module_is_the_original(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENABLE_TILE", raising=False)
    out = tmp_path / f"{name}_off.py"
    write_rewrite(out, _fixture(name)[2])
    namespace: dict = {"__name__": f"_tma_off_{name}", "__file__": str(out)}
    exec(compile(out.read_text(), str(out), "exec"), namespace)  # noqa: S102
    module = types.SimpleNamespace(**namespace)
    assert namespace["is_tileir"]() is False and not tma_dispatches(module)
    assert not any(n.endswith("_pointer") for n in namespace)  # the pointer twin exists only under the gate


@pytest.fixture(scope="module")
def interpreter_records(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("tma")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop("ENABLE_TILE", None)
    done = subprocess.run([sys.executable, "-m", "tileiropt.harness.tileir_surface", str(FIXTURES / "run_cases.py"),
                           str(out), "--device", "cpu",
                           "--dtypes", "float16,float32"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("name", NAMES)
def test_twins_are_correct_under_the_interpreter(interpreter_records: list[dict], name: str) -> None:
    records = [r for r in interpreter_records if r["fixture"] == name]
    assert {r["dtype"] for r in records} == {"float16", "float32"}
    bad = [r for r in records if not r["ok"]]
    assert not bad, json.dumps(bad, indent=1)[:3000]
    assert {r["path"] for r in records} == {"tma", "pointer"}  # both paths ran, each where expected


def test_persistent_twins_run_in_two_cta_mode(interpreter_records: list[dict]) -> None:
    records = [r for r in interpreter_records if r["fixture"] == "persistent_gemm"]
    two_ctas = [r for r in records if r["config"].endswith("num_ctas=2")]
    assert two_ctas and all(r["ok"] for r in two_ctas)
    assert all("num_ctas=2" in label for r in two_ctas for label in r["pinned"].values())


def test_pinning_reaches_both_paths(tmp_path: Path, tileir_code_forced: None) -> None:
    out = tmp_path / "gemm_pinned.py"
    write_rewrite(out, _fixture("gemm")[2])
    namespace: dict = {"__name__": "_tma_pinned", "__file__": str(out)}
    exec(compile(out.read_text(), str(out), "exec"), namespace)  # noqa: S102
    module = types.SimpleNamespace(**namespace)
    tuners = autotuners(module)
    assert sorted(tuners) == ["gemm_kernel_tileir", "gemm_kernel_tileir_pointer"]
    (dispatch,) = tma_dispatches(module).values()
    labels = [config_label(c) for c in tuners["gemm_kernel_tileir_pointer"].configs]
    config = tuners["gemm_kernel_tileir"].configs[1]
    with pinned(dispatch, config):  # through the dispatch, as a caller holding `gemm_kernel` would
        assert tuners["gemm_kernel_tileir"].configs == [config] == tuners["gemm_kernel_tileir_pointer"].configs
    assert [config_label(c) for c in tuners["gemm_kernel_tileir_pointer"].configs] == labels
