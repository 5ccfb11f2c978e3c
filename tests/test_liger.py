"""Classify the real kernels of liger-kernel (installed as a dev dependency): no crash, every
kernel found, and a hand-labelled set classified correctly. Nothing of liger is copied here."""

from __future__ import annotations

from pathlib import Path

import pytest

liger_kernel = pytest.importorskip("liger_kernel", reason="liger-kernel is not installed (pip install -e .[dev])")

from tileiropt.classify.classify import classify_paths  # noqa: E402

ROOT = Path(liger_kernel.__file__).parent

# Labels written by reading each kernel's body (what it loads, reduces and writes), not from the
# tool's output. norm = a reduced statistic shifts/scales the elements; reduction = a sum/max or
# cross-program atomics whose result is not applied back to the elements.
LABELS: dict[tuple[str, str], str] = {
    ("ops/softmax.py", "_softmax_single_block_forward_kernel"): "norm",
    ("ops/softmax.py", "_softmax_multi_block_forward_kernel"): "norm",
    ("ops/softmax.py", "_softmax_single_block_backward_kernel"): "norm",
    ("ops/softmax.py", "_softmax_multi_block_backward_kernel"): "norm",
    ("ops/layer_norm.py", "_layer_norm_forward_kernel"): "norm",
    ("ops/layer_norm.py", "_layer_norm_backward_kernel"): "norm",
    ("ops/rms_norm.py", "_rms_norm_forward_kernel"): "norm",
    ("ops/rms_norm.py", "_rms_norm_backward_kernel"): "norm",
    ("ops/rms_norm.py", "_block_rms_norm_forward_kernel"): "norm",
    ("ops/group_norm.py", "_group_norm_forward_kernel"): "norm",
    ("ops/group_norm.py", "_group_norm_backward_kernel"): "norm",
    ("ops/poly_norm.py", "_poly_norm_forward_kernel"): "norm",
    ("ops/poly_norm.py", "_poly_norm_backward_kernel"): "norm",
    ("ops/fused_add_rms_norm.py", "_fused_add_rms_norm_forward_kernel"): "norm",
    ("ops/fused_add_rms_norm.py", "_fused_add_rms_norm_backward_kernel"): "norm",
    ("ops/modulated_rms_norm.py", "_modulated_rms_norm_forward_kernel"): "norm",
    ("ops/modulated_rms_norm.py", "_modulated_rms_norm_backward_kernel"): "norm",
    ("ops/cross_entropy.py", "liger_cross_entropy_kernel"): "norm",
    ("ops/fused_linear_kl_div.py", "_kl_div_kernel"): "norm",
    ("ops/grpo_loss.py", "_selective_log_softmax_kernel"): "norm",
    ("ops/grpo_loss.py", "_grpo_loss_fwd_kernel"): "norm",
    ("ops/sparsemax.py", "_sparsemax_forward_kernel"): "norm",
    ("ops/sparsemax.py", "_sparsemax_backward_kernel"): "norm",
    ("ops/kl_div.py", "_kldiv_kernel_forward"): "reduction",
    ("ops/tvd.py", "_tv_distance_kernel"): "reduction",
    ("ops/dyt.py", "_dyt_bwd_kernel"): "reduction",
    ("ops/experimental/embedding.py", "embedding_backward_kernel"): "reduction",
    ("ops/kl_div.py", "_kldiv_kernel_backward"): "elementwise",
    ("ops/dyt.py", "_dyt_fwd_kernel"): "elementwise",
    ("ops/geglu.py", "_geglu_tanh_forward_kernel"): "elementwise",
    ("ops/geglu.py", "_geglu_tanh_backward_kernel"): "elementwise",
    ("ops/swiglu.py", "silu"): "elementwise",
    ("ops/swiglu.py", "_swiglu_forward_kernel"): "elementwise",
    ("ops/swiglu.py", "_swiglu_backward_kernel"): "elementwise",
    ("ops/relu_squared.py", "_relu_squared_forward_kernel"): "elementwise",
    ("ops/relu_squared.py", "_relu_squared_backward_kernel"): "elementwise",
    ("ops/rope.py", "_triton_rope"): "elementwise",
    ("ops/qwen2vl_mrope.py", "_triton_qwen2vl_mrope"): "elementwise",
    ("ops/llama4_rope.py", "_llama4_rope_kernel"): "elementwise",
    ("ops/utils.py", "element_mul_kernel"): "elementwise",
    ("ops/experimental/embedding.py", "embedding_forward_kernel"): "elementwise",
    ("ops/grpo_loss.py", "_grpo_loss_bwd_kernel"): "elementwise",
    ("ops/multi_token_attention.py", "_mask_fwd_kernel"): "elementwise",
    ("ops/mlp.py", "_swiglu_kernel_forward"): "dot",
    ("ops/mlp.py", "_swiglu_kernel_backward_dGU"): "dot",
    ("ops/mlp.py", "_swiglu_kernel_backward_dI"): "dot",
    ("ops/experimental/mm_int8int2.py", "matmul_kernel"): "dot",
    ("ops/fused_neighborhood_attention.py", "_fused_neighborhood_attention_qk_kernel"): "dot",
    ("ops/fused_neighborhood_attention.py", "_fused_neighborhood_attention_av_kernel"): "dot",
    ("ops/fused_neighborhood_attention.py", "_fused_neighborhood_attention_grad_v_kernel"): "dot",
}


def _decorator_count(text: str) -> int:
    """Lines that start with a `@triton.jit` decorator: the simple text count to compare with."""
    return sum(1 for line in text.splitlines() if line.strip().startswith("@triton.jit"))


@pytest.fixture(scope="module")
def results():
    return classify_paths([ROOT]), None


def test_every_file_is_processed_without_crash(results) -> None:
    """(Speed is a benchmark, not a test: a timing assertion would be flaky on a loaded machine.)"""
    found, _ = results
    assert found, "no files found in liger_kernel"
    assert not [r.message for r in found if r.status == "error"]


def test_every_jit_kernel_is_found(results) -> None:
    """Kernels found per file equal the `@triton.jit` decorator count of a text scan.

    The text scan would also count a decorator inside a string or a comment; liger has none, so
    the counts must match exactly. Its `@cute.jit` functions (CuTe DSL, not Triton) are rightly
    counted by neither.
    """
    found, _ = results
    by_file = {Path(r.file): len(r.kernels) for r in found}
    expected = {p: _decorator_count(p.read_text(encoding="utf-8")) for p in ROOT.rglob("*.py")}
    mismatches = {str(p.relative_to(ROOT)): (n, by_file.get(p, 0)) for p, n in expected.items()
                  if n != by_file.get(p, 0)}
    assert mismatches == {}
    assert sum(expected.values()) == sum(by_file.values()) > 150


def test_hand_labelled_kernels(results) -> None:
    found, _ = results
    predicted = {(Path(r.file).relative_to(ROOT).as_posix(), k.kernel): k.kernel_class
                 for r in found for k in r.kernels}
    missing = [key for key in LABELS if key not in predicted]
    assert missing == []
    wrong = {key: (label, predicted[key]) for key, label in LABELS.items() if predicted[key] != label}
    assert len(LABELS) >= 30
    assert wrong == {}


def test_known_findings_on_liger(results) -> None:
    found, _ = results
    findings = {(Path(r.file).relative_to(ROOT).as_posix(), k.kernel, f.code)
                for r in found for k in r.kernels for f in k.findings}
    # cross-entropy writes its gradient into its input; geglu's libdevice tanh is a symbol every release maps
    assert ("ops/cross_entropy.py", "liger_cross_entropy_kernel", "TIR101") in findings
    assert not any(code == "TIR004" and file == "ops/geglu.py" for file, _, code in findings)
