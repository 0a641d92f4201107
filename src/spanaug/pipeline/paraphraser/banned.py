"""Negative constraints as banned token sequences, enforced per sentence during decoding.

Every phrase becomes banned token sequences with the semantics of ``bad_words_ids`` (a phrase's
last token is forbidden once the preceding ones were generated).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

_SPACE_MARKERS = ("▁", "Ġ")


def banned_sequences(tokenizer, phrases: Iterable[str]) -> list[tuple[int, ...]]:  # noqa: ANN001
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


class PerSentenceBannedSequences:
    """Logits processor banning each sentence's own sequences (``bad_words_ids`` per sentence).

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
