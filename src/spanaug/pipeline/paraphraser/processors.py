"""Per-sentence constraints and length limits for ``generate``: a logits processor that runs on
the device, its host-side reference, and a per-sentence stopping criterion.

Each sentence of a decoder batch has its own banned sequences (``bad_words_ids`` semantics: a
sequence's last token is forbidden once the tokens before it end the row's history; a sequence of
one token is always forbidden). Rows of the batch belong to sentences in equal blocks (the beams or
samples of one input), so row ``r`` obeys sentence ``r // rows_per_sentence``.

:class:`TensorBannedSequences` builds, once per batch, one padded table of every sentence's
sequences: their prefixes right-aligned in ``P`` columns (the longest prefix), the columns before a
shorter prefix left open, and their last tokens. A step compares each row's last ``P`` tokens with
its sentence's prefixes in one broadcast and lowers the scores of the banned last tokens in one
``scatter_reduce``: no host copy of the history, no Python loop over rows or sequence lengths, no
host synchronisation, and a dozen kernels whatever the sets hold (grouping the sequences by length
took about ten kernels a length, and iteration 10's sets have some fifteen lengths).
:class:`ReferenceBannedSequences` is the straightforward processor it replaces (host copy of the
history, a Python walk over rows); it is kept as the reference for tests and benchmarks.

Per step, with ``R`` rows, ``K`` sequences for the sentence with the most of them and ``P`` the
longest prefix: ``R * K * P`` token comparisons and one write of ``R * K`` scores; no
``R x vocab`` mask is allocated, and the scores are modified in place.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np
import torch
from transformers import LogitsProcessor, StoppingCriteria

#: Stands for history positions before the first token (matches no prefix token, which are >= 0).
_BEFORE = -2


class TensorBannedSequences(LogitsProcessor):
    """Ban each sentence's own token sequences with tensor operations on the scores' device.

    ``banned[i]`` holds sentence ``i``'s sequences (tuples of token ids), or ``banned`` is their
    :class:`SequenceTable`, made beforehand. Ids at or above the
    score width (or ``vocab_size`` when given) are never banned, as in the reference processor.
    With ``renormalize`` (for beam search, whose processors receive log-probabilities) the scores
    are renormalised over the tokens left after the bans, as CTranslate2 does.
    """

    def __init__(
        self,
        banned: Sequence[Sequence[Sequence[int]]] | SequenceTable,
        vocab_size: int | None = None,
        device: torch.device | str | None = None,
        renormalize: bool = False,
    ):
        table = banned if isinstance(banned, SequenceTable) else SequenceTable.of(banned)
        self.n_sentences = table.sentences
        self.vocab_size = vocab_size
        self.renormalize = renormalize
        device = torch.device(device) if device is not None else torch.device("cpu")
        # prefixes [n, K, P] (-1: an open column), last tokens [n, K], valid [n, K]
        self.prefixes, self.lasts, self.valid = (
            torch.from_numpy(a).to(device) for a in (table.prefixes, table.lasts, table.valid)
        )
        self.open = self.prefixes < 0

    def select(self, sentences: torch.Tensor) -> TensorBannedSequences:
        """The processor of ``sentences`` (indices into this batch's sentences), in that order: for a
        batch that drops the sentences it has finished."""
        kept = TensorBannedSequences.__new__(TensorBannedSequences)
        kept.n_sentences = int(sentences.shape[0])
        kept.vocab_size, kept.renormalize = self.vocab_size, self.renormalize
        for name in ("prefixes", "lasts", "valid", "open"):
            setattr(kept, name, getattr(self, name).index_select(0, sentences))
        return kept

    @property
    def width(self) -> int:
        """``K``: banned-token slots examined per row and step."""
        return self.lasts.shape[1]

    def comparisons_per_row(self) -> int:
        """Prefix-token comparisons per row and step (``K * P``)."""
        return self.prefixes.shape[1] * self.prefixes.shape[2]

    def banned_candidates(
        self, input_ids: torch.Tensor, width: int, last: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Per row, the candidate tokens ``[R, K]`` and whether each is banned now ``[R, K]``.

        ``input_ids`` is each row's history; with ``last`` (a 0-d device tensor) it is a fixed-width
        buffer whose tokens end at position ``last``, read without a host synchronisation (a step
        replayed from a CUDA graph has one shape for every position)."""
        rows = input_ids.shape[0]
        n = self.n_sentences
        if n == 0 or rows % n:
            raise ValueError(f"{rows} decoder rows do not split into {n} sentences")
        per, k, p = rows // n, self.width, self.prefixes.shape[2]
        if k == 0:
            return None
        if p == 0:  # single tokens only: banned wherever they are valid
            match = self.valid[:, None].expand(n, per, k)
        else:
            window = _last_tokens(input_ids, p, last)  # [R, P]
            hits = (window.view(n, per, 1, p) == self.prefixes[:, None]) | self.open[:, None]
            match = hits.all(-1) & self.valid[:, None]  # [n, per, K]
        tok = self.lasts[:, None].expand(n, per, k).reshape(rows, k)
        limit = width if self.vocab_size is None else min(width, self.vocab_size)
        return tok, match.reshape(rows, k) & (tok < limit)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.ban(input_ids, scores)

    def ban(
        self,
        input_ids: torch.Tensor,
        scores: torch.Tensor,
        last: torch.Tensor | None = None,
        renormalize: bool | None = None,
    ) -> torch.Tensor:
        """The scores with each row's banned tokens at -inf (in place); ``last`` as in
        :meth:`banned_candidates`; ``renormalize`` None: the processor's own setting."""
        renormalize = self.renormalize if renormalize is None else renormalize
        found = self.banned_candidates(input_ids, scores.shape[1], last)
        if found is None:
            return scores
        tok, ban = found
        index = tok.clamp(max=scores.shape[1] - 1)  # slots of tokens beyond the scores are never banned
        # -inf where banned, +inf elsewhere: the minimum leaves every other score as it is, and
        # a token banned by several sequences gets the same value from each.
        fill = torch.where(ban, float("-inf"), float("inf")).to(scores.dtype)
        if renormalize and scores.device.type == "cpu":
            banned_logp = scores.gather(1, index)  # before the ban
            scores.scatter_reduce_(1, index, fill, reduce="amin")
            return _renormalize_from_mass(scores, tok, ban, banned_logp, ban.any(dim=-1, keepdim=True))
        scores.scatter_reduce_(1, index, fill, reduce="amin")
        if renormalize:
            # Renormalised over the tokens left, in place: one logsumexp pass, one subtraction.
            scores.sub_(torch.logsumexp(scores, dim=-1, keepdim=True))
        return scores


@dataclasses.dataclass(frozen=True)
class SequenceTable:
    """Each sentence's banned sequences as a padded table on the host, what
    :class:`TensorBannedSequences` moves to the device: prefixes ``[n, K, P]`` right-aligned (-1 in
    the columns before a shorter prefix), last tokens ``[n, K]`` and which slots hold a sequence.
    Built apart from the processor so that a batch's table is made with its other inputs, on the
    host, while the device decodes the batch before it."""

    prefixes: np.ndarray
    lasts: np.ndarray
    valid: np.ndarray

    @property
    def sentences(self) -> int:
        return self.lasts.shape[0]

    @classmethod
    def of(cls, banned: Sequence[Sequence[Sequence[int]]]) -> SequenceTable:
        """The table of ``banned[i]``, sentence ``i``'s sequences (repeats and empty ones dropped).
        Sequences are compared as tuples of their tokens, not token by token in Python (a third of
        the host time a batch's table took under iteration 10's constraints); the ids become int64
        when the table is filled."""
        return cls(*_sequence_table([sorted(set(map(tuple, seqs)) - {()}) for seqs in banned]))


def _sequence_table(seqs: list[list[tuple[int, ...]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays of a :class:`SequenceTable`."""
    n = len(seqs)
    counts = np.array([len(s) for s in seqs], dtype=np.int64)
    flat = [s for per in seqs for s in per]
    k = int(counts.max(initial=0))
    lengths = np.array([len(s) for s in flat], dtype=np.int64)
    p = int(lengths.max(initial=1)) - 1
    prefixes = np.full((n, k, p), -1, dtype=np.int64)
    lasts = np.zeros((n, k), dtype=np.int64)
    valid = np.zeros((n, k), dtype=bool)
    if not flat:
        return prefixes, lasts, valid
    sentence = np.repeat(np.arange(n), counts)
    slot = np.arange(len(flat)) - np.repeat(np.cumsum(counts) - counts, counts)
    tokens = np.fromiter(itertools.chain.from_iterable(flat), dtype=np.int64, count=int(lengths.sum()))
    ends = np.cumsum(lengths)
    lasts[sentence, slot] = tokens[ends - 1]
    valid[sentence, slot] = True
    owner = np.repeat(np.arange(len(flat)), lengths)  # the sequence of each token
    offset = np.arange(len(tokens)) - (ends - lengths)[owner]  # its place in the sequence
    column = p - (lengths[owner] - 1) + offset
    prefix = offset < lengths[owner] - 1  # every token but the last
    prefixes[sentence[owner][prefix], slot[owner][prefix], column[prefix]] = tokens[prefix]
    return prefixes, lasts, valid


def _last_tokens(input_ids: torch.Tensor, p: int, last: torch.Tensor | None) -> torch.Tensor:
    """Each row's ``p`` tokens ending at ``last`` (a device position) or at the end of its history;
    positions before the first token hold ``_BEFORE``."""
    cur = input_ids.shape[1]
    if last is None:
        window = input_ids[:, max(0, cur - p) :]
        if window.shape[1] < p:
            window = torch.nn.functional.pad(window, (p - window.shape[1], 0), value=_BEFORE)
        return window
    where = last - (p - 1) + torch.arange(p, device=input_ids.device)
    window = input_ids.index_select(1, where.clamp(min=0))
    return torch.where(where >= 0, window, _BEFORE)


#: Below this much probability left after the bans, a CPU row is renormalised from its scores.
_EXACT_BELOW = 0.1


def _renormalize_from_mass(
    scores: torch.Tensor, tok: torch.Tensor, ban: torch.Tensor, banned_logp: torch.Tensor, any_ban: torch.Tensor
) -> torch.Tensor:
    """CPU: renormalise log-probabilities after the bans from the banned probability mass alone
    (``R x K`` work instead of ``R x vocab``), in rows where something was banned. Rows where the
    bans took over 90% of the mass are renormalised with a full logsumexp instead, since
    ``log(1 - mass)`` loses precision there. Assumes the scores were normalised log-probabilities
    before this processor (beam search; never-generated tokens are banned by this processor too)."""
    key = torch.where(ban, tok, -1)
    key_sorted, order = key.sort(dim=-1)
    fresh = torch.ones_like(ban)
    fresh[:, 1:] = key_sorted[:, 1:] != key_sorted[:, :-1]  # each banned token counted once
    counted = fresh & (key_sorted >= 0)
    mass = torch.where(counted, banned_logp.gather(1, order).double().exp(), 0.0).sum(-1)
    left = 1.0 - mass
    exact = (any_ban.squeeze(-1) & (left < _EXACT_BELOW)).nonzero().squeeze(-1)
    shift = torch.where(any_ban.squeeze(-1) & (left >= _EXACT_BELOW), torch.log(left.clamp(min=_EXACT_BELOW)), 0.0)
    scores.sub_(shift.to(scores.dtype)[:, None])  # one in-place pass
    if exact.numel():
        rows = scores[exact]
        scores[exact] = rows - torch.logsumexp(rows, dim=-1, keepdim=True)
    return scores


class ReferenceBannedSequences(LogitsProcessor):
    """The reference processor: the decoder history copied to the host and walked row by row
    (the paraphraser's processor before :class:`TensorBannedSequences`).

    Rows of the decoder batch belong to sentences in blocks (beams or samples of one input), so
    row ``r`` obeys the constraints of sentence ``r // rows_per_sentence``.
    """

    def __init__(self, banned: Sequence[Sequence[tuple[int, ...]]], vocab_size: int, device: torch.device):
        self.n_sentences = len(banned)
        self.single = torch.zeros(len(banned), vocab_size, dtype=torch.bool, device=device)
        # prefix -> tokens that may not follow it, per sentence; prefixes grouped by length.
        self.by_prefix: list[dict[tuple[int, ...], list[int]]] = []
        self.prefix_lengths: list[list[int]] = []
        for i, seqs in enumerate(banned):
            table: dict[tuple[int, ...], list[int]] = {}
            for seq in seqs:
                if len(seq) == 1:
                    if seq[0] < vocab_size:
                        self.single[i, seq[0]] = True
                else:
                    table.setdefault(tuple(seq[:-1]), []).append(seq[-1])
            self.by_prefix.append(table)
            self.prefix_lengths.append(sorted({len(p) for p in table}))

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        rows = input_ids.shape[0]
        per = rows // self.n_sentences
        mask = self.single.repeat_interleave(per, dim=0)
        if any(self.prefix_lengths):
            history = input_ids.tolist()
            for r, hist in enumerate(history):
                s = r // per
                table = self.by_prefix[s]
                for length in self.prefix_lengths[s]:
                    if length <= len(hist):
                        for tok in table.get(tuple(hist[-length:]), ()):
                            if tok < mask.shape[1]:
                                mask[r, tok] = True
        return scores.masked_fill(mask[:, : scores.shape[1]], float("-inf"))


class PerSentenceMaxNewTokens(StoppingCriteria):
    """Stop each sentence's rows at its own limit of new tokens, as ``max_new_tokens`` would.

    ``limits[i]`` is sentence ``i``'s limit. A row of sentence ``i`` that has generated
    ``limits[i]`` tokens ends there (without EOS, like transformers' own length limit, and like
    CTranslate2's ``max_decoding_length``), so the limit of a sentence does not depend on the
    batch it is decoded in. ``prompt_length`` is the decoder's start length (1 for an
    encoder-decoder model's start token). Works for beam search (which checks ``2 * beams`` rows
    per sentence) and sampling alike, since rows come in equal blocks per sentence.
    """

    def __init__(self, limits: Sequence[int], prompt_length: int = 1, device: torch.device | str | None = None):
        limits = [int(x) for x in limits]
        if not limits or min(limits) < 1:
            raise ValueError("every sentence needs a length limit of at least 1")
        self.limits = torch.tensor(limits, dtype=torch.long, device=device)
        self.prompt_length = prompt_length
        self.min_limit = min(limits)

    def __call__(
        self, input_ids: torch.LongTensor, scores: torch.FloatTensor | None = None, **kwargs
    ) -> torch.BoolTensor:
        rows, cur = input_ids.shape
        generated = cur - self.prompt_length
        if generated < self.min_limit:  # decided from shapes alone: no row is at its limit yet
            return torch.zeros(rows, dtype=torch.bool, device=input_ids.device)
        return (self.limits <= generated).repeat_interleave(rows // len(self.limits)).to(input_ids.device)
