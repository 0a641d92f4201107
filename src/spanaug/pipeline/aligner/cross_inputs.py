"""Inputs of the cross-encoder aligner: a marked sentence pair within the encoder's limit, batches of
them with their candidate spans, and the label distribution over the null option and the candidates.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterable, Sequence
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


def word_pieces(tokenizer: Any, words: list[str]) -> list[list[int]]:
    """The pieces of each word encoded alone, without special tokens: ``tokenizer(words,
    add_special_tokens=False)["input_ids"]``, through the Rust tokenizer of a fast one.

    transformers' own call converts every encoding to Python in Python (a third of its time per word);
    the Rust tokenizer's ids are the same once it is set as that call sets it: no padding, no
    truncation (a tokenizer.json may carry both: all-MiniLM-L6-v2's pads every text to 128), and
    special tokens split or not as the tokenizer says.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is None:
        return tokenizer(words, add_special_tokens=False)["input_ids"]
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if getattr(backend, "encode_special_tokens", split) != split:
        backend.encode_special_tokens = split
    return [e.ids for e in backend.encode_batch(words, add_special_tokens=False)]


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


#: Words whose pieces ``Encoder`` keeps before it starts afresh: a paraphrase chain's vocabulary (tens of
#: thousands of words) many times over, at about 100 bytes a word.
WORD_CACHE_SIZE = 500_000


class Encoder:
    """Word pieces of words (memoised) and the assembly of marked pair inputs within ``max_length``."""

    def __init__(self, tokenizer: Any, markers: tuple[int, int], max_length: int):
        self.tokenizer = tokenizer
        self.markers = markers
        self.max_length = max_length
        self.template = PairTemplate(tokenizer)
        # Per word, not per sentence: every new paraphrase beam is a new sentence of known words.
        self._words: dict[str, list[int]] = {}

    def prepare(self, instances: Iterable[Instance]) -> None:
        """Tokenize every word of ``instances`` not yet seen, in one call (``encode`` then only looks up)."""
        sentences = itertools.chain.from_iterable((inst.source_tokens, inst.target_tokens) for inst in instances)
        self._learn(dict.fromkeys(itertools.chain.from_iterable(sentences)))

    def pieces(self, words: Sequence[str]) -> list[list[int]]:
        """Each word's pieces, as the tokenizer gives them for the word alone; ``[unk]`` for none."""
        try:
            return [self._words[w] for w in words]
        except KeyError:
            self._learn(words)
            return [self._words[w] for w in words]

    def _learn(self, words: Iterable[str]) -> None:
        """Add the unseen of ``words`` to the cache, which starts afresh (keeping ``words``) when full."""
        words = list(dict.fromkeys(words))
        new = [w for w in words if w not in self._words]
        if not new:
            return
        if len(self._words) + len(new) > WORD_CACHE_SIZE:
            self._words, new = {}, words
        unk = self.tokenizer.unk_token_id
        for word, ids in zip(new, word_pieces(self.tokenizer, new)):
            self._words[word] = ids if ids else [unk]

    def encode(self, inst: Instance) -> Encoded | None:
        """The marked pair; the source narrowed to a window and the target cut only if needed.

        None when not even one target word fits beside the marked span.
        """
        t = self.template
        src, tgt = self.pieces(inst.source_tokens), self.pieces(inst.target_tokens)
        src_lens, tgt_lens = list(map(len, src)), list(map(len, tgt))
        s, e = inst.source_span
        fit = _fit(src_lens, tgt_lens, s, e, self.max_length - t.n_special - 2)
        if fit is None:
            return None
        lo, hi, n_words = fit
        # Whole slices of pieces at a time: a word at a time (append, extend, span) cost more than the lookups.
        ids = [*t.prefix, *itertools.chain.from_iterable(src[lo:s]), self.markers[0]]
        marked_start = len(ids) - 1
        source_words = _word_spans(len(ids), src_lens[s : e + 1])
        ids.extend(itertools.chain.from_iterable(src[s : e + 1]))
        marked_end = len(ids)
        ids.append(self.markers[1])
        ids.extend(itertools.chain.from_iterable(src[e + 1 : hi + 1]))
        types = [*t.prefix_types, *[t.source_type] * (len(ids) - len(t.prefix_types)), *t.middle_types]
        ids.extend(t.middle)
        target_words = _word_spans(len(ids), tgt_lens[:n_words])
        ids.extend(itertools.chain.from_iterable(tgt[:n_words]))
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


def _fit(src_lens: list[int], tgt_lens: list[int], s: int, e: int, budget: int) -> tuple[int, int, int] | None:
    """The source window [lo, hi] and the target words kept (a prefix) within ``budget`` pieces, given the
    pieces per word and the span [s, e]; None when not even one target word fits beside the span."""
    tgt_len, src_len = sum(tgt_lens), sum(src_lens)
    lo, hi = 0, len(src_lens) - 1
    # Narrow the source around the span, dropping its farthest word, until the target fits.
    while src_len + tgt_len > budget and (lo < s or hi > e):
        if hi > e and (hi - e >= s - lo or lo == s):
            src_len -= src_lens[hi]
            hi -= 1
        else:
            src_len -= src_lens[lo]
            lo += 1
    n_words = len(tgt_lens)
    while src_len + tgt_len > budget and n_words > 0:
        n_words -= 1
        tgt_len -= tgt_lens[n_words]
    if n_words == 0 or sum(src_lens[s : e + 1]) > budget:
        return None
    return lo, hi, n_words


def _word_spans(start: int, lens: list[int]) -> list[tuple[int, int]]:
    """[start, end) piece positions of consecutive words of ``lens`` pieces from ``start``."""
    return list(itertools.pairwise(itertools.accumulate(lens, initial=start)))


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
    host_cands: torch.Tensor | None = None  # cands on the host, where the scores are read


@functools.lru_cache(maxsize=4096)
def _candidates(n_target: int, source_len: int, k: int) -> np.ndarray:
    """``candidate_spans`` as a read-only array, memoised: batches repeat the same few shapes."""
    out = candidate_spans(n_target, source_len, k).numpy()
    out.flags.writeable = False
    return out


def collate(encs: Sequence[Encoded], k: int, pooling: str, pad_id: int, device: torch.device) -> Batch:
    # Built in numpy from flat arrays, one scatter per array and no loop per word or piece, then moved
    # at once: on a GPU the host's time per pair, not the encoder's, bounds the pairs per second.
    n = len(encs)
    lengths = np.array([len(x.ids) for x in encs], dtype=np.int64)
    filled = np.arange(lengths.max()) < lengths[:, None]  # row-major order is the order of x.ids
    ids = np.full(filled.shape, pad_id, dtype=np.int64)
    ids[filled] = _flat(x.ids for x in encs)
    types = np.zeros(filled.shape, dtype=np.int64)
    types[filled] = _flat(x.types for x in encs)  # as long as x.ids
    mask = filled.astype(np.int64)
    word_pool = _word_pool(encs, pooling, filled.shape[1], device)
    query_pool, source_pool = _span_pools(encs, pooling, filled.shape[1])
    cand_parts = [_candidates(len(x.target_words), x.source_len, k) for x in encs]
    counts = [len(c) for c in cand_parts]
    cands = np.concatenate(cand_parts) if cand_parts else np.zeros((0, 2), dtype=np.int64)
    items = np.repeat(np.arange(n), counts)
    source_len = np.repeat(np.array([x.source_len for x in encs]), counts)
    diffs = (cands[:, 1] - cands[:, 0] + 1) - source_len + k
    ids, types, mask, query_pool, source_pool, items, device_cands, diffs = (
        to_device(a, device) for a in (ids, types, mask, query_pool, source_pool, items, cands, diffs)
    )
    host_cands = torch.from_numpy(cands)
    return Batch(ids, types, mask, word_pool, query_pool, source_pool, items, device_cands, diffs, counts, host_cands)


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` on ``device``. To a GPU from pinned memory, without waiting: a blocking copy waits
    for all the work queued before it (the previous batch's encoder), so the GPU would sit idle
    while the host builds the next batch."""
    tensor = torch.from_numpy(array)
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


def _flat(rows: Iterable[Sequence[int]]) -> np.ndarray:
    """The rows' integers one after another."""
    return np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64)


def _flat_spans(rows: Iterable[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) arrays of the rows' spans one after another, and the row of each."""
    rows = list(rows)
    counts = [len(r) for r in rows]
    spans = _flat(itertools.chain.from_iterable(rows)).reshape(-1, 2)
    return spans, np.repeat(np.arange(len(rows)), counts)


def _ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the ranges [start, end): (range of each, position), ranges in order."""
    widths = ends - starts
    which = np.repeat(np.arange(len(starts)), widths)
    offsets = starts - (np.cumsum(widths) - widths)  # a position is its index in the output plus this
    return which, np.arange(len(which)) + offsets[which]


def _word_pool(encs: Sequence[Encoded], pooling: str, length: int, device: torch.device) -> torch.Tensor:
    """[B, W, T]: weight 1 on each target word's first piece, or 1 / its pieces on each of them.

    Written on ``device`` from its nonzero weights' index: the pool is mostly zeros (a few MB a batch
    to send to a GPU), its index a few KB.
    """
    spans, rows = _flat_spans(x.target_words for x in encs)
    counts = np.array([len(x.target_words) for x in encs], dtype=np.int64)
    words = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    if pooling == "first":
        index, values = (rows, words, spans[:, 0]), np.ones(len(rows), dtype=np.float32)
    else:
        which, pieces = _ranges(spans[:, 0], spans[:, 1])
        index = (rows[which], words[which], pieces)
        values = (1.0 / (spans[:, 1] - spans[:, 0]))[which].astype(np.float32)
    pool = torch.zeros((len(encs), int(counts.max()), length), dtype=torch.float32, device=device)
    flat = np.ravel_multi_index(index, pool.shape)
    pool.view(-1)[to_device(flat, device)] = to_device(values, device)
    return pool


def _span_pools(encs: Sequence[Encoded], pooling: str, length: int) -> tuple[np.ndarray, np.ndarray]:
    """[B, T] each: the mean over the marked span, markers included; and over the source span's words
    (each word its first piece, or the mean of its pieces)."""
    n = len(encs)
    marked = np.array([x.marked for x in encs], dtype=np.int64).reshape(n, 2)
    query = np.zeros((n, length), dtype=np.float32)
    which, pos = _ranges(marked[:, 0], marked[:, 1] + 1)
    query[which, pos] = (1.0 / (marked[:, 1] - marked[:, 0] + 1))[which]
    spans, rows = _flat_spans(x.source_words for x in encs)
    n_words = np.array([len(x.source_words) for x in encs], dtype=np.int64)[rows]
    source = np.zeros((n, length), dtype=np.float32)
    if pooling == "first":
        source[rows, spans[:, 0]] = 1.0 / n_words
    else:
        which, pos = _ranges(spans[:, 0], spans[:, 1])
        source[rows[which], pos] = (1.0 / ((spans[:, 1] - spans[:, 0]) * n_words))[which]
    return query, source


def padded_logits(span: torch.Tensor, null: torch.Tensor, item: torch.Tensor, counts: Sequence[int]) -> torch.Tensor:
    """[B, 1 + max C] logits, null first, padding at -inf; ``item`` [C] is each candidate's row (ascending)."""
    out = span.new_full((len(counts), 1 + max(counts, default=0)), float("-inf"))
    out[:, 0] = null
    # One scatter, not a write per row (each a kernel launch on a GPU), and its index made where the
    # logits are: an index sent from the host would wait for the encoder's forward to finish.
    first = torch.searchsorted(item, item)  # the row's first candidate
    out[item, 1 + torch.arange(len(item), device=item.device) - first] = span
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


class Readback:
    """A batch's logits on their way to the host: from a GPU into pinned memory without waiting, so
    the host can build and launch the next batch meanwhile; :meth:`store` waits for them."""

    def __init__(self, batch: Batch, logits: torch.Tensor, idx: Sequence[int]):
        self.idx, self.counts = list(idx), batch.counts
        self.cands = batch.host_cands if batch.host_cands is not None else batch.cands.cpu()
        self.ready: torch.cuda.Event | None = None
        if logits.is_cuda:
            self.logits = torch.empty(logits.shape, dtype=logits.dtype, pin_memory=True)
            self.logits.copy_(logits, non_blocking=True)
            self.ready = torch.cuda.Event()
            self.ready.record()
        else:
            self.logits = logits

    def store(self, out: list[Any]) -> None:
        """Store each batch row's (candidates [C, 2], logits [1 + C], null first) at ``out[idx[row]]``."""
        if self.ready is not None:
            self.ready.synchronize()
        for n, part, row, c in zip(self.idx, self.cands.split(self.counts), self.logits, self.counts):
            out[n] = (part, row[: 1 + c])


def split_scores(batch: Batch, logits: torch.Tensor, idx: Sequence[int], out: list[Any]) -> None:
    """Store each batch row's (candidates [C, 2], logits [1 + C], null first) at ``out[idx[row]]``."""
    Readback(batch, logits, idx).store(out)
