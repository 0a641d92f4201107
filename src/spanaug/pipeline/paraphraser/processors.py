"""Per-sentence constraints and length limits for ``generate``: a logits processor that runs on
the device, its host-side reference, and a per-sentence stopping criterion.

Each sentence of a decoder batch has its own banned sequences (``bad_words_ids`` semantics: a
sequence's last token is forbidden once the tokens before it end the row's history; a sequence of
one token is always forbidden). Rows of the batch belong to sentences in equal blocks (the beams or
samples of one input), so row ``r`` obeys sentence ``r // rows_per_sentence``.

:class:`TensorBannedSequences` builds, once per batch, padded id tensors of every sentence's
sequences grouped by length, and matches them against the last tokens of each row with tensor
operations: no host copy of the history, no Python loop over rows, no host synchronisation per
step. :class:`ReferenceBannedSequences` is the straightforward processor it replaces (host copy of
the history, a Python walk over rows); it is kept as the reference for tests and benchmarks.

Per step, with ``R`` rows, ``S`` single-token bans and ``M_L`` sequences of length ``L`` for the
sentence with the most of them, and ``K = S + sum(M_L)``:

* comparisons: ``R * M_L * (L - 1)`` booleans per length group (one broadcast ``==``);
* scatter: one ``gather`` and one ``scatter_`` of ``R * K`` elements into the scores;
* no ``R x vocab`` mask is allocated; the scores are modified in place.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessor, StoppingCriteria


def _pad(rows: list[list], width: int, fill) -> list[list]:
    return [r + [fill] * (width - len(r)) for r in rows]


class TensorBannedSequences(LogitsProcessor):
    """Ban each sentence's own token sequences with tensor operations on the scores' device.

    ``banned[i]`` holds sentence ``i``'s sequences (tuples of token ids). Ids at or above the
    score width (or ``vocab_size`` when given) are never banned, as in the reference processor.
    With ``renormalize`` (for beam search, whose processors receive log-probabilities) the scores
    are renormalised over the tokens left after the bans, as CTranslate2 does.
    """

    def __init__(
        self,
        banned: Sequence[Sequence[Sequence[int]]],
        vocab_size: int | None = None,
        device: torch.device | str | None = None,
        renormalize: bool = False,
    ):
        self.n_sentences = len(banned)
        self.vocab_size = vocab_size
        self.renormalize = renormalize
        device = torch.device(device) if device is not None else torch.device("cpu")
        singles: list[list[int]] = []
        groups: dict[int, list[list[tuple[int, ...]]]] = {}
        for i, seqs in enumerate(banned):
            uniq = sorted({tuple(int(t) for t in s) for s in seqs if len(s)})
            singles.append([s[0] for s in uniq if len(s) == 1])
            for s in uniq:
                if len(s) > 1:
                    groups.setdefault(len(s), [[] for _ in banned])[i].append(s)
        s_max = max((len(s) for s in singles), default=0)
        self.single_tokens = self.single_valid = None
        if s_max:
            self.single_tokens = torch.tensor(_pad(singles, s_max, 0), dtype=torch.long, device=device)
            self.single_valid = torch.tensor(_pad([[True] * len(s) for s in singles], s_max, False), device=device)
        # prefix length -> (prefixes [n, M, P], last tokens [n, M], valid [n, M])
        self.groups: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        for length in sorted(groups):
            per_sentence = groups[length]
            m = max(len(g) for g in per_sentence)
            prefixes = [[list(s[:-1]) for s in g] + [[-1] * (length - 1)] * (m - len(g)) for g in per_sentence]
            lasts = _pad([[s[-1] for s in g] for g in per_sentence], m, 0)
            valid = _pad([[True] * len(g) for g in per_sentence], m, False)
            self.groups[length - 1] = (
                torch.tensor(prefixes, dtype=torch.long, device=device),
                torch.tensor(lasts, dtype=torch.long, device=device),
                torch.tensor(valid, device=device),
            )

    def select(self, sentences: torch.Tensor) -> TensorBannedSequences:
        """The processor of ``sentences`` (indices into this batch's sentences), in that order: for a
        batch that drops the sentences it has finished."""
        kept = TensorBannedSequences.__new__(TensorBannedSequences)
        kept.n_sentences = int(sentences.shape[0])
        kept.vocab_size, kept.renormalize = self.vocab_size, self.renormalize
        kept.single_tokens = kept.single_valid = None
        if self.single_tokens is not None:
            kept.single_tokens = self.single_tokens.index_select(0, sentences)
            kept.single_valid = self.single_valid.index_select(0, sentences)
        kept.groups = {p: tuple(t.index_select(0, sentences) for t in g) for p, g in self.groups.items()}
        return kept

    @property
    def width(self) -> int:
        """``K``: banned-token slots examined per row and step."""
        singles = 0 if self.single_tokens is None else self.single_tokens.shape[1]
        return singles + sum(last.shape[1] for _, last, _ in self.groups.values())

    def comparisons_per_row(self) -> int:
        """Token comparisons per row and step (sum over length groups of ``M_L * (L - 1)``)."""
        return sum(pre.shape[1] * pre.shape[2] for pre, _, _ in self.groups.values())

    def banned_candidates(
        self, input_ids: torch.Tensor, width: int, last: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Per row, the candidate tokens ``[R, K]`` and whether each is banned now ``[R, K]``.

        ``input_ids`` is each row's history; with ``last`` (a 0-d device tensor) it is a fixed-width
        buffer whose tokens end at position ``last``, read without a host synchronisation (a step
        replayed from a CUDA graph has one shape for every position)."""
        rows, cur = input_ids.shape
        n = self.n_sentences
        if n == 0 or rows % n:
            raise ValueError(f"{rows} decoder rows do not split into {n} sentences")
        per = rows // n
        tokens, banned = [], []
        if self.single_tokens is not None:
            s = self.single_tokens.shape[1]
            tokens.append(self.single_tokens[:, None, :].expand(n, per, s))
            banned.append(self.single_valid[:, None, :].expand(n, per, s))
        for p, (prefixes, lasts, valid) in self.groups.items():
            if last is None:
                if p > cur:  # the history is shorter than the prefix: nothing can match yet
                    continue
                history = input_ids[:, cur - p :]
            else:  # the p tokens ending at `last`; none match while the history is shorter than p
                where = last - (p - 1) + torch.arange(p, device=input_ids.device)
                history = input_ids.index_select(1, where.clamp(min=0))
                valid = valid & (last >= p - 1)
            match = (history.reshape(n, per, 1, p) == prefixes[:, None]).all(-1) & valid[:, None]  # [n, per, M]
            tokens.append(lasts[:, None, :].expand_as(match))
            banned.append(match)
        if not tokens:
            return None
        tok = torch.cat(tokens, dim=-1).reshape(rows, -1)
        ban = torch.cat(banned, dim=-1).reshape(rows, -1)
        limit = width if self.vocab_size is None else min(width, self.vocab_size)
        return tok, ban & (tok < limit)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.ban(input_ids, scores)

    def ban(self, input_ids: torch.Tensor, scores: torch.Tensor, last: torch.Tensor | None = None) -> torch.Tensor:
        """The scores with each row's banned tokens at -inf (in place); ``last`` as in
        :meth:`banned_candidates`."""
        found = self.banned_candidates(input_ids, scores.shape[1], last)
        if found is None:
            return scores
        tok, ban = found
        # Every slot of a row is written: banned slots get -inf at their token; the others point at
        # the row's first banned token (also -inf), or, in rows with nothing banned, at column 0 with
        # its own value. Duplicate writes to a cell thus always carry the same value.
        any_ban = ban.any(dim=-1, keepdim=True)
        first = torch.where(ban, tok, scores.shape[1]).amin(dim=-1, keepdim=True)
        anchor = torch.where(any_ban, first, torch.zeros_like(first))
        index = torch.where(ban, tok, anchor)
        keep = scores.gather(1, anchor)
        value = torch.where(any_ban, torch.full_like(keep, float("-inf")), keep).expand(index.shape)
        if self.renormalize and scores.device.type == "cpu":
            banned_logp = scores.gather(1, index)  # before the ban
            _write(scores, index, value)
            return _renormalize_from_mass(scores, tok, ban, banned_logp, any_ban)
        _write(scores, index, value)
        if self.renormalize:
            # Renormalised over the tokens left, in place: one logsumexp pass, one subtraction.
            scores.sub_(torch.logsumexp(scores, dim=-1, keepdim=True))
        return scores


def _write(scores: torch.Tensor, index: torch.Tensor, value: torch.Tensor) -> None:
    """``scores.scatter_(1, index, value)``, as one indexed write into the flat scores (torch's
    indexing kernel): in a profile of the static backend on an H100, the scatter kernel took about
    0.7 ms a call for a 1,840 x 275 ban, most of the processor's time."""
    if not scores.is_contiguous():
        scores.scatter_(1, index, value)
        return
    offsets = torch.arange(scores.shape[0], device=scores.device)[:, None] * scores.shape[1]
    scores.view(-1).index_put_(((index + offsets).reshape(-1),), value.reshape(-1))


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
