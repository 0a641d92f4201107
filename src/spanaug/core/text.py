"""The project's word tokenizer and detokenizer."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable

_TOKEN_RE = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]", re.UNICODE)


def is_blank(text: str) -> bool:
    """True when nothing in ``text`` is visible: every character is whitespace or a format character
    (Unicode category Cf: zero-width space U+200B, joiners U+200C/U+200D, the BOM U+FEFF...). Such a
    "word" would pass ``str.strip`` and become constraints like ``'\u200d\u200dED'``."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def is_token(value: object) -> bool:
    """A string that is a word form: not empty and not blank (:func:`is_blank`)."""
    return isinstance(value, str) and not is_blank(value)


def tokenize_with_offsets(text: str, start: int = 0) -> list[tuple[str, int, int]]:
    """Split text into word and punctuation tokens with (start, end) character offsets."""
    return [(m.group(), m.start() + start, m.end() + start) for m in _TOKEN_RE.finditer(text)]


def tokenize(text: str) -> list[str]:
    """The project's word tokenizer, used for paraphrase outputs and raw-text sentences."""
    return [tok for tok, _, _ in tokenize_with_offsets(text)]


def detokenize(tokens: Iterable[str]) -> str:
    """Join tokens into plain text: no space before closing punctuation or after opening."""
    out = ""
    for tok in tokens:
        if out and not (re.fullmatch(r"[.,;:!?%)\]}]|'s|n't|'[a-z]{1,2}", tok) or out.endswith(("(", "[", "$"))):
            out += " "
        out += tok
    return out


def tokenize_around_span(
    text: str, char_start: int, char_end: int, cuts: Iterable[int] = ()
) -> tuple[list[str], list[tuple[int, int]], int, int]:
    """Tokenize ``text`` with token boundaries forced at the span's edges, and at the character
    offsets ``cuts`` (the edges of other spans, such as frame elements, that must be whole tokens).

    Returns tokens, their offsets and the inclusive token span covering
    ``text[char_start:char_end]``.
    """
    points = sorted({0, char_start, char_end, len(text), *(c for c in cuts if 0 < c < len(text))})
    pieces = [p for a, b in itertools.pairwise(points) for p in tokenize_with_offsets(text[a:b], a)]
    offsets = [(p[1], p[2]) for p in pieces]
    span = char_span_tokens(offsets, char_start, char_end)
    if span is None:
        raise ValueError("span holds no token")
    return [p[0] for p in pieces], offsets, span[0], span[1]


def char_span_tokens(offsets: list[tuple[int, int]], char_start: int, char_end: int) -> tuple[int, int] | None:
    """The inclusive token span of the tokens (given by their offsets) that lie inside
    ``[char_start, char_end)``, or None when none does."""
    inside = [i for i, (s, e) in enumerate(offsets) if char_start <= s and e <= char_end]
    return (inside[0], inside[-1]) if inside else None
