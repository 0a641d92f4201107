"""The FrameNet release importer: exemplars of every LU, then full-text documents, read with NLTK."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from spanaug.core.errors import ConfigError, InputError
from spanaug.core.text import char_span_tokens, is_blank, tokenize_around_span
from spanaug.core.validation import CORENESS, NULL_INSTANTIATIONS
from spanaug.pipeline.framenet import framenet_reader, guarded, parse_fn_date
from spanaug.pipeline.importers.common import ImportStats, frame_element, keep


def _numbered(
    rows: Iterable[dict[str, Any] | None], order: Iterator[int], stats: ImportStats, max_tokens: int | None
) -> Iterator[dict[str, Any]]:
    """The kept rows, each with its position from ``order``. None (a discontiguous target) is not a
    row but still takes its place, so positions do not depend on what was skipped."""
    for row in rows:
        position = next(order)
        if row is not None:
            row["order"] = position
            if keep(row, stats, max_tokens):
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
