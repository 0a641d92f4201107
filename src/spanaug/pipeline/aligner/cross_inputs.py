"""Inputs of the cross-encoder aligner: a marked sentence pair within the encoder's limit, batches of
them with their candidate spans, and the label distribution over the null option and the candidates.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from spanaug.core.errors import ConfigError
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.model import candidate_spans


@dataclasses.dataclass
class Encoded:
    """One instance as encoder input: piece ids, and where its target words and marked span are."""

    ids: list[int]
    types: list[int]
    #: [start, end) piece positions of each scored target word (all of them unless truncated).
    target_words: list[tuple[int, int]]
    #: Positions of the two markers.
    marked: tuple[int, int]
    #: [start, end) piece positions of the source span's words.
    source_words: list[tuple[int, int]]
    source_len: int
    n_target: int
    source_windowed: bool = False

    @property
    def target_truncated(self) -> bool:
        return len(self.target_words) < self.n_target


class PairTemplate:
    """The special tokens a tokenizer puts around a sentence pair, found by encoding a probe pair."""

    def __init__(self, tokenizer: Any):
        probe = tokenizer("a", "b")
        ids = list(probe["input_ids"])
        types = list(probe.get("token_type_ids") or [0] * len(ids))
        a = tokenizer("a", add_special_tokens=False)["input_ids"]
        b = tokenizer("b", add_special_tokens=False)["input_ids"]
        if len(a) != 1 or len(b) != 1 or a == b:
            raise ConfigError("cannot find the pair template of this tokenizer (probe words 'a' and 'b')")
        ia = ids.index(a[0])
        ib = ia + 1 + ids[ia + 1 :].index(b[0])
        self.prefix, self.middle, self.suffix = ids[:ia], ids[ia + 1 : ib], ids[ib + 1 :]
        self.prefix_types, self.middle_types, self.suffix_types = types[:ia], types[ia + 1 : ib], types[ib + 1 :]
        self.source_type, self.target_type = types[ia], types[ib]
        self.n_special = len(ids) - 2


class Encoder:
    """Word pieces of sentences (memoised) and the assembly of marked pair inputs within ``max_length``."""

    def __init__(self, tokenizer: Any, markers: tuple[int, int], max_length: int):
        self.tokenizer = tokenizer
        self.markers = markers
        self.max_length = max_length
        self.template = PairTemplate(tokenizer)
        self._pieces: dict[tuple[str, ...], list[list[int]]] = {}

    def pieces(self, words: Sequence[str]) -> list[list[int]]:
        key = tuple(words)
        if key not in self._pieces:
            if len(self._pieces) > 200_000:
                self._pieces.clear()
            ids = self.tokenizer(list(words), add_special_tokens=False)["input_ids"]
            unk = self.tokenizer.unk_token_id
            self._pieces[key] = [p if p else [unk] for p in ids]
        return self._pieces[key]

    def encode(self, inst: Instance) -> Encoded | None:
        """The marked pair; the source narrowed to a window and the target cut only if needed.

        None when not even one target word fits beside the marked span.
        """
        t = self.template
        src, tgt = self.pieces(inst.source_tokens), self.pieces(inst.target_tokens)
        s, e = inst.source_span
        budget = self.max_length - t.n_special - 2
        span_len = sum(len(p) for p in src[s : e + 1])
        tgt_len = sum(len(p) for p in tgt)
        lo, hi = 0, len(src) - 1
        src_len = sum(len(p) for p in src)
        # Narrow the source around the span, dropping its farthest word, until the target fits.
        while src_len + tgt_len > budget and (lo < s or hi > e):
            if hi > e and (hi - e >= s - lo or lo == s):
                src_len -= len(src[hi])
                hi -= 1
            else:
                src_len -= len(src[lo])
                lo += 1
        n_words = len(tgt)
        while src_len + tgt_len > budget and n_words > 0:
            n_words -= 1
            tgt_len -= len(tgt[n_words])
        if n_words == 0 or span_len > budget:
            return None
        ids, types = list(t.prefix), list(t.prefix_types)
        source_words = []
        for w in range(lo, hi + 1):
            if w == s:
                marked_start = len(ids)
                ids.append(self.markers[0])
            if s <= w <= e:
                source_words.append((len(ids), len(ids) + len(src[w])))
            ids.extend(src[w])
            if w == e:
                marked_end = len(ids)
                ids.append(self.markers[1])
        types.extend([t.source_type] * (len(ids) - len(types)))
        ids.extend(t.middle)
        types.extend(t.middle_types)
        target_words = []
        for w in range(n_words):
            target_words.append((len(ids), len(ids) + len(tgt[w])))
            ids.extend(tgt[w])
        types.extend([t.target_type] * (len(ids) - len(types)))
        ids.extend(t.suffix)
        types.extend(t.suffix_types)
        return Encoded(
            ids,
            types,
            target_words,
            (marked_start, marked_end),
            source_words,
            e - s + 1,
            len(tgt),
            source_windowed=(lo, hi) != (0, len(src) - 1),
        )


@dataclasses.dataclass
class Batch:
    ids: torch.Tensor  # [B, T]
    types: torch.Tensor
    mask: torch.Tensor
    word_pool: torch.Tensor  # [B, W, T]: each target word's pieces (first, or mean)
    query_pool: torch.Tensor  # [B, T]: the marked span, markers included, averaged
    source_pool: torch.Tensor  # [B, T]: the source span's words (first piece, or mean), averaged
    item: torch.Tensor  # [C] item of each candidate
    cands: torch.Tensor  # [C, 2] word indices
    length_diff: torch.Tensor  # [C]
    counts: list[int]  # candidates per item


@functools.lru_cache(maxsize=4096)
def _candidates(n_target: int, source_len: int, k: int) -> np.ndarray:
    """``candidate_spans`` as a read-only array, memoised: batches repeat the same few shapes."""
    out = candidate_spans(n_target, source_len, k).numpy()
    out.flags.writeable = False
    return out


def collate(encs: Sequence[Encoded], k: int, pooling: str, pad_id: int, device: torch.device) -> Batch:
    # Built in numpy with one scatter per pool, then moved at once: on a GPU the host's time per pair,
    # not the encoder's, bounds the pairs per second (a tensor write per word cost ~0.2 ms a pair).
    n, length = len(encs), max(len(x.ids) for x in encs)
    n_words = max(len(x.target_words) for x in encs)
    ids = np.full((n, length), pad_id, dtype=np.int64)
    types = np.zeros((n, length), dtype=np.int64)
    mask = np.zeros((n, length), dtype=np.int64)
    for row, x in enumerate(encs):
        ids[row, : len(x.ids)] = x.ids
        types[row, : len(x.types)] = x.types
        mask[row, : len(x.ids)] = 1
    word_pool = np.zeros((n, n_words, length), dtype=np.float32)
    word_pool[_pool_index(encs, pooling)] = _pool_values(encs, pooling)
    query_pool = np.zeros((n, length), dtype=np.float32)
    source_pool = np.zeros((n, length), dtype=np.float32)
    for row, x in enumerate(encs):
        m0, m1 = x.marked
        query_pool[row, m0 : m1 + 1] = 1.0 / (m1 - m0 + 1)
        for a, b in x.source_words:
            if pooling == "first":
                source_pool[row, a] = 1.0 / len(x.source_words)
            else:
                source_pool[row, a:b] = 1.0 / ((b - a) * len(x.source_words))
    cand_parts = [_candidates(len(x.target_words), x.source_len, k) for x in encs]
    counts = [len(c) for c in cand_parts]
    cands = np.concatenate(cand_parts) if cand_parts else np.zeros((0, 2), dtype=np.int64)
    items = np.repeat(np.arange(n), counts)
    source_len = np.repeat(np.array([x.source_len for x in encs]), counts)
    diffs = (cands[:, 1] - cands[:, 0] + 1) - source_len + k
    return Batch(
        *(torch.from_numpy(a).to(device) for a in (ids, types, mask, word_pool, query_pool, source_pool)),
        torch.from_numpy(items).long().to(device),
        torch.from_numpy(cands).long().to(device),
        torch.from_numpy(diffs).long().to(device),
        counts,
    )


def _pool_index(encs: Sequence[Encoded], pooling: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, word, piece) of every weight of the word pool: each target word's first piece, or all of them."""
    rows, words, pieces = [], [], []
    for row, x in enumerate(encs):
        for w, (a, b) in enumerate(x.target_words):
            span = range(a, a + 1) if pooling == "first" else range(a, b)
            rows.extend([row] * len(span))
            words.extend([w] * len(span))
            pieces.extend(span)
    return np.array(rows, dtype=np.int64), np.array(words, dtype=np.int64), np.array(pieces, dtype=np.int64)


def _pool_values(encs: Sequence[Encoded], pooling: str) -> np.ndarray | float:
    """The word pool's weights in ``_pool_index``'s order: 1 (first piece), or 1 / the word's pieces."""
    if pooling == "first":
        return 1.0
    return np.array([1.0 / (b - a) for x in encs for a, b in x.target_words for _ in range(a, b)], dtype=np.float32)


def padded_logits(span: torch.Tensor, null: torch.Tensor, counts: Sequence[int]) -> torch.Tensor:
    """[B, 1 + max C] logits, null first, padding at -inf."""
    out = span.new_full((len(counts), 1 + max(counts, default=0)), float("-inf"))
    out[:, 0] = null
    offset = 0
    for row, c in enumerate(counts):
        out[row, 1 : 1 + c] = span[offset : offset + c]
        offset += c
    return out


def target_distribution(cands: torch.Tensor, gold: tuple[int, int] | None, loss: str) -> tuple[torch.Tensor, bool]:
    """The label distribution over [null] + candidates, and whether the gold span is a candidate.

    A gold span outside the candidates (longer or shorter than ``k`` allows) is taught by its soft
    labels even under the hard loss.
    """
    out = torch.zeros(1 + cands.shape[0])
    if gold is None:
        out[0] = 1.0
        return out, True
    dist = (cands[:, 0] - gold[0]).abs() + (cands[:, 1] - gold[1]).abs()
    exact = dist == 0
    found = bool(exact.any())
    if loss == "hard" and found:
        out[1:] = exact.float()
    elif len(dist):
        weights = torch.pow(2.0, -dist.float())
        out[1:] = weights / weights.sum()
    else:
        out[0] = 1.0
    return out, found


def split_scores(batch: Batch, logits: torch.Tensor, idx: Sequence[int], out: list[Any]) -> None:
    """Store each batch row's (candidates [C, 2], logits [1 + C], null first) at ``out[idx[row]]``."""
    logits, cands = logits.cpu(), batch.cands.cpu()
    offset = 0
    for row, (n, c) in enumerate(zip(idx, batch.counts)):
        out[n] = (cands[offset : offset + c], logits[row, : 1 + c])
        offset += c
