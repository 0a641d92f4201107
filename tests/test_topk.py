"""Selecting each row's k best values by chunks of the vocabulary (pipeline.paraphraser.topk)
against torch.topk: the same values, columns that hold them, and no column twice."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.pipeline.paraphraser.topk import row_topk


@st.composite
def rows_k_chunk(draw):
    chunk = draw(st.integers(1, 9))
    k = draw(st.integers(1, 6))
    vocab = draw(st.integers(1, 2 * k * chunk + 3 * chunk))  # below, at and past where chunks start
    rows = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    banned = draw(st.floats(0.0, 1.0))  # share of -inf scores (constraints, a forced first token)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((rows, 2, vocab), generator=g)
    x[torch.rand(x.shape, generator=g) < banned] = float("-inf")
    return x, min(k, vocab), chunk


@settings(max_examples=300, deadline=None)
@given(rows_k_chunk())
def test_same_values_as_topk_at_columns_that_hold_them(case):
    x, k, chunk = case
    values, cols = row_topk(x, k, chunk)
    expected = torch.topk(x, k, dim=-1).values
    assert values.shape == cols.shape == expected.shape
    assert torch.equal(values, expected)
    assert torch.equal(x.gather(-1, cols), values)
    finite = torch.isfinite(values)
    for row_cols, row_finite in zip(cols.view(-1, k), finite.view(-1, k)):
        chosen = row_cols[row_finite].tolist()
        assert len(set(chosen)) == len(chosen)


def test_chunks_are_used_once_the_vocabulary_holds_2k_of_them(monkeypatch):
    """The chunked path runs (and agrees) on a T5-sized vocabulary, and the last, shorter chunk
    counts: the best value sits in it."""
    calls = []
    real = torch.topk
    monkeypatch.setattr(torch, "topk", lambda t, k, **kw: calls.append(t.shape[-1]) or real(t, k, **kw))
    x = torch.randn(3, 32_128 + 5)
    x[1, -1] = 100.0
    values, cols = row_topk(x, 40, 128)
    assert calls == [252, 40 * 128]  # 251 full chunks and the tail; then 40 chunks' columns
    assert cols[1, 0] == 32_128 + 4
    assert torch.equal(values, real(x, 40, dim=-1).values)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_as_topk_in_float32_and_bf16_logits():
    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn((64, 20, 32_128), device="cuda", generator=g).to(dtype).float()
        values, cols = row_topk(x, 40)
        assert torch.equal(values, torch.topk(x, 40, dim=-1).values)
        assert torch.equal(x.gather(-1, cols), values)
