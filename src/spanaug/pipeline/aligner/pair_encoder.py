"""Word vectors of sentence pairs encoded together by a frozen pretrained encoder.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tqdm import tqdm

from spanaug.core.encoders import frozen_encoder


class PairEncoder:
    """Word vectors of sentence pairs, ``[CLS] S [SEP] S' [SEP]`` encoded together by an ``AutoModel``.

    A word's vector is the mean of its word pieces. ``cache`` optionally memoises the outputs
    per pair, for models that train several heads over one frozen encoder.
    """

    def __init__(self, name_or_path: str, encoder=None, tokenizer=None, device: torch.device | None = None,  # noqa: ANN001
                 max_length: int = 512, cache: dict | None = None):
        self.device = device or torch.device("cpu")
        self.max_length = max_length
        self.tokenizer, self.encoder = frozen_encoder(name_or_path, self.device, encoder, tokenizer)
        self.cache = cache

    @torch.no_grad()
    def encode_pairs(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], batch_size: int = 32,
                     progress: bool = False) -> list[tuple[torch.Tensor, torch.Tensor]]:
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

    def encode_batch(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Word vectors of one padded batch of pairs (differentiable when the encoder is tuned)."""
        src = [list(p[0]) for p in pairs]
        tgt = [list(p[1]) for p in pairs]
        enc = self.tokenizer(src, tgt, is_split_into_words=True, truncation=True,
                             max_length=self.max_length, padding=True, return_tensors="pt")
        hidden = self.encoder(**{k: v.to(self.device) for k, v in enc.items()
                                 if k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state.float()
        return [self._word_vectors(hidden[row], enc.word_ids(row), enc.sequence_ids(row), len(src[row]), len(tgt[row]))
                for row in range(len(pairs))]

    def _word_vectors(self, hidden: torch.Tensor, word_ids: list[int | None], seq_ids: list[int | None],
                      n_src: int, n_tgt: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean of each word's pieces; words cut off by truncation get zero vectors."""
        dim = hidden.shape[-1]
        slots = [(w if s == 0 else n_src + w) if w is not None and s is not None else -1
                 for w, s in zip(word_ids, seq_ids)]
        slots_t = torch.tensor(slots, device=hidden.device)
        keep = slots_t >= 0
        sums = torch.zeros(n_src + n_tgt, dim, device=hidden.device).index_add_(0, slots_t[keep], hidden[keep])
        counts = torch.zeros(n_src + n_tgt, device=hidden.device).index_add_(
            0, slots_t[keep], torch.ones(int(keep.sum()), device=hidden.device))
        vecs = sums / counts.clamp(min=1).unsqueeze(-1)
        return vecs[:n_src], vecs[n_src:]
