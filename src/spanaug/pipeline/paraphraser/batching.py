"""Decoder batches by a token budget, and the per-sentence length limit both backends apply.

A batch's decoder work and memory grow with its rows (sentences x beams or samples) times its
padded source length, so batches are filled up to ``max_batch_tokens`` = sentences x longest
source (in tokenizer ids, special tokens included) x width, after sorting by length so that
sentences of similar length share a batch and padding stays small.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

import torch

#: Default budgets (source tokens x beams). CUDA: about 2,048 decoder rows of ~50-token sources
#: (T5-base, beam 20: ~100 sentences, a few GiB of KV cache in bf16); CPU: a few sentences at
#: beam 20, where bigger batches only add padding.
DEFAULT_MAX_BATCH_TOKENS = {"cuda": 98304, "cpu": 4096}

#: Length rule when ``max_new_tokens`` is not set: ``ceil(LENGTH_RATIO * source ids) + LENGTH_EXTRA``.
LENGTH_RATIO = 1.5
LENGTH_EXTRA = 10


def default_max_batch_tokens(device: torch.device | str) -> int:
    kind = torch.device(device).type
    return DEFAULT_MAX_BATCH_TOKENS.get(kind, DEFAULT_MAX_BATCH_TOKENS["cpu"])


def length_limit(source_ids: int, max_new_tokens: int | None = None) -> int:
    """New tokens a sentence may generate: ``max_new_tokens`` when set, else the rule above
    applied to the sentence's own source length, so the batch it lands in does not matter."""
    if max_new_tokens is not None:
        return int(max_new_tokens)
    return math.ceil(LENGTH_RATIO * source_ids) + LENGTH_EXTRA


def token_budget_batches(
    lengths: Sequence[int],
    width: int,
    max_batch_tokens: int,
    max_sentences: int | None = None,
    group: Callable[[int], Hashable] | None = None,
) -> list[list[int]]:
    """Indices of ``lengths`` in batches whose ``sentences x longest x width`` fits the budget.

    Sentences are sorted by ``group(i)`` (when given: batches never mix groups) and then by length,
    longest first, so the first batch is the most expensive one (an out-of-memory error shows up
    at once). A sentence over the budget on its own forms its own batch. ``max_sentences`` caps
    the sentences of a batch.
    """
    if max_batch_tokens < 1 or width < 1:
        raise ValueError("max_batch_tokens and width must be positive")
    order = sorted(range(len(lengths)), key=lambda i: (group(i) if group else 0, -lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    key = None
    for i in order:
        k = group(i) if group else None
        grown = max(longest, lengths[i])
        fits = (len(current) + 1) * grown * width <= max_batch_tokens
        if current and (k != key or not fits or (max_sentences and len(current) >= max_sentences)):
            batches.append(current)
            current, grown = [], lengths[i]
        current.append(i)
        longest, key = grown, k
    if current:
        batches.append(current)
    return batches
