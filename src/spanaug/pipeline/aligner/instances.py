"""Span-alignment instances: a source span in a sentence pair and its gold target span."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError
from spanaug.core.files import iter_jsonl
from spanaug.core.text import is_token


@dataclasses.dataclass
class Instance:
    """A source span in a sentence pair, with its gold target span when known (inclusive ends)."""

    id: str
    source_tokens: list[str]
    target_tokens: list[str]
    source_span: tuple[int, int]
    target_span: tuple[int, int] | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source_tokens": self.source_tokens,
            "target_tokens": self.target_tokens,
            "source_span": list(self.source_span),
            "target_span": list(self.target_span) if self.target_span is not None else None,
        }


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _span(value: Any, n: int, path: Path | str, lineno: int, key: str, nullable: bool) -> tuple[int, int] | None:
    if value is None and nullable:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value)):
        raise InputError(
            path,
            lineno,
            f"{key!r} is {value!r} (expected [start, end], inclusive token indices{', or null' if nullable else ''})",
        )
    if not 0 <= value[0] <= value[1] < n:
        raise InputError(
            path, lineno, f"{key!r} {value} out of range for {n} tokens (expected 0 <= start <= end < {n})"
        )
    return value[0], value[1]


def _id(rec: dict[str, Any], default: str, path: Path | str, lineno: int) -> str:
    value = rec.get("id", default)
    if not ((isinstance(value, str) and value.strip()) or _is_int(value)):
        raise InputError(path, lineno, f"'id' is {value!r} (expected a non-blank string or an integer)")
    return str(value)


def read_instances(path: Path | str) -> list[Instance]:
    """Span-alignment instances from JSON lines, validated (errors name the file and line): tokens
    are non-empty lists of non-blank strings, spans lie inside them, ids are unique."""
    out = []
    lines: dict[str, int] = {}
    for lineno, rec in iter_jsonl(path):
        for key in ("source_tokens", "target_tokens"):
            toks = rec.get(key)
            if not (isinstance(toks, list) and toks and all(is_token(t) for t in toks)):
                raise InputError(
                    path, lineno, f"{key!r} must be a non-empty list of tokens (strings, none empty or blank)"
                )
        src, tgt = rec["source_tokens"], rec["target_tokens"]
        inst_id = _id(rec, f"{Path(path).stem}:{lineno}", path, lineno)
        if inst_id in lines:
            raise InputError(path, lineno, f"duplicate id {inst_id!r} (first on line {lines[inst_id]})")
        lines[inst_id] = lineno
        out.append(
            Instance(
                id=inst_id,
                source_tokens=src,
                target_tokens=tgt,
                source_span=_span(rec.get("source_span"), len(src), path, lineno, "source_span", False),
                target_span=_span(rec.get("target_span"), len(tgt), path, lineno, "target_span", True),
            )
        )
    return out


def read_predictions(
    path: Path | str,
    n_targets: dict[str, int] | None = None,
) -> dict[str, tuple[tuple[int, int] | None, float | None]]:
    """Predictions ``{"id", "target_span": [a, b] or null, "score"}`` by id. With ``n_targets`` (id ->
    the gold instance's target length) a span must lie inside its target; an id may appear once."""
    preds: dict[str, tuple[tuple[int, int] | None, float | None]] = {}
    lines: dict[str, int] = {}
    for lineno, rec in iter_jsonl(path):
        if "id" not in rec or "target_span" not in rec:
            raise InputError(path, lineno, "expected {'id', 'target_span', 'score'}")
        pred_id = _id(rec, "", path, lineno)
        if pred_id in lines:
            raise InputError(path, lineno, f"duplicate prediction for id {pred_id!r} (first on line {lines[pred_id]})")
        lines[pred_id] = lineno
        n = (n_targets or {}).get(pred_id)
        span = _span(rec["target_span"], n if n is not None else 2**63, path, lineno, "target_span", True)
        score = rec.get("score")
        if score is not None and not (isinstance(score, (int, float)) and not isinstance(score, bool)):
            raise InputError(path, lineno, f"'score' is {score!r} (expected a number or null)")
        preds[pred_id] = (span, score)
    return preds


def pair_key(inst: Instance) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Instances sharing a sentence pair share its encoding."""
    return tuple(inst.source_tokens), tuple(inst.target_tokens)


def instances_from_bitext(
    pairs: Iterable[tuple[list[str], list[str]]], max_len: int = 4, prefix: str = "bitext"
) -> list[Instance]:
    """Span instances from token-level differences between a sentence and its paraphrase.

    Each replaced block of at most ``max_len`` tokens on both sides gives a (rewritten source
    span, target span) pair; a deleted block gives a source span with no counterpart. Used to
    make aligner training data from a plain paraphrase bitext (the demo has no word alignments).
    """
    out = []
    for n, (src, tgt) in enumerate(pairs):
        matcher = difflib.SequenceMatcher(a=[t.lower() for t in src], b=[t.lower() for t in tgt], autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "replace" and i2 - i1 <= max_len and j2 - j1 <= max_len:
                out.append(Instance(f"{prefix}:{n}:{i1}-{i2 - 1}", src, tgt, (i1, i2 - 1), (j1, j2 - 1)))
            elif op == "delete" and i2 - i1 <= max_len:
                out.append(Instance(f"{prefix}:{n}:{i1}-{i2 - 1}", src, tgt, (i1, i2 - 1), None))
    return out


def reverse_instances(instances: Iterable[Instance]) -> list[Instance]:
    """Each aligned instance read the other way (target span -> source span): extra training data."""
    return [
        Instance(f"{i.id}:reversed", i.target_tokens, i.source_tokens, i.target_span, i.source_span)
        for i in instances
        if i.target_span is not None
    ]


def iter_pairs_from_bitext(path: Path | str) -> Iterator[tuple[list[str], list[str]]]:
    from spanaug.core.bitext import read_bitext
    from spanaug.core.text import tokenize

    for src, tgt in read_bitext(path):
        yield tokenize(src), tokenize(tgt)


def without_pairs(instances: Sequence[Instance], held: Sequence[Instance]) -> list[Instance]:
    """``instances`` not on a sentence pair of ``held`` (either way round)."""
    blocked = {pair_key(i) for i in held}
    blocked |= {(b, a) for a, b in blocked}
    return [i for i in instances if pair_key(i) not in blocked]
