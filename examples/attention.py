"""Fused attention forward (non-causal): O = softmax(Q K^T * sm_scale) V.

Each program owns BLOCK_M query rows of one (batch, head) and streams the keys and values in
BLOCK_N chunks, never materialising the N_CTX x N_CTX score matrix. The softmax is computed
online: a running row max m_i and row sum l_i rescale the partial output whenever a new
chunk raises the max.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w)
        for bm in (64, 128)
        for bn in (32, 64)
        for s in (3,)
        for w in (4, 8)
        if (bm == 128) == (w == 8)  # larger query tiles get more warps
    ],
    key=["N_CTX", "HEAD_DIM"],
)
@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    stride_qz, stride_qh, stride_qm, stride_qd,
    stride_kz, stride_kh, stride_kn, stride_kd,
    stride_vz, stride_vh, stride_vn, stride_vd,
    stride_oz, stride_oh, stride_om, stride_od,
    H, N_CTX, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(axis=0)
    off_hz = tl.program_id(axis=1)
    off_z = off_hz // H
    off_h = off_hz % H

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + off_z * stride_qz + off_h * stride_qh
    k_base = k_ptr + off_z * stride_kz + off_h * stride_kh
    v_base = v_ptr + off_z * stride_vz + off_h * stride_vh
    o_base = o_ptr + off_z * stride_oz + off_h * stride_oh

    # The query tile stays in registers for the whole loop; rows past N_CTX read zeros.
    q_mask = offs_m[:, None] < N_CTX
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd, mask=q_mask, other=0.0)

    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)  # running row max
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # running row sum of exponentials
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)  # unnormalised output

    for start_n in range(0, N_CTX, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < N_CTX
        k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd,
                    mask=kv_mask, other=0.0)
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                    mask=kv_mask, other=0.0)

        # Scaled scores for this chunk; keys past N_CTX get -inf (zero weight after exp).
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        qk = tl.where(offs_n[None, :] < N_CTX, qk, -float("inf"))

        # Raise the running max, rescale what was accumulated so far, add this chunk.
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od,
             out.to(o_ptr.dtype.element_ty), mask=q_mask)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float) -> torch.Tensor:
    """softmax(q @ k^T * sm_scale) @ v for tensors of shape [Z, H, N_CTX, HEAD_DIM]."""
    if q.ndim != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError("q, k and v must share one shape [Z, H, N_CTX, HEAD_DIM]")
    Z, H, N_CTX, HEAD_DIM = q.shape
    if HEAD_DIM not in (16, 32, 64, 128):
        raise ValueError(f"HEAD_DIM must be 16, 32, 64 or 128, got {HEAD_DIM}")
    o = torch.empty(q.shape, device=q.device, dtype=q.dtype)
    grid = lambda meta: (triton.cdiv(N_CTX, meta["BLOCK_M"]), Z * H)  # noqa: E731
    attention_kernel[grid](
        q, k, v, o,
        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
        k.stride(0), k.stride(1), k.stride(2), k.stride(3),
        v.stride(0), v.stride(1), v.stride(2), v.stride(3),
        o.stride(0), o.stride(1), o.stride(2), o.stride(3),
        H, N_CTX, sm_scale,
        HEAD_DIM=HEAD_DIM,
    )
    return o
