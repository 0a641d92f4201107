"""Selecting each row's k best values by chunks of the vocabulary (pipeline.paraphraser.topk)
against torch.topk: the same values, columns that hold them, and no column twice."""

import pytest
import torch
from hypothesis import example, given, settings
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


def _one_finite_per_row() -> tuple[torch.Tensor, int, int]:
    """CI's counterexample: fewer finite values than k (a forced first token, heavy constraints)
    in a vocabulary with a tail past its last full chunk; -inf ties once chose columns past it."""
    x = torch.full((1, 2, 25), float("-inf"))
    x[0, 0, [5, 11, 18]] = torch.tensor([-0.2868, -0.2226, -0.5145])
    x[0, 1, 2] = -1.1952
    return x, 5, 2


@settings(max_examples=300, deadline=None)
@given(rows_k_chunk())
@example(_one_finite_per_row())
def test_same_values_as_topk_at_columns_that_hold_them(case):
    x, k, chunk = case
    values, cols = row_topk(x, k, chunk)
    expected = torch.topk(x, k, dim=-1).values
    assert values.shape == cols.shape == expected.shape
    assert torch.equal(values, expected)
    assert bool(((cols >= 0) & (cols < x.shape[-1])).all())
    assert torch.equal(x.gather(-1, cols), values)
    for row_cols in cols.view(-1, k):
        assert len(set(row_cols.tolist())) == k  # no column twice, -inf ones included


def test_chunks_are_used_once_the_vocabulary_holds_2k_of_them(monkeypatch):
    """The chunked path runs (and agrees) on a T5-sized vocabulary, and the last, shorter chunk
    counts: the best value sits in it."""
    calls = []
    real = torch.topk
    monkeypatch.setattr(torch, "topk", lambda t, k, **kw: calls.append(t.shape[-1]) or real(t, k, **kw))
    x = torch.randn(3, 32_128 + 5)
    x[1, -1] = 100.0
    values, cols = row_topk(x, 40, 128)
    assert calls == [251, 40 * 128 + 5]  # 251 full chunks; then 40 chunks' columns and the tail
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
