"""Which frames a span may evoke: lexicon LUs matched by lemma, plus the training triggers."""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Sequence

from spanaug.downstream.frameid.data import Sentence, Span


@functools.lru_cache(maxsize=65536)
def _lemmas(word: str) -> tuple[str, ...]:
    from lemminflect import getAllLemmas

    return tuple(dict.fromkeys(lemma.lower() for forms in getAllLemmas(word).values() for lemma in forms))


def span_keys(tokens: Sequence[str], span: Span) -> set[str]:
    """The span's lowercased text and its variants with one word lemmatised (``gave up`` -> ``give up``)."""
    words = [t.lower() for t in tokens[span[0] : span[1] + 1]]
    keys = {" ".join(words)}
    for i, word in enumerate(words):
        keys.update(" ".join(words[:i] + [lemma] + words[i + 1 :]) for lemma in _lemmas(word))
    return keys


def lu_lemmas(lexical_unit: str) -> set[str]:
    """Lemma strings of a FrameNet LU: ``launch (into).v`` -> {launch, launch into}; ``aid [act].n`` -> {aid}."""
    lemma = re.sub(r"\[[^\]]*\]", "", lexical_unit.rsplit(".", 1)[0]).lower()
    variants = {re.sub(r"\([^)]*\)", "", lemma), lemma.replace("(", "").replace(")", "")}
    return {" ".join(v.replace("_", " ").split()) for v in variants} - {""}


class FrameLexicon:
    """Which frames a span may evoke: lexicon LUs matched by lemma, plus the training triggers.

    Restricting each span's softmax to its candidate frames is what lets a model trained on a few
    hundred sentences label triggers it never saw, and spans with no candidate are never scored.
    """

    def __init__(self, entries: dict[str, Sequence[str]]):
        self.entries = {k: sorted(v) for k, v in entries.items()}

    @classmethod
    def build(cls, sentences: Sequence[Sentence], lexicon: dict[str, set[str]]) -> FrameLexicon:
        """Keys from ``lexicon`` (frame -> LUs; empty: the training triggers alone) and from each
        training trigger's text and lemma variants (span_keys), so that an unseen inflection of a
        seen trigger lemma gets its frames."""
        entries: dict[str, set[str]] = defaultdict(set)
        for frame, lus in lexicon.items():
            for lu in lus:
                for lemma in lu_lemmas(lu):
                    entries[lemma].add(frame)
        for sent in sentences:
            for span, frame in sent.triggers.items():
                for key in span_keys(sent.tokens, span):
                    entries[key].add(frame)
        return cls(entries)

    def frames(self) -> set[str]:
        return {f for frames in self.entries.values() for f in frames}

    def candidates(self, tokens: Sequence[str], span: Span) -> set[str]:
        return {f for key in span_keys(tokens, span) for f in self.entries.get(key, ())}
