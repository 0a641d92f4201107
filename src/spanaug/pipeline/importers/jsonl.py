"""The JSON-lines importer: ``{"tokens", "span": [s, e] (inclusive), "frame"|"label", ...}`` per line."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError
from spanaug.core.files import iter_jsonl
from spanaug.core.text import detokenize, is_token
from spanaug.core.validation import CORENESS, NULL_INSTANTIATIONS
from spanaug.pipeline.importers.common import ImportStats, check_span, frame_element, keep


def read_jsonl_sentences(
    path: Path | str, max_tokens: int | None = None, stats: ImportStats | None = None, label: str | None = None
) -> Iterator[dict[str, Any]]:
    """Rows from JSON lines ``{"tokens", "span": [s, e] (inclusive), "frame"|"label", ...}``."""
    path = Path(path)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    for lineno, rec in iter_jsonl(path):
        row = _jsonl_row(path, lineno, rec, label or path.stem)
        if keep(row, stats, max_tokens):
            yield row


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_text(rec: dict[str, Any], key: str, path: Path, lineno: int) -> str | None:
    """An optional string field: absent, null or blank is None; any other type is an error."""
    value = rec.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(path, lineno, f"{key!r} is {type(value).__name__} {value!r} (expected a string or null)")
    return value if value.strip() else None


def _jsonl_row(path: Path, lineno: int, rec: dict[str, Any], label: str) -> dict[str, Any]:
    tokens = rec.get("tokens")
    if not (isinstance(tokens, list) and tokens and all(is_token(t) for t in tokens)):
        raise InputError(path, lineno, "'tokens' must be a non-empty list of tokens (strings, none empty or blank)")
    span = rec["span"] if "span" in rec else [rec.get("span_start"), rec.get("span_end")]
    if not (isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span)):
        raise InputError(path, lineno, f"'span' is {span!r} (expected [start, end], inclusive token indices)")
    check_span(tokens, span[0], span[1], path, lineno)
    frame = rec.get("frame", rec.get("label"))
    if not isinstance(frame, str) or not frame.strip():
        raise InputError(path, lineno, "'frame' (or 'label') must be a non-blank string")
    sentence_id = rec.get("id", f"{label}:{lineno}")
    if not ((isinstance(sentence_id, str) and sentence_id.strip()) or _is_int(sentence_id)):
        raise InputError(path, lineno, f"'id' is {sentence_id!r} (expected a non-blank string or an integer)")
    pos_tags = rec.get("pos_tags")
    if pos_tags is not None and not (
        isinstance(pos_tags, list) and len(pos_tags) == len(tokens) and all(is_token(t) for t in pos_tags)
    ):
        raise InputError(
            path, lineno, f"'pos_tags' must be null or a list of {len(tokens)} tags (strings), one per token"
        )
    trigger = " ".join(tokens[span[0] : span[1] + 1]).lower()
    return {
        "sentence_id": str(sentence_id),
        "tokens": tokens,
        "text": _optional_text(rec, "text", path, lineno) or detokenize(tokens),
        "span_start": span[0],
        "span_end": span[1],
        "frame": frame,
        "lexical_unit": _optional_text(rec, "lexical_unit", path, lineno) or trigger,
        "pos_tags": pos_tags,
        "source": f"jsonl:{label}:{lineno}",
        "corpus_part": "jsonl",
        "document": _optional_text(rec, "document", path, lineno),
        "annotation_date": _optional_text(rec, "annotation_date", path, lineno),
        "order": lineno,
        "frame_elements": _jsonl_frame_elements(rec.get("frame_elements"), len(tokens), path, lineno),
    }


_JSONL_FE = '{"name", "span": [s, e]} or {"name", "null": "CNI"|"DNI"|"INI"}, with an optional "coreness"'


def _jsonl_frame_elements(value: Any, n_tokens: int, path: Path, lineno: int) -> list[dict[str, Any]] | None:
    """A JSONL record's optional ``frame_elements``: absent or null is not annotated; overt FEs must
    lie inside the tokens and not overlap each other (several items of one name: a discontiguous FE)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(path, lineno, f"'frame_elements' is {value!r} (expected a list of {_JSONL_FE})")
    out = [_jsonl_frame_element(item, n_tokens, path, lineno) for item in value]
    overt = sorted((fe["start"], fe["end"], fe["name"]) for fe in out if fe["null_type"] is None)
    for (s1, e1, a), (s2, e2, b) in itertools.pairwise(overt):
        if s2 <= e1:
            raise InputError(
                path, lineno, f"frame elements {a!r} [{s1}, {e1}] and {b!r} [{s2}, {e2}] overlap (expected none to)"
            )
    return out


def _jsonl_frame_element(item: Any, n_tokens: int, path: Path, lineno: int) -> dict[str, Any]:
    if not (isinstance(item, dict) and is_token(item.get("name")) and ("span" in item) != ("null" in item)):
        raise InputError(path, lineno, f"frame element {item!r} (expected {_JSONL_FE})")
    coreness = item.get("coreness")
    if coreness is not None and coreness not in CORENESS:
        raise InputError(
            path, lineno, f"frame element coreness {coreness!r} (expected one of {', '.join(CORENESS)}, or null)"
        )
    if "null" in item:
        if item["null"] not in NULL_INSTANTIATIONS:
            raise InputError(
                path, lineno, f"frame element 'null' is {item['null']!r} (expected {', '.join(NULL_INSTANTIATIONS)})"
            )
        return frame_element(item["name"], null_type=item["null"], coreness=coreness)
    span = item["span"]
    if not (isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span)):
        raise InputError(path, lineno, f"frame element {item['name']!r}: 'span' is {span!r} (expected [start, end])")
    if not 0 <= span[0] <= span[1] < n_tokens:
        raise InputError(
            path,
            lineno,
            f"frame element {item['name']!r}: span {span} out of range for {n_tokens} tokens "
            f"(expected 0 <= start <= end < {n_tokens})",
        )
    return frame_element(item["name"], span[0], span[1], coreness=coreness)
