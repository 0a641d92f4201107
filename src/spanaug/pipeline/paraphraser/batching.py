"""Decoder batches by a token budget.

A batch's decoder work and memory grow with its rows (sentences x beams or samples) times its
padded source length, so batches are filled up to ``max_batch_tokens`` = sentences x longest
source (in tokenizer ids, special tokens included) x width, after sorting by length so that
sentences of similar length share a batch and padding stays small.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch

from spanaug.pipeline.paraphraser.search_spec import LENGTH_RATIO

#: Default budgets (source tokens x beams) where the card's memory is not measured: CPU, a few
#: sentences at beam 20, where bigger batches only add padding (also the floor of a GPU's budget);
#: CUDA, when its free memory cannot be read (about 2,048 decoder rows of ~50-token sources).
DEFAULT_MAX_BATCH_TOKENS = {"cuda": 98304, "cpu": 4096}

#: Share of the card's free memory a batch's estimated decoder state may take: the rest is for what the
#: estimate leaves out (attention scores, feed-forward activations, beam bookkeeping, fragmentation).
FREE_MEMORY_SHARE = 0.5
#: Budget cap on any card: past it, batches decode no faster and one batch would take minutes.
MAX_BATCH_TOKENS_CAP = 1 << 20
#: Source tokens per sentence the logits' cost is spread over (it is per decoder row, not per token):
#: a short sentence, so that batches of short sentences fit too.
SHORT_SOURCE = 16
#: Copies of a row's logits alive at once (the logits, their log-softmax, the processors' mask, the
#: beam scores), in float32.
LOGIT_COPIES = 4
#: The model the estimate assumes when it is not given (the ct2 backend): T5-base's decoder.
ASSUMED_MODEL = {"d_model": 768, "decoder_layers": 12, "vocab_size": 32128}


def bytes_per_batch_token(
    model_config: Any = None, dtype: torch.dtype | None = None, shared_by: int | None = None
) -> int:
    """Estimated GPU memory of one budget unit (one source token of one beam) while decoding: the
    encoder's states and the cross-attention keys and values of every decoder layer, repeated per
    beam (``generate``), or once per sentence, shared by its ``shared_by`` rows (the static engine);
    the self-attention keys and values over LENGTH_RATIO new tokens per source token; the caches
    twice over, as beam search reorders (or compacts) them into a copy. Plus the row's float32 logits
    over the vocabulary, spread over a short source."""
    width = _config_value(model_config, ("d_model", "hidden_size"), ASSUMED_MODEL["d_model"])
    # T5's attention width (heads x d_kv) may differ from its model width.
    heads, d_kv = (_config_value(model_config, (name,), 0) for name in ("num_heads", "d_kv"))
    kv_width = heads * d_kv or width
    layers = _config_value(
        model_config, ("decoder_layers", "num_decoder_layers", "num_layers"), ASSUMED_MODEL["decoder_layers"]
    )
    vocab = _config_value(model_config, ("vocab_size",), ASSUMED_MODEL["vocab_size"])
    size = (dtype or torch.float32).itemsize
    self_cache = 2 * layers * kv_width * LENGTH_RATIO  # keys and values over the new tokens
    cross = 2 * layers * kv_width
    # Per sentence (shared_by), the encoder's states and the cross-attention are never reordered.
    states = 2 * self_cache + (width + cross) / shared_by if shared_by else width + 2 * (self_cache + cross)
    logits = LOGIT_COPIES * vocab * torch.float32.itemsize / SHORT_SOURCE
    return int(states * size + logits)


def _config_value(config: Any, names: tuple[str, ...], default: int) -> int:
    """The first of ``names`` a model config sets (configs name the same thing differently)."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return default


def default_max_batch_tokens(
    device: torch.device | str, model_config: Any = None, dtype: torch.dtype | None = None, shared_by: int | None = None
) -> int:
    """The decode budget (source tokens x beams) when ``max_batch_tokens`` is not set: on CUDA, a share
    of the card's free memory (what the caching allocator holds unused counts as free) over
    :func:`bytes_per_batch_token` of the model (``shared_by`` as there), between the CPU budget and
    MAX_BATCH_TOKENS_CAP; elsewhere the CPU budget. A batch that still runs out is split (core.oom)."""
    device = torch.device(device)
    if device.type != "cuda":
        return DEFAULT_MAX_BATCH_TOKENS["cpu"]
    try:
        free, _total = torch.cuda.mem_get_info(device)
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    except (RuntimeError, AssertionError):  # no CUDA runtime to ask (a device named but unusable)
        return DEFAULT_MAX_BATCH_TOKENS["cuda"]
    budget = int(FREE_MEMORY_SHARE * free) // bytes_per_batch_token(model_config, dtype, shared_by)
    return max(DEFAULT_MAX_BATCH_TOKENS["cpu"], min(MAX_BATCH_TOKENS_CAP, budget))


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
