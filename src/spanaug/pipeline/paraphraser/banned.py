"""Negative constraints as banned token sequences, enforced per sentence during decoding.

Every phrase becomes banned token sequences with the semantics of ``bad_words_ids`` (a phrase's
last token is forbidden once the preceding ones were generated); :mod:`.processors` enforces them.

:class:`PhraseBans` tokenizes each phrase once per tokenizer: a constraint set at iteration ``i``
holds the forms of ``i`` phrases, and seeds of one lexical unit share them, so most phrases of a
batch were seen before. The phrases a batch adds are tokenized in one batched call
(:meth:`PhraseBans.learn`, through the Rust tokenizer's ``encode_batch``: :mod:`.rust_tokenizer`),
and the vocabulary is read once. Tokenizing phrase by phrase, with
the vocabulary read per sentence, took 2.3 ms of host time a sentence at iteration 10 on a 2-core
CPU (0.14 ms now, ``scripts/bench_gpu.py`` prints it), where the static backend decodes a sentence
in 8.5 ms on an H100; the host does it between decode batches, with the GPU idle.
"""

from __future__ import annotations

from collections.abc import Iterable

from spanaug.pipeline.paraphraser.rust_tokenizer import encoder_without_specials, token_namer

_SPACE_MARKERS = ("▁", "Ġ")

#: Phrases a :class:`PhraseBans` remembers before it starts afresh (memory stays bounded in a
#: job of 200,000 seeds; a few hundred bytes a phrase).
MEMO_LIMIT = 200_000


class PhraseBans:
    """The banned token sequences of phrases, for one tokenizer, each phrase tokenized once."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._encode = encoder_without_specials(tokenizer)
        self._token = token_namer(tokenizer)
        self._vocab: dict[str, int] | None = None
        self._special: set[int] | None = None
        self._memo: dict[str, tuple[tuple[int, ...], ...]] = {}
        self._firsts: dict[int, tuple[tuple[int, ...], ...]] = {}

    def __call__(self, phrases: Iterable[str]) -> list[tuple[int, ...]]:
        """Token-id sequences for each phrase, mid-sentence and sentence-initially, sorted.

        A phrase is tokenized as it would appear after a space and at the start of the text, and,
        for SentencePiece/byte-level vocabularies, also with the word-boundary marker removed.
        Single special tokens are never banned."""
        phrases = [p for p in dict.fromkeys(phrases) if p.strip()]
        known = {p: seqs for p in phrases if (seqs := self._memo.get(p)) is not None}
        known.update(self._learn([p for p in phrases if p not in known]))
        return sorted(frozenset().union(*known.values()))

    def learn(self, phrases: Iterable[str]) -> None:
        """Tokenize the phrases not seen yet, all in one call: a batch's, before its sentences ask
        for theirs. One call of the Rust tokenizer for a batch costs less per phrase than one a
        sentence (4 against 5 µs on this project's CPU) and spreads over the CPU's cores, and it
        releases the GIL, which the decoding thread then has to itself."""
        self._learn([p for p in dict.fromkeys(phrases) if p not in self._memo and p.strip()])

    def clear(self) -> None:
        """Forget every phrase (a benchmark's rounds then meet their phrases as a new job does)."""
        self._memo.clear()
        self._firsts.clear()

    def _learn(self, phrases: list[str]) -> dict[str, tuple[tuple[int, ...], ...]]:
        """Tokenize ``phrases`` (unseen ones) in one call; their sequences, also remembered."""
        if not phrases:
            return {}
        if len(self._memo) + len(phrases) > MEMO_LIMIT:
            self.clear()
        if self._vocab is None:
            self._vocab = self.tokenizer.get_vocab()
            self._special = set(self.tokenizer.all_special_ids)
        # One batched call: each phrase as is (sentence-initially), then after a space.
        texts = phrases + [" " + p for p in phrases]
        encoded = self._encode(texts)
        n = len(phrases)
        learned = {}
        for i, phrase in enumerate(phrases):
            seqs: set[tuple[int, ...]] = set()
            for ids in (encoded[i], encoded[n + i]):
                if ids:
                    seqs.update(self._variants(ids))
            # A tuple of tuples of ints, which the garbage collector stops tracking once it has
            # looked at it (a frozenset it would walk in every full collection: a job's memo grows
            # to hundreds of thousands of them, and a collection stops the decoding thread too).
            learned[phrase] = tuple(s for s in seqs if not (len(s) == 1 and s[0] in self._special))
        self._memo.update(learned)
        return learned

    def _variants(self, ids: list[int]) -> list[tuple[int, ...]]:
        """``ids`` and the same pieces with the word-boundary marker removed or added."""
        head = tuple(ids)
        rest = head[1:]
        return [head, *(first + rest for first in self._other_firsts(head[0]) if first or rest)]

    def _other_firsts(self, token: int) -> tuple[tuple[int, ...], ...]:
        """What may stand for a sequence's first ``token``: its piece without the word-boundary
        marker (nothing for the marker alone), or with each marker added. Worked out once a token,
        instead of once a sequence (some 31,000 for the new phrases of 1,024 FrameNet sentences
        under iteration 10's constraints)."""
        others = self._firsts.get(token)
        if others is None:
            vocab, name = self._vocab, self._token(token)
            if name in _SPACE_MARKERS:
                others = ((),)  # the marker tokenized as a piece of its own
            elif name[:1] in _SPACE_MARKERS:
                others = ((vocab[name[1:]],),) if name[1:] in vocab else ()
            else:
                others = tuple((vocab[m + name],) for m in _SPACE_MARKERS if m + name in vocab)
            self._firsts[token] = others
        return others


def banned_sequences(tokenizer, phrases: Iterable[str]) -> list[tuple[int, ...]]:
    """:class:`PhraseBans` of ``phrases`` with a fresh memo (one-off callers: tests, benchmarks)."""
    return PhraseBans(tokenizer)(phrases)
