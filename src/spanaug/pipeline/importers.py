"""Importers of span-labelled corpora (FrameNet release, open-SESAME CoNLL, JSONL).

Every importer yields rows of :data:`spanaug.core.artifacts.SENTENCES`: one row per (sentence,
contiguous trigger span). Discontiguous triggers and sentences longer than ``max_tokens`` are
skipped and counted in :class:`ImportStats`.

Each row carries its frame elements (``frame_elements``) where the input has them: null when the
input does not annotate FEs, an empty list when it does and the annotation has none. A
discontiguous FE is kept split: one item per piece, all with the FE's name (counted in
``fe_discontiguous``). Null-instantiated FEs (FrameNet's CNI, DNI, INI) are kept as items without a
span. An FE may cover the trigger (an incorporated FE); two FEs of one annotation never overlap:
FrameNet XML labels that would are skipped and counted (``fe_overlapping_skipped``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import artifacts
from spanaug.core.config import ImportSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.files import iter_jsonl, iter_lines
from spanaug.core.text import char_span_tokens, detokenize, is_blank, is_token, tokenize_around_span
from spanaug.core.validation import CORENESS, NULL_INSTANTIATIONS
from spanaug.pipeline.framenet import framenet_reader, guarded, parse_fn_date

log = logging.getLogger(__name__)


@dataclasses.dataclass
class ImportStats:
    """What an importer kept and skipped, written beside its Parquet output."""

    rows_read: int = 0
    rows_kept: int = 0
    discontiguous_skipped: int = 0
    too_long_filtered: int = 0
    max_tokens: int | None = None
    #: Kept rows whose input annotates frame elements (their ``frame_elements`` is not null).
    fe_annotated_rows: int = 0
    #: Overt FEs of the kept rows (a discontiguous FE counts once per piece).
    fe_overt: int = 0
    #: Null-instantiated FEs (CNI, DNI, INI) of the kept rows.
    fe_null_instantiated: int = 0
    #: Overt FEs that share a token with the trigger (incorporated FEs such as Degree = "strongest").
    fe_covering_trigger: int = 0
    #: FEs of one annotation in several pieces, kept split (one item per piece, the same name).
    fe_discontiguous: int = 0
    #: FrameNet XML FE labels skipped: overlapping an earlier FE of their annotation, or holding no token.
    fe_overlapping_skipped: int = 0
    fe_empty_skipped: int = 0

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        kept_or_long = self.rows_kept + self.too_long_filtered
        out["share_kept_after_length_filter"] = self.rows_kept / kept_or_long if kept_or_long else None
        return out


def _check_span(tokens: list[str], start: int, end: int, path: Path | str, where: str | int) -> None:
    if not tokens:
        raise InputError(path, where, "empty sentence (no tokens)")
    if not (0 <= start <= end < len(tokens)):
        raise InputError(
            path,
            where,
            f"span [{start}, {end}] out of range for {len(tokens)} tokens (expected 0 <= start <= end < {len(tokens)})",
        )


def _keep(row: dict[str, Any], stats: ImportStats, max_tokens: int | None) -> bool:
    stats.rows_read += 1
    if max_tokens is not None and len(row["tokens"]) > max_tokens:
        stats.too_long_filtered += 1
        return False
    stats.rows_kept += 1
    _count_fes(row, stats)
    return True


def _count_fes(row: dict[str, Any], stats: ImportStats) -> None:
    fes = row.get("frame_elements")
    if fes is None:
        return
    stats.fe_annotated_rows += 1
    overt = [fe for fe in fes if fe["null_type"] is None]
    stats.fe_overt += len(overt)
    stats.fe_null_instantiated += len(fes) - len(overt)
    stats.fe_covering_trigger += sum(fe["start"] <= row["span_end"] and row["span_start"] <= fe["end"] for fe in overt)
    pieces = Counter(fe["name"] for fe in overt)
    stats.fe_discontiguous += sum(n > 1 for n in pieces.values())


def frame_element(
    name: str,
    start: int | None = None,
    end: int | None = None,
    null_type: str | None = None,
    coreness: str | None = None,
) -> dict[str, Any]:
    """One item of a ``frame_elements`` list (:data:`spanaug.core.artifacts.FRAME_ELEMENT`)."""
    return {"name": name, "start": start, "end": end, "null_type": null_type, "coreness": coreness}


CONLL_COLUMNS = 15


def conll_blocks(path: Path | str) -> Iterator[list[tuple[int, list[str]]]]:
    """The blocks of an open-SESAME CoNLL file: (line number, its 15 columns) per token."""
    block: list[tuple[int, list[str]]] = []
    for lineno, line in iter_lines(path):
        if line.strip():
            cols = line.split("\t")
            if len(cols) != CONLL_COLUMNS:
                raise InputError(path, lineno, f"expected {CONLL_COLUMNS} tab-separated columns, found {len(cols)}")
            block.append((lineno, cols))
        elif block:
            yield block
            block = []
    if block:
        yield block


def read_conll(
    path: Path | str, max_tokens: int | None = None, stats: ImportStats | None = None, label: str | None = None
) -> Iterator[dict[str, Any]]:
    """Rows from an open-SESAME CoNLL file (one block per frame annotation); ``label`` names the file
    in sentence ids (default: its stem)."""
    path = Path(path)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    for order, block in enumerate(conll_blocks(path)):
        row = conll_block_row(path, block, order, stats, label or path.stem)
        if row is not None and _keep(row, stats, max_tokens):
            yield row


def conll_block_row(
    path: Path, block: list[tuple[int, list[str]]], order: int, stats: ImportStats, label: str
) -> dict[str, Any] | None:
    """The sentence row of one CoNLL block (None: a discontiguous trigger, counted in ``stats``);
    a malformed line is an error naming it."""
    first_line = block[0][0]
    for i, (lineno, cols) in enumerate(block):
        # str.isdigit also accepts digits such as '²' that int() rejects: ASCII digits only.
        if not (cols[0].isascii() and cols[0].isdigit()) or int(cols[0]) != i + 1:
            raise InputError(path, lineno, f"token id {cols[0]!r} should be {i + 1}")
        if is_blank(cols[1]):
            raise InputError(path, lineno, f"word form {cols[1]!r} is empty or blank (expected a token in column 2)")
        if cols[12] != "_" and not (cols[12].strip() and cols[13].strip()):
            raise InputError(
                path,
                lineno,
                f"lexical unit {cols[12]!r} with frame {cols[13]!r} (expected both "
                "in columns 13 and 14, or '_' in column 13)",
            )
    tokens = [cols[1] for _, cols in block]
    trigger = [i for i, (_, cols) in enumerate(block) if cols[12] != "_"]
    if not trigger:
        raise InputError(path, first_line, "block has no trigger (lexical unit column 13 is '_' everywhere)")
    frames = {block[i][1][13] for i in trigger}
    lus = {block[i][1][12] for i in trigger}
    if len(frames) != 1 or "_" in frames or len(lus) != 1:
        raise InputError(
            path, block[trigger[0]][0], f"trigger tokens disagree on LU/frame: {sorted(lus)} {sorted(frames)}"
        )
    if trigger != list(range(trigger[0], trigger[-1] + 1)):
        stats.discontiguous_skipped += 1
        return None
    pos = [cols[5] if cols[5].strip() else "_" for _, cols in block]
    sent_no = block[0][1][6]
    return {
        "sentence_id": f"{label}:{first_line}",
        "tokens": tokens,
        "text": detokenize(tokens),
        "span_start": trigger[0],
        "span_end": trigger[-1],
        "frame": frames.pop(),
        "lexical_unit": lus.pop(),
        "pos_tags": None if all(p == "_" for p in pos) else pos,
        "source": f"conll:{label}:{first_line}",
        "corpus_part": "conll",
        "document": f"sent{sent_no}",
        "annotation_date": None,
        "order": order,
        "frame_elements": conll_frame_elements(path, block),
    }


def conll_frame_elements(path: Path | str, block: list[tuple[int, list[str]]]) -> list[dict[str, Any]] | None:
    """The FEs of a CoNLL block from column 15's BIO tags (``B-Name`` opens an FE, ``I-Name``
    continues it, ``O`` is outside any). A block tagged ``_`` throughout annotates no FE (None);
    elsewhere ``_`` reads as ``O``. Coreness is not in the format. Two pieces of one name are one
    discontiguous FE, kept split."""
    tags = [cols[14].strip() for _, cols in block]
    if all(t == "_" for t in tags):
        return None
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for i, ((lineno, _), tag) in enumerate(zip(block, tags)):
        kind, dash, name = tag.partition("-")
        if tag in ("O", "_"):
            current = None
        elif dash and kind == "B" and not is_blank(name):
            current = frame_element(name, i, i)
            out.append(current)
        elif dash and kind == "I" and current is not None and current["name"] == name:
            current["end"] = i
        elif dash and kind == "I" and not is_blank(name):
            raise InputError(path, lineno, f"frame-element tag {tag!r} continues no B-{name} (expected B-{name} first)")
        else:
            raise InputError(path, lineno, f"frame-element tag {tag!r} in column 15 (expected O, B-Name or I-Name)")
    return out


def read_jsonl_sentences(
    path: Path | str, max_tokens: int | None = None, stats: ImportStats | None = None, label: str | None = None
) -> Iterator[dict[str, Any]]:
    """Rows from JSON lines ``{"tokens", "span": [s, e] (inclusive), "frame"|"label", ...}``."""
    path = Path(path)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    for lineno, rec in iter_jsonl(path):
        row = _jsonl_row(path, lineno, rec, label or path.stem)
        if _keep(row, stats, max_tokens):
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
    _check_span(tokens, span[0], span[1], path, lineno)
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


def _numbered(
    rows: Iterable[dict[str, Any] | None], order: Iterator[int], stats: ImportStats, max_tokens: int | None
) -> Iterator[dict[str, Any]]:
    """The kept rows, each with its position from ``order``. None (a discontiguous target) is not a
    row but still takes its place, so positions do not depend on what was skipped."""
    for row in rows:
        position = next(order)
        if row is not None:
            row["order"] = position
            if _keep(row, stats, max_tokens):
                yield row


def read_framenet(
    root: Path | str,
    max_tokens: int | None = None,
    parts: Iterable[str] = ("exemplar", "fulltext"),
    stats: ImportStats | None = None,
    label: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows from a FrameNet release directory (``frame/``, ``lu/``, ``fulltext/`` and indexes).

    Read with NLTK's FrameNet reader pointed at ``root``: nothing is downloaded. ``label`` goes into
    sentence ids when several releases are imported together. Each LU file or document is read
    whole under :func:`guarded`, so an error names the file at fault (NLTK loads lazily).
    """
    root = Path(root)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    parts = set(parts)
    unknown = parts - {"exemplar", "fulltext"}
    if unknown:
        raise ConfigError(f"unknown FrameNet part(s) {sorted(unknown)}; use exemplar and/or fulltext")
    reader = framenet_reader(root)
    prefix = f"fn:{label}:" if label else "fn:"
    order = itertools.count()  # one running position over exemplars, then documents
    if "exemplar" in parts:
        lu_ids = guarded(root / "luIndex.xml", lambda: sorted(reader.lu_ids_and_names()), reader)
        for lu_id in lu_ids:
            lu_path = root / "lu" / f"lu{lu_id}.xml"
            if not lu_path.is_file():
                continue  # FrameNet lists LUs without annotation files
            rows = guarded(lu_path, functools.partial(_lu_rows, reader, root, lu_id, lu_path, prefix, stats), reader)
            yield from _numbered(rows, order, stats, max_tokens)
    if "fulltext" in parts and (root / "fulltextIndex.xml").is_file():
        docs = guarded(root / "fulltextIndex.xml", lambda: list(reader.docs_metadata()), reader)
        for meta in docs:
            doc_path = root / "fulltext" / str(meta.filename)
            rows = guarded(doc_path, functools.partial(_doc_rows, reader, root, meta, doc_path, prefix, stats), reader)
            yield from _numbered(rows, order, stats, max_tokens)


def _lu_rows(
    reader,
    root: Path,
    lu_id: int,
    lu_path: Path,
    prefix: str,
    stats: ImportStats,
) -> list[dict[str, Any] | None]:
    """The rows of one LU's exemplars (None for a discontiguous target)."""
    lu = reader.lu(lu_id)
    rows = []
    for sent in lu.exemplars:
        asets = [a for a in sent.annotationSet if a.get("status") != "UNANN" and "Target" in a]
        if not asets:
            continue
        rows.append(
            _fn_row(
                sent,
                asets[0],
                lu.frame,
                lu.name,
                f"framenet:{lu_path.relative_to(root)}:sentence {sent.ID}",
                "exemplar",
                None,
                stats,
                lu_path,
                prefix,
            )
        )
    return rows


def _doc_rows(
    reader,
    root: Path,
    meta,
    doc_path: Path,
    prefix: str,
    stats: ImportStats,
) -> list[dict[str, Any] | None]:
    """The rows of one full-text document, one per frame annotation (None: a discontiguous target)."""
    doc = reader.doc(meta.ID)
    rows = []
    for sent in doc.sentence:
        for aset in sent.annotationSet[1:]:
            if "Target" not in aset or "luName" not in aset:
                continue
            rows.append(
                _fn_row(
                    sent,
                    aset,
                    _frame_of(reader, sent, aset, doc_path),
                    aset.luName,
                    f"framenet:{doc_path.relative_to(root)}:sentence {sent.ID}",
                    "fulltext",
                    str(meta.filename).removesuffix(".xml"),
                    stats,
                    doc_path,
                    prefix,
                )
            )
    return rows


def _frame_of(reader, sent, aset, path: Path):
    """The frame a full-text annotation set names (for its FEs' coreness)."""
    where = f"sentence {sent.get('ID')}"
    if not isinstance(aset.get("frameName"), str) or not aset.frameName.strip():
        raise InputError(path, where, "annotation set has no frame name")
    # Loading the frame may fail on a frame file or an unknown name: guarded() names the file at fault.
    return reader.frame_by_name(aset.frameName)


def _fn_row(
    sent,
    aset,
    frame,
    lu: str,
    source: str,
    part: str,
    document: str | None,
    stats: ImportStats,
    path: Path,
    prefix: str = "fn:",
) -> dict[str, Any] | None:
    where = f"sentence {sent.get('ID')}"
    text = sent.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(path, where, "sentence has no text")
    for name, value in (("frame", frame.get("name")), ("lexical unit", lu)):
        if not isinstance(value, str) or not value.strip():
            raise InputError(path, where, f"annotation set has no {name} name")
    spans = sorted(aset.Target)
    if not spans or not all(len(sp) == 2 and all(isinstance(x, int) for x in sp) for sp in spans):
        raise InputError(path, where, f"target labels {spans!r} (expected character offsets)")
    start, end = spans[0][0], spans[-1][1]
    # Adjacent pieces separated only by blanks are one contiguous span (e.g. "gave up").
    for (_, prev_end), (next_start, _) in itertools.pairwise(spans):
        if text[prev_end:next_start].strip():
            stats.discontiguous_skipped += 1
            return None
    if not (0 <= start < end <= len(text)):
        raise InputError(path, where, f"target [{start}, {end}) out of range for {len(text)} characters")
    labels = _fe_labels(aset, text, path, where)
    try:
        cuts = [x for s, e, _ in (labels[0] if labels else ()) for x in (s, e)]
        tokens, offsets, span_start, span_end = tokenize_around_span(text, start, end, cuts)
    except ValueError:
        raise InputError(path, where, f"target {text[start:end]!r} holds no token") from None
    return {
        "sentence_id": f"{prefix}{sent.ID}:{start}-{end}",
        "tokens": tokens,
        "text": text,
        "span_start": span_start,
        "span_end": span_end,
        "frame": frame.name,
        "lexical_unit": lu,
        "pos_tags": _fn_pos(sent, offsets),
        "source": source,
        "corpus_part": part,
        "document": document,
        "annotation_date": parse_fn_date(aset.get("cDate")),
        "order": 0,
        "frame_elements": _fn_frame_elements(labels, offsets, frame, stats),
    }


def _fe_labels(aset, text: str, path: Path, where: str) -> tuple[list[tuple[int, int, str]], dict[str, str]] | None:
    """An annotation set's FE layer (rank 1) as NLTK reads it: overt labels (character start, end
    exclusive, name) and null instantiations (name -> CNI|DNI|INI); None without an FE layer."""
    layer = aset.get("FE")
    if layer is None:
        return None
    overt, nulls = layer
    for s, e, name in overt:
        if not (isinstance(name, str) and not is_blank(name) and 0 <= s < e <= len(text)):
            raise InputError(path, where, f"FE label {name!r} at [{s}, {e}) (expected a name and offsets in the text)")
    for name, kind in nulls.items():
        if kind not in NULL_INSTANTIATIONS or is_blank(name):
            raise InputError(path, where, f"FE {name!r} null-instantiated as {kind!r} (expected CNI, DNI or INI)")
    return overt, nulls


def _fn_frame_elements(
    labels: tuple[list[tuple[int, int, str]], dict[str, str]] | None,
    offsets: list[tuple[int, int]],
    frame,
    stats: ImportStats,
) -> list[dict[str, Any]] | None:
    """FE labels as token spans (over tokens cut at every FE edge), each with its coreness in the
    frame; a label that overlaps an earlier one (by start, the longer first) or holds no token is
    skipped and counted."""
    if labels is None:
        return None
    overt, nulls = labels
    fes = frame.get("FE") or {}

    def coreness(name: str) -> str | None:
        core = fes[name].get("coreType") if name in fes else None
        return core if core in CORENESS else None

    out, last_end = [], -1
    for s, e, name in sorted(overt, key=lambda label: (label[0], -label[1])):
        span = char_span_tokens(offsets, s, e)
        if span is None:
            stats.fe_empty_skipped += 1
        elif span[0] <= last_end:
            stats.fe_overlapping_skipped += 1
        else:
            out.append(frame_element(name, span[0], span[1], coreness=coreness(name)))
            last_end = span[1]
    out += [frame_element(name, null_type=kind, coreness=coreness(name)) for name, kind in sorted(nulls.items())]
    return out


def _fn_pos(sent, offsets: list[tuple[int, int]]) -> list[str] | None:
    """PENN tags from the sentence's POS layer where its spans match our tokens."""
    pos_spans = sent.get("POS") or (sent.annotationSet[0].get("POS") if sent.annotationSet else None)
    if not pos_spans:
        return None
    by_span = {(s, e): tag for s, e, tag in pos_spans}
    return [by_span.get(off, "_") for off in offsets]


IMPORTERS = {"framenet": read_framenet, "conll": read_conll, "jsonl": read_jsonl_sentences}


def input_labels(paths: Sequence[Path | str]) -> list[str]:
    """A name per input for sentence ids: the file's stem, with as many of its folders as it takes
    to tell apart inputs of the same name (``a/dev.conll`` and ``b/dev.conll``: ``a/dev``, ``b/dev``)."""
    full = [Path(p).resolve() for p in paths]
    for depth in range(1, max(len(p.parts) for p in full) + 1):
        labels = ["/".join(p.with_suffix("").parts[-depth:]) for p in full]
        if len(set(labels)) == len(labels):
            return labels
    return [str(p) for p in full]  # same folder and stem: the names differ only in their suffix


def import_corpus(cfg: ImportSettings, out: Path | str) -> ImportStats:
    """Import the inputs (all of one format) into a SENTENCES artifact, streaming.

    An input that yields no sentence is an error naming it, and so is an import that keeps none
    (every sentence longer than ``max_tokens``): an empty corpus would run the whole pipeline on
    nothing and exit 0.
    """
    stats = ImportStats(max_tokens=cfg.max_tokens)
    seen: set[str] = set()
    labels = input_labels(cfg.inputs) if len(cfg.inputs) > 1 else [None] * len(cfg.inputs)
    with artifacts.open_writer(out, artifacts.SENTENCES) as writer:
        buffer: list[dict[str, Any]] = []
        for path, label in zip(cfg.inputs, labels):
            kwargs = {"parts": cfg.parts} if cfg.format == "framenet" else {}
            read_before, skipped_before = stats.rows_read, stats.discontiguous_skipped
            for row in IMPORTERS[cfg.format](path, max_tokens=cfg.max_tokens, stats=stats, label=label, **kwargs):
                if row["sentence_id"] in seen:
                    raise InputError(path, row["source"], f"duplicate sentence id {row['sentence_id']!r}")
                seen.add(row["sentence_id"])
                buffer.append(row)
                if len(buffer) >= 4096:
                    writer.write(buffer)
                    buffer = []
            if stats.rows_read == read_before:
                skipped = stats.discontiguous_skipped - skipped_before
                why = f" ({skipped} with discontiguous triggers skipped)" if skipped else ""
                raise InputError(
                    path,
                    None,
                    f"holds no annotated sentence{why} (expected {cfg.format} input "
                    "with at least one contiguous trigger)",
                )
        writer.write(buffer)
        if not stats.rows_kept:
            raise InputError(
                ", ".join(map(str, cfg.inputs)),
                None,
                f"all {stats.rows_read} sentences are longer than max_tokens={cfg.max_tokens}: nothing to import",
            )
    log.info("imported %d rows from %s (%s)", stats.rows_kept, ", ".join(map(str, cfg.inputs)), stats.as_dict())
    return stats
