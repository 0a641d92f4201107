"""Frame ID scoring over (sentence, span, frame) triples and the lexicon baseline."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from spanaug.core.metrics import prf
from spanaug.downstream.frameid.data import NULL, Sentence, Span, candidate_spans


def triple_scores(gold: Sequence[Sentence], pred: Sequence[dict[Span, str]]) -> dict[str, float | int]:
    """Precision, recall and F1 over (sentence, span, frame) triples: span and frame must both match."""
    tp = n_pred = n_gold = 0
    for sent, p in zip(gold, pred, strict=True):
        n_gold += len(sent.triggers)
        n_pred += len(p)
        tp += sum(1 for span, frame in p.items() if sent.triggers.get(span) == frame)
    precision, recall, f1 = prf(tp, n_pred, n_gold)
    return {"precision": precision, "recall": recall, "f1": f1, "n_gold": n_gold, "n_pred": n_pred}


def non_overlapping(scored: Iterable[tuple[float, Span, str]]) -> dict[Span, str]:
    """Greedy by score: keep a predicted trigger unless it overlaps a better one."""
    kept: dict[Span, str] = {}
    for _, span, frame in sorted(scored, key=lambda x: -x[0]):
        if all(span[1] < s or span[0] > e for s, e in kept):
            kept[span] = frame
    return kept


class LexiconBaseline:
    """Most frequent label of each trigger string in training, NULL included (from full-text
    sentences, where a string's untagged occurrences are known negatives)."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter] = defaultdict(Counter)

    def fit(self, sentences: Sequence[Sentence]) -> LexiconBaseline:
        for sent in sentences:
            for span, frame in sent.triggers.items():
                self.counts[_key(sent.tokens, span)][frame] += 1
        for sent in sentences:
            if sent.full:
                for span in candidate_spans(len(sent.tokens)):
                    key = _key(sent.tokens, span)
                    if key in self.counts and span not in sent.triggers:
                        self.counts[key][NULL] += 1
        return self

    def predict(self, sentences: Sequence[Sentence]) -> list[dict[Span, str]]:
        out = []
        for sent in sentences:
            scored = []
            for span in candidate_spans(len(sent.tokens)):
                counts = self.counts.get(_key(sent.tokens, span))
                if counts:
                    frame, n = counts.most_common(1)[0]
                    if frame != NULL:
                        scored.append((n / sum(counts.values()) + 1e-3 * (span[1] - span[0]), span, frame))
            out.append(non_overlapping(scored))
        return out


def _key(tokens: Sequence[str], span: Span) -> str:
    return " ".join(tokens[span[0] : span[1] + 1]).lower()
