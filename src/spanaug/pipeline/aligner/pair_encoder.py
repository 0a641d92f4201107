"""Word vectors of sentence pairs encoded together by a frozen pretrained encoder."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

import torch
from tqdm import tqdm

from spanaug.core.aligner_settings import AlignerConfig
from spanaug.core.encoders import frozen_encoder, piece_limit, visible_words, windows
from spanaug.core.settings import default_of

log = logging.getLogger(__name__)


class PairEncoder:
    """Word vectors of sentence pairs, ``[CLS] S [SEP] S' [SEP]`` encoded together by an ``AutoModel``.

    A word's vector is the mean of its word pieces. ``cache`` optionally memoises the outputs
    per pair, for models that train several heads over one frozen encoder.
    """

    def __init__(
        self,
        name_or_path: str,
        encoder=None,
        tokenizer=None,
        device: torch.device | None = None,
        max_length: int = default_of(AlignerConfig, "max_length"),
        cache: dict | None = None,
    ):
        self.device = device or torch.device("cpu")
        self.max_length = max_length
        self.tokenizer, self.encoder = frozen_encoder(name_or_path, self.device, encoder, tokenizer)
        self.cache = cache
        self.windowed = 0  # pairs too long to encode together (see encode_batch)

    @torch.no_grad()
    def encode_pairs(
        self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], batch_size: int = 32, progress: bool = False
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Word vectors of each (source, target) pair, encoded together; length-sorted batches."""
        if self.cache is not None:
            todo = [p for p in dict.fromkeys((tuple(a), tuple(b)) for a, b in pairs) if p not in self.cache]
            if todo:
                cache, self.cache = self.cache, None
                try:
                    cache.update(zip(todo, self.encode_pairs(todo, batch_size, progress)))
                finally:
                    self.cache = cache
            return [self.cache[(tuple(p[0]), tuple(p[1]))] for p in pairs]
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(pairs)
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        for idx in tqdm(batches, desc="encode", unit="batch", disable=not progress):
            for i, vecs in zip(idx, self.encode_batch([pairs[i] for i in idx])):
                out[i] = vecs
        return out  # type: ignore[return-value]

    @functools.cached_property
    def limit(self) -> int:
        """The most word pieces one input may have (``max_length``, the tokenizer's, the encoder's)."""
        return piece_limit(self.tokenizer, self.encoder, self.max_length)

    def encode_batch(
        self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Word vectors of one padded batch of pairs (differentiable when the encoder is tuned).

        No word is left without a vector: a word the tokenizer drops is read as the unknown token,
        and a pair longer than the encoder's limit, which truncation would cut (its last words
        getting zero vectors), is encoded one sentence at a time, in windows when a sentence alone
        is too long. Such pairs are counted in ``windowed`` and logged.
        """
        src, tgt, lengths = visible_words(self.tokenizer, [list(p[0]) for p in pairs], [list(p[1]) for p in pairs])
        joint = [k for k, n in enumerate(lengths) if n <= self.limit]
        out: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(pairs)
        if joint:
            enc = self.tokenizer(
                [src[k] for k in joint],
                [tgt[k] for k in joint],
                is_split_into_words=True,
                truncation=True,
                max_length=self.limit,
                padding=True,
                return_tensors="pt",
            )
            hidden = self._hidden(enc)
            for row, k in enumerate(joint):
                out[k] = self._word_vectors(
                    hidden[row], enc.word_ids(row), enc.sequence_ids(row), len(src[k]), len(tgt[k])
                )
        long = [k for k in range(len(pairs)) if out[k] is None]
        if long:
            self.windowed += len(long)
            log.warning(
                "%d sentence pair(s) longer than the encoder's %d word pieces (up to %d): each sentence "
                "encoded on its own, in windows when it is too long by itself",
                len(long),
                self.limit,
                max(lengths[k] for k in long),
            )
            for k in long:
                out[k] = (self._alone(src[k]), self._alone(tgt[k]))
        return out  # type: ignore[return-value]

    def _hidden(self, enc: Any) -> torch.Tensor:
        return self.encoder(
            **{k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        ).last_hidden_state.float()

    def _alone(self, words: list[str]) -> torch.Tensor:
        """Word vectors of one sentence encoded by itself, window by window."""
        parts = []
        for start, end in windows(self.tokenizer, words, self.limit):
            enc = self.tokenizer(
                [words[start:end]],
                is_split_into_words=True,
                truncation=True,
                max_length=self.limit,
                return_tensors="pt",
            )
            hidden = self._hidden(enc)[0]
            seq = [0 if w is not None else None for w in enc.word_ids(0)]
            parts.append(self._word_vectors(hidden, enc.word_ids(0), seq, end - start, 0)[0])
        return torch.cat(parts)

    def _word_vectors(
        self, hidden: torch.Tensor, word_ids: list[int | None], seq_ids: list[int | None], n_src: int, n_tgt: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean of each word's pieces (every word has one: see ``encode_batch``)."""
        dim = hidden.shape[-1]
        slots = [
            (w if s == 0 else n_src + w) if w is not None and s is not None else -1 for w, s in zip(word_ids, seq_ids)
        ]
        slots_t = torch.tensor(slots, device=hidden.device)
        keep = slots_t >= 0
        sums = torch.zeros(n_src + n_tgt, dim, device=hidden.device).index_add_(0, slots_t[keep], hidden[keep])
        counts = torch.zeros(n_src + n_tgt, device=hidden.device).index_add_(
            0, slots_t[keep], torch.ones(int(keep.sum()), device=hidden.device)
        )
        vecs = sums / counts.clamp(min=1).unsqueeze(-1)
        return vecs[:n_src], vecs[n_src:]
