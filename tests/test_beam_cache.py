"""The decoder-only beam cache: reserved room instead of concatenation, reorders that leave the shared
prompt where it is, and the same keys and values as transformers' own cache at every step."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, Gemma3TextConfig

from spanaug.pipeline.paraphraser.beam_cache import BeamCache, ReservedLayer, ReservedSlidingLayer

SENTENCES, BEAMS, PROMPT, DIM = 2, 3, 5, 4


def _config(window: int) -> Gemma3TextConfig:
    return Gemma3TextConfig(
        num_hidden_layers=2,
        sliding_window=window,
        layer_types=["sliding_attention", "full_attention"],
        num_key_value_heads=1,
        head_dim=DIM,
    )


def _kv(rows: int, tokens: int, seed: int) -> torch.Tensor:
    return torch.randn(rows, 1, tokens, DIM, generator=torch.Generator().manual_seed(seed))


def _prompted(cache: DynamicCache) -> DynamicCache:
    """Each sentence's prompt cached once, then repeated for its beams (as the search state is built)."""
    for layer in range(2):
        cache.update(_kv(SENTENCES, PROMPT, layer), _kv(SENTENCES, PROMPT, 10 + layer), layer)
    cache.batch_repeat_interleave(BEAMS)
    return cache


def _step(cache: DynamicCache, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    rows = SENTENCES * BEAMS
    return [cache.update(_kv(rows, 1, seed + layer), _kv(rows, 1, seed + 50 + layer), layer) for layer in range(2)]


def _beam_order(seed: int) -> torch.Tensor:
    """A reorder within each sentence's beams, as beam search makes."""
    g = torch.Generator().manual_seed(seed)
    return torch.cat([s * BEAMS + torch.randint(0, BEAMS, (BEAMS,), generator=g) for s in range(SENTENCES)])


@pytest.mark.parametrize("window,sliding_reserved", [(64, True), (8, False)])
def test_a_reserved_beam_cache_holds_what_a_dynamic_cache_holds(window, sliding_reserved):
    steps = 6
    ours, theirs = _prompted(BeamCache(config=_config(window))), _prompted(DynamicCache(config=_config(window)))
    ours.share_prefix()
    assert ours.reserve(steps) == (2 if sliding_reserved else 1)
    assert isinstance(ours.layers[1], ReservedLayer)
    assert isinstance(ours.layers[0], ReservedSlidingLayer) == sliding_reserved
    prompt_keys = ours.layers[1].keys[:, :, :PROMPT].clone()
    room = ours.layers[1].room_keys.data_ptr()
    for step in range(steps):
        for (k, v), (k2, v2) in zip(_step(ours, 100 * step), _step(theirs, 100 * step), strict=True):
            assert torch.equal(k, k2) and torch.equal(v, v2)  # what attention reads
        order = _beam_order(step)
        ours.reorder_cache(order)
        theirs.reorder_cache(order)
        for a, b in zip(ours.layers, theirs.layers, strict=True):
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        assert ours.get_seq_length(0) == theirs.get_seq_length(0)
    assert ours.layers[1].room_keys.data_ptr() == room, "the room was written in place, never reallocated"
    assert torch.equal(ours.layers[1].keys[:, :, :PROMPT], prompt_keys), "the shared prompt never moved"
    keep = torch.tensor([BEAMS, BEAMS + 1, BEAMS + 2])  # the first sentence leaves the batch
    ours.batch_select_indices(keep)
    theirs.batch_select_indices(keep)
    for a, b in zip(ours.layers, theirs.layers, strict=True):
        assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)


def test_room_is_never_outgrown_silently():
    cache = _prompted(BeamCache(config=_config(64)))
    cache.share_prefix()
    cache.reserve(1)
    _step(cache, 0)
    with pytest.raises(RuntimeError, match="outgrow the 6 reserved"):
        _step(cache, 1)
