"""The full frame-semantic parse scored as one: Frame ID finds the triggers and their frames, the
argument identifier their FEs, and the arguments are scored against the gold annotations.

A predicted trigger whose span and frame are a gold annotation's is scored on its FEs as with gold
frames; every FE of a gold annotation that no such prediction matches is missed, and every FE
predicted for a trigger or frame that is not gold is a false positive. So one F1 falls with either
a wrong frame or a wrong argument.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from spanaug.downstream.argid.data import Annotation, Span
from spanaug.downstream.argid.scoring import Prediction


def _key(annotation: Annotation) -> tuple[str, tuple[str, ...]]:
    return str(annotation.sentence), tuple(annotation.tokens)


def frame_sentences(gold: Sequence[Annotation]) -> tuple[list[Any], list[tuple[str, tuple[str, ...]]]]:
    """Frame ID's input: each sentence once, with its gold triggers (for Frame ID's own scores), and
    each sentence's key."""
    from spanaug.downstream.frameid.data import Sentence

    sentences: dict[tuple[str, tuple[str, ...]], Sentence] = {}
    for a in gold:
        sent = sentences.setdefault(_key(a), Sentence(list(a.tokens), {}, a.pos))
        sent.triggers[a.trigger] = a.frame
    return list(sentences.values()), list(sentences)


def predicted_annotations(
    keys: Sequence[tuple[str, tuple[str, ...]]], frames: Sequence[dict[Span, str]], gold: Sequence[Annotation]
) -> list[Annotation]:
    """An annotation (no FEs yet) per trigger Frame ID found, over the sentence's tokens."""
    pos = {_key(a): a.pos for a in gold}
    return [
        Annotation(list(key[1]), span, frame, [], pos.get(key), sentence=key[0])
        for key, found in zip(keys, frames, strict=True)
        for span, frame in sorted(found.items())
    ]


def paired(
    gold: Sequence[Annotation], predicted: Sequence[Annotation], fes: Sequence[Prediction]
) -> tuple[list[Annotation], list[Prediction]]:
    """Gold annotations and predictions lined up for ``argument_scores``: a gold annotation with the
    FEs predicted for its trigger and frame (none when Frame ID missed either), then each prediction
    with no gold counterpart against an annotation of its own frame with no FE (all false positives)."""
    found = {(_key(a), a.trigger, a.frame): p for a, p in zip(predicted, fes, strict=True)}
    golds = [(_key(a), a.trigger, a.frame) for a in gold]
    out_gold = list(gold)
    out_pred = [found.get(k, []) for k in golds]
    matched = set(golds)
    for a, p in zip(predicted, fes):
        if (_key(a), a.trigger, a.frame) not in matched and p:
            out_gold.append(dataclasses.replace(a, fes=[]))
            out_pred.append(p)
    return out_gold, out_pred
