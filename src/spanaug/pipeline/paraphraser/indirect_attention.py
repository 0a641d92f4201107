"""Decoder self-attention through a beam ancestry table, so that the cache is never reordered.

Beam search reorders the self-attention cache at every step: each beam continues some beam of the
previous step, whose history it must attend to. Gathering the cache costs a read and a write of
every layer's keys and values of every position so far, twice what the attention itself reads (on
an H100 in bf16: about 3 of the 10 ms a T5-base step took for 1,840 beams). Here nothing moves:

* the keys and values a beam computes at position ``j`` stay in its row's slot at ``j``;
* ``ancestry[r, j]`` says which beam of the sentence (0 to ``beams - 1``) computed row ``r``'s
  history at position ``j``; a reorder gathers this small integer table (``rows x max_len``), not
  the cache;
* the attention reads each row's keys and values from the slots the table names, in one kernel
  per layer (Triton, on CUDA), which streams them once, with a running softmax in float32.

:func:`reference_attention` computes the same with torch's indexing (the CPU, the tests, and GPUs
without Triton); :func:`kernel_available` says whether the kernel runs on this machine, by running
it once against the reference.
"""

from __future__ import annotations

import functools
import logging

import torch

log = logging.getLogger(__name__)

try:  # Triton ships with torch's CUDA builds on Linux; the CPU build and other platforms lack it
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the torch build
    triton = None


def reference_attention(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    ancestry: torch.Tensor,
    t: torch.Tensor | int,
    beams: int,
    bias: torch.Tensor | None,
    scale: float,
) -> torch.Tensor:
    """``[rows, H, d]``: each row's query ``q`` ``[rows, H, d]`` over positions ``[0, t]`` of the cache
    ``keys``/``values`` ``[rows, H, max_len, d]``, position ``j`` read from the row of the same
    sentence that ``ancestry[r, j]`` names; ``bias`` ``[H, max_len]`` is added to the scores."""
    rows = q.shape[0]
    last = int(t)
    own = torch.arange(rows, device=q.device) // beams * beams
    src = own[:, None] + ancestry[:, : last + 1].long()  # [rows, t + 1]
    positions = torch.arange(last + 1, device=q.device)[None, :]
    k = keys.permute(0, 2, 1, 3)[src, positions]  # [rows, t + 1, H, d]
    v = values.permute(0, 2, 1, 3)[src, positions]
    scores = torch.einsum("rhd,rjhd->rhj", q.float() * scale, k.float())
    if bias is not None:
        scores = scores + bias[None, :, : last + 1].float()
    return torch.einsum("rhj,rjhd->rhd", torch.softmax(scores, dim=-1), v.float()).to(q.dtype)


if triton is not None:

    @triton.jit
    def _attend(
        q_ptr,
        k_ptr,
        v_ptr,
        anc_ptr,
        bias_ptr,
        t_ptr,
        out_ptr,
        stride_q_row,
        stride_q_head,
        stride_kv_row,
        stride_kv_head,
        stride_kv_pos,
        stride_anc_row,
        stride_bias_head,
        stride_o_row,
        stride_o_head,
        beams,
        scale,
        HAS_BIAS: tl.constexpr,
        HEAD_DIM: tl.constexpr,
        BLOCK_D: tl.constexpr,
        BLOCK_N: tl.constexpr,
    ):
        # One program per (row, head): its query against positions [0, t], block by block, with a
        # running maximum and sum (the softmax never materialised), keys and values read once.
        row = tl.program_id(0)
        head = tl.program_id(1)
        t = tl.load(t_ptr)
        d = tl.arange(0, BLOCK_D)
        d_ok = d < HEAD_DIM
        q = tl.load(q_ptr + row * stride_q_row + head * stride_q_head + d, mask=d_ok, other=0.0).to(tl.float32)
        q = q * scale
        first_row = (row // beams) * beams
        m_i = tl.zeros([], dtype=tl.float32) - float("inf")
        l_i = tl.zeros([], dtype=tl.float32)
        acc = tl.zeros([BLOCK_D], dtype=tl.float32)
        for start in range(0, t + 1, BLOCK_N):
            j = start + tl.arange(0, BLOCK_N)
            j_ok = j <= t
            beam = tl.load(anc_ptr + row * stride_anc_row + j, mask=j_ok, other=0)
            src = (first_row + beam).to(tl.int64)
            offsets = src[:, None] * stride_kv_row + head * stride_kv_head + j[:, None] * stride_kv_pos + d[None, :]
            both = j_ok[:, None] & d_ok[None, :]
            k = tl.load(k_ptr + offsets, mask=both, other=0.0).to(tl.float32)
            s = tl.sum(k * q[None, :], axis=1)
            if HAS_BIAS:
                s += tl.load(bias_ptr + head * stride_bias_head + j, mask=j_ok, other=0.0).to(tl.float32)
            s = tl.where(j_ok, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=0))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new)
            l_i = l_i * alpha + tl.sum(p, axis=0)
            v = tl.load(v_ptr + offsets, mask=both, other=0.0).to(tl.float32)
            acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
            m_i = m_new
        out = acc / l_i
        tl.store(out_ptr + row * stride_o_row + head * stride_o_head + d, out.to(out_ptr.dtype.element_ty), mask=d_ok)


#: Positions one program reads per block.
BLOCK_N = 32


def kernel_attention(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    ancestry: torch.Tensor,
    t: torch.Tensor,
    beams: int,
    bias: torch.Tensor | None,
    scale: float,
) -> torch.Tensor:
    """:func:`reference_attention` in one Triton kernel; ``t`` a 0-d device tensor (read on the device,
    so a CUDA graph replays it for any position)."""
    rows, heads, dim = q.shape
    q = q.contiguous()
    out = torch.empty_like(q)
    if keys.stride(3) != 1 or ancestry.stride(1) != 1:
        raise ValueError("the cache's head dimension and the ancestry's positions must be contiguous")
    if values.shape != keys.shape or values.stride() != keys.stride():  # one offset reads both
        raise ValueError("the cache's keys and values must have the same shape and strides")
    bias_arg = bias if bias is not None else q
    _attend[(rows, heads)](
        q,
        keys,
        values,
        ancestry,
        bias_arg,
        t,
        out,
        q.stride(0),
        q.stride(1),
        keys.stride(0),
        keys.stride(1),
        keys.stride(2),
        ancestry.stride(0),
        bias.stride(0) if bias is not None else 0,
        out.stride(0),
        out.stride(1),
        beams,
        float(scale),
        HAS_BIAS=bias is not None,
        HEAD_DIM=dim,
        BLOCK_D=triton.next_power_of_2(dim),
        BLOCK_N=BLOCK_N,
        num_warps=2,
    )
    return out


def attend(q, keys, values, ancestry, t, beams, bias, scale) -> torch.Tensor:
    """The kernel on CUDA where it runs (:func:`kernel_available`), else the reference."""
    if q.is_cuda and isinstance(t, torch.Tensor) and kernel_available(q.device, q.dtype):
        return kernel_attention(q, keys, values, ancestry, t, beams, bias, scale)
    return reference_attention(q, keys, values, ancestry, t, beams, bias, scale)


@functools.cache
def kernel_available(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether the kernel compiles and agrees with the reference here (checked once per device and
    dtype on random inputs; a failure is logged and the reference used)."""
    if triton is None or device.type != "cuda":
        return False
    try:
        gen = torch.Generator(device=device).manual_seed(0)
        rows, heads, max_len, dim, beams, t = 12, 3, 70, 64, 4, 66
        shape = (rows, heads, max_len, dim)
        keys = torch.randn(shape, generator=gen, device=device).to(dtype)
        values = torch.randn(shape, generator=gen, device=device).to(dtype)
        q = torch.randn((rows, heads, dim), generator=gen, device=device).to(dtype)
        ancestry = torch.randint(0, beams, (rows, max_len), generator=gen, device=device, dtype=torch.int32)
        bias = torch.randn((heads, max_len), generator=gen, device=device).to(dtype)
        position = torch.tensor(t, device=device)
        got = kernel_attention(q, keys, values, ancestry, position, beams, bias, 0.125).float()
        want = reference_attention(q, keys, values, ancestry, t, beams, bias, 0.125).float()
        error = ((got - want).norm() / want.norm()).item()
    except Exception as err:  # any compile or launch failure means: use the reference
        log.warning("static backend: the ancestry attention kernel does not run here (%s); reordering the cache", err)
        return False
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    if not error <= tolerance:
        log.warning("static backend: the ancestry attention kernel differs from the reference by %.3g", error)
        return False
    return True
