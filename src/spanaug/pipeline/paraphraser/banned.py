"""Negative constraints as banned token sequences, enforced per sentence during decoding.

Every phrase becomes banned token sequences with the semantics of ``bad_words_ids`` (a phrase's
last token is forbidden once the preceding ones were generated); :mod:`.processors` enforces them.
"""

from __future__ import annotations

from collections.abc import Iterable

_SPACE_MARKERS = ("▁", "Ġ")


def banned_sequences(tokenizer, phrases: Iterable[str]) -> list[tuple[int, ...]]:
    """Token-id sequences for each phrase, mid-sentence and sentence-initially.

    A phrase is tokenized as it would appear after a space and at the start of the text, and,
    for SentencePiece/byte-level vocabularies, also with the word-boundary marker removed.
    """
    vocab = tokenizer.get_vocab()
    out: set[tuple[int, ...]] = set()
    for phrase in phrases:
        if not phrase.strip():
            continue
        for text in (phrase, " " + phrase):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if not ids:
                continue
            out.add(tuple(ids))
            pieces = tokenizer.convert_ids_to_tokens(ids)
            first = pieces[0]
            if first in _SPACE_MARKERS and len(ids) > 1:
                out.add(tuple(ids[1:]))  # marker tokenized as a piece of its own
            elif first[:1] in _SPACE_MARKERS and first[1:] in vocab:
                out.add((vocab[first[1:]], *ids[1:]))
            elif first[:1] not in _SPACE_MARKERS:
                for marker in _SPACE_MARKERS:
                    if marker + first in vocab:
                        out.add((vocab[marker + first], *ids[1:]))
    special = set(tokenizer.all_special_ids)
    return sorted(seq for seq in out if not (len(seq) == 1 and seq[0] in special))
