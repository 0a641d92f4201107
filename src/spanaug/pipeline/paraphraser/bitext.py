"""Paraphrase bitexts: made from word-aligned corpora, split into training and held-out pairs, and
the word a pair's prompt names when a decoder-only model is fine-tuned on it.

**The word.** At decode time a decoder-only paraphraser's prompt names the request's span
(``{word}`` in ``paraphraser.prompt``), and the output must not contain it. A bitext pair names no
word, so the word a training pair's prompt names is one the paraphrase does not use: a content word
of the source (not a function word, two letters or more) absent from the target, case aside;
among several, a lower-case one before a capitalised one (names are rarely what a paraphrase
rewords), then the longest, then the first. A pair whose target keeps or deletes every content word
of its source (a near copy, a shortening) has no such word; it teaches nothing about rewording, and a prompt with a
``{word}`` it would name falsely, so such pairs are left out of a decoder-only fine-tune (counted
in the log). A prompt without ``{word}`` trains on every pair.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from spanaug.core.files import atomic_path
from spanaug.core.splits import assign_parts
from spanaug.core.text import detokenize, tokenize
from spanaug.pipeline.aligner.word_aligned import FUNCTION_WORDS, read_aligned_json

log = logging.getLogger(__name__)

Pair = tuple[str, str]


def pick_word(source: str, target: str) -> str | None:
    """The word a pair's prompt names (see the module's docstring), or None."""
    src, tgt = tokenize(source), tokenize(target)
    kept = {t.lower() for t in tgt}
    matcher = difflib.SequenceMatcher(a=[t.lower() for t in src], b=[t.lower() for t in tgt], autojunk=False)
    replaced = {i for op, i1, i2, _, _ in matcher.get_opcodes() if op == "replace" for i in range(i1, i2)}
    candidates = [
        (i, tok)
        for i, tok in enumerate(src)
        if i in replaced and len(tok) > 1 and any(c.isalpha() for c in tok) and tok.lower() not in FUNCTION_WORDS
        if tok.lower() not in kept
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c[1][:1].isupper(), -len(c[1]), c[0]))[1]


def split_heldout(pairs: Sequence[Pair], share: float) -> tuple[list[Pair], list[Pair]]:
    """(training pairs, held-out pairs): ``share`` of the distinct source sentences, chosen by a stable
    hash of their text (the same split on every run and machine), with every pair of a held-out
    source held out."""
    if share <= 0:
        return list(pairs), []
    parts = assign_parts((s for s, _ in pairs), [("heldout", share), ("train", None)], order="hash")
    train = [p for p in pairs if parts[p[0]] == "train"]
    heldout = [p for p in pairs if parts[p[0]] == "heldout"]
    return train, heldout


def pairs_from_aligned(paths: Iterable[Path | str], detok: bool = True) -> tuple[list[Pair], dict[str, int]]:
    """Sentence pairs of Edinburgh++-format word-aligned corpora (``../shared/data/*.gold.json``), in
    file order: detokenized (``"do n't"`` -> ``"don't"``) unless ``detok`` is false; copies (equal
    once lower-cased) and repeated pairs left out. Returns the pairs and counts per file."""
    out: list[Pair] = []
    seen: set[Pair] = set()
    counts: dict[str, int] = {}
    for path in paths:
        kept = 0
        for pair in read_aligned_json(path):
            source, target = (_text(pair.source, detok), _text(pair.target, detok))
            if source.lower() == target.lower() or (source, target) in seen:
                continue
            seen.add((source, target))
            out.append((source, target))
            kept += 1
        counts[str(path)] = kept
    return out, counts


def write_bitext(pairs: Sequence[Pair], out: Path | str) -> None:
    """``source<TAB>paraphrase`` lines (tabs and newlines inside a sentence become spaces), atomically."""
    with atomic_path(out, ".tsv") as tmp:
        tmp.write_text("".join(f"{_line(s)}\t{_line(t)}\n" for s, t in pairs), encoding="utf-8")


#: Penn Treebank quotes, as the corpora write them, and their plain forms.
PTB_QUOTES = {"``": '"', "''": '"'}


def _text(tokens: list[str], detok: bool) -> str:
    if not detok:
        return " ".join(tokens)
    return detokenize(PTB_QUOTES.get(t, t) for t in tokens)


def _line(text: str) -> str:
    return " ".join(text.split())
