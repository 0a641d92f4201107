"""Importers of span-labelled corpora (FrameNet release, open-SESAME CoNLL, JSONL).

Every importer yields rows of :data:`spanaug.core.artifacts.SENTENCES`: one row per (sentence,
contiguous trigger span). Discontiguous triggers and sentences longer than ``max_tokens`` are
skipped and counted in :class:`ImportStats`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from spanaug.core import artifacts
from spanaug.core.config import ImportSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.files import iter_jsonl
from spanaug.core.text import detokenize, tokenize_around_span
from spanaug.pipeline.framenet import _guarded, framenet_reader, parse_fn_date

log = logging.getLogger(__name__)


@dataclasses.dataclass
class ImportStats:
    """What an importer kept and skipped, written beside its Parquet output."""

    rows_read: int = 0
    rows_kept: int = 0
    discontiguous_skipped: int = 0
    too_long_filtered: int = 0
    max_tokens: int | None = None

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
            path, where, f"span [{start}, {end}] out of range for {len(tokens)} tokens"
        )


def _keep(row: dict[str, Any], stats: ImportStats, max_tokens: int | None) -> bool:
    stats.rows_read += 1
    if max_tokens is not None and len(row["tokens"]) > max_tokens:
        stats.too_long_filtered += 1
        return False
    stats.rows_kept += 1
    return True


CONLL_COLUMNS = 15


def read_conll(path: Path | str, max_tokens: int | None = None, stats: ImportStats | None = None) -> Iterator[dict[str, Any]]:
    """Rows from an open-SESAME CoNLL file (one block per frame annotation)."""
    path = Path(path)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    block: list[tuple[int, list[str]]] = []
    order = 0
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if line.strip():
                cols = line.split("\t")
                if len(cols) != CONLL_COLUMNS:
                    raise InputError(path, lineno, f"expected {CONLL_COLUMNS} tab-separated columns, found {len(cols)}")
                block.append((lineno, cols))
                continue
            if block:
                row = _conll_block(path, block, order, stats)
                order += 1
                if row is not None and _keep(row, stats, max_tokens):
                    yield row
                block = []
        if block:
            row = _conll_block(path, block, order, stats)
            if row is not None and _keep(row, stats, max_tokens):
                yield row


def _conll_block(path: Path, block: list[tuple[int, list[str]]], order: int, stats: ImportStats) -> dict[str, Any] | None:
    first_line = block[0][0]
    for i, (lineno, cols) in enumerate(block):
        if not cols[0].isdigit() or int(cols[0]) != i + 1:
            raise InputError(path, lineno, f"token id {cols[0]!r} should be {i + 1}")
        if not cols[1]:
            raise InputError(path, lineno, "empty word form")
    tokens = [cols[1] for _, cols in block]
    trigger = [i for i, (_, cols) in enumerate(block) if cols[12] != "_"]
    if not trigger:
        raise InputError(path, first_line, "block has no trigger (lexical unit column 13 is '_' everywhere)")
    frames = {block[i][1][13] for i in trigger}
    lus = {block[i][1][12] for i in trigger}
    if len(frames) != 1 or "_" in frames or len(lus) != 1:
        raise InputError(path, block[trigger[0]][0], f"trigger tokens disagree on LU/frame: {sorted(lus)} {sorted(frames)}")
    if trigger != list(range(trigger[0], trigger[-1] + 1)):
        stats.discontiguous_skipped += 1
        return None
    pos = [cols[5] for _, cols in block]
    sent_no = block[0][1][6]
    return {
        "sentence_id": f"{path.stem}:{first_line}",
        "tokens": tokens,
        "text": detokenize(tokens),
        "span_start": trigger[0],
        "span_end": trigger[-1],
        "frame": frames.pop(),
        "lexical_unit": lus.pop(),
        "pos_tags": None if all(p == "_" for p in pos) else pos,
        "source": f"conll:{path.name}:{first_line}",
        "corpus_part": "conll",
        "document": f"sent{sent_no}",
        "annotation_date": None,
        "order": order,
    }


def read_jsonl_sentences(path: Path | str, max_tokens: int | None = None, stats: ImportStats | None = None) -> Iterator[dict[str, Any]]:
    """Rows from JSON lines ``{"tokens", "span": [s, e] (inclusive), "frame"|"label", ...}``."""
    path = Path(path)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    for lineno, rec in iter_jsonl(path):
        row = _jsonl_row(path, lineno, rec)
        if _keep(row, stats, max_tokens):
            yield row


def _jsonl_row(path: Path, lineno: int, rec: dict[str, Any]) -> dict[str, Any]:
    tokens = rec.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
        raise InputError(path, lineno, "'tokens' must be a list of non-empty strings")
    span = rec.get("span", [rec.get("span_start"), rec.get("span_end")])
    if not (isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)):
        raise InputError(path, lineno, "'span' must be [start, end] (inclusive token indices)")
    _check_span(tokens, span[0], span[1], path, lineno)
    frame = rec.get("frame", rec.get("label"))
    if not isinstance(frame, str) or not frame:
        raise InputError(path, lineno, "'frame' (or 'label') must be a non-empty string")
    trigger = " ".join(tokens[span[0] : span[1] + 1]).lower()
    return {
        "sentence_id": str(rec.get("id", f"{path.stem}:{lineno}")),
        "tokens": tokens,
        "text": rec.get("text") or detokenize(tokens),
        "span_start": span[0],
        "span_end": span[1],
        "frame": frame,
        "lexical_unit": rec.get("lexical_unit") or f"{trigger}",
        "pos_tags": rec.get("pos_tags"),
        "source": f"jsonl:{path.name}:{lineno}",
        "corpus_part": "jsonl",
        "document": rec.get("document"),
        "annotation_date": rec.get("annotation_date"),
        "order": lineno,
    }


def read_framenet(
    root: Path | str,
    max_tokens: int | None = None,
    parts: Iterable[str] = ("exemplar", "fulltext"),
    stats: ImportStats | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows from a FrameNet release directory (``frame/``, ``lu/``, ``fulltext/`` and indexes).

    Read with NLTK's FrameNet corpus reader pointed at ``root``: nothing is downloaded.
    """
    root = Path(root)
    stats = stats if stats is not None else ImportStats(max_tokens=max_tokens)
    reader = framenet_reader(root)
    order = 0
    parts = set(parts)
    unknown = parts - {"exemplar", "fulltext"}
    if unknown:
        raise ConfigError(f"unknown FrameNet part(s) {sorted(unknown)}; use exemplar and/or fulltext")
    if "exemplar" in parts:
        lu_ids = _guarded(root / "luIndex.xml", lambda: sorted(reader.lu_ids_and_names()))
        for lu_id in lu_ids:
            lu_path = root / "lu" / f"lu{lu_id}.xml"
            if not lu_path.is_file():
                continue  # FrameNet lists LUs without annotation files
            lu = _guarded(lu_path, lambda: reader.lu(lu_id))
            exemplars = _guarded(lu_path, lambda: list(lu.exemplars))  # loaded lazily by NLTK
            for sent in exemplars:
                asets = [a for a in sent.annotationSet if a.get("status") != "UNANN" and "Target" in a]
                if not asets:
                    continue
                row = _fn_row(sent, asets[0].Target, lu.frame.name, lu.name, asets[0].get("cDate"),
                              f"framenet:{lu_path.relative_to(root)}:sentence {sent.ID}", "exemplar",
                              None, order, stats, lu_path)
                order += 1
                if row is not None and _keep(row, stats, max_tokens):
                    yield row
    if "fulltext" in parts and (root / "fulltextIndex.xml").is_file():
        docs = _guarded(root / "fulltextIndex.xml", lambda: list(reader.docs_metadata()))
        for meta in docs:
            doc_path = root / "fulltext" / meta.filename
            doc = _guarded(doc_path, lambda: reader.doc(meta.ID))
            for sent in doc.sentence:
                for aset in sent.annotationSet[1:]:
                    if "Target" not in aset or "luName" not in aset:
                        continue
                    row = _fn_row(sent, aset.Target, aset.frameName, aset.luName, aset.get("cDate"),
                                  f"framenet:{doc_path.relative_to(root)}:sentence {sent.ID}", "fulltext",
                                  meta.filename.removesuffix(".xml"), order, stats, doc_path)
                    order += 1
                    if row is not None and _keep(row, stats, max_tokens):
                        yield row


def _fn_row(sent, target_spans, frame: str, lu: str, cdate: str | None, source: str, part: str,
            document: str | None, order: int, stats: ImportStats, path: Path) -> dict[str, Any] | None:  # noqa: ANN001
    spans = sorted(target_spans)
    text = sent.text
    start, end = spans[0][0], spans[-1][1]
    # Adjacent pieces separated only by blanks are one contiguous span (e.g. "gave up").
    for (_, prev_end), (next_start, _) in zip(spans, spans[1:]):
        if text[prev_end:next_start].strip():
            stats.discontiguous_skipped += 1
            return None
    if not (0 <= start < end <= len(text)):
        raise InputError(path, f"sentence {sent.ID}", f"target [{start}, {end}) out of range for {len(text)} characters")
    try:
        tokens, offsets, span_start, span_end = tokenize_around_span(text, start, end)
    except ValueError:
        raise InputError(path, f"sentence {sent.ID}", f"target {text[start:end]!r} holds no token") from None
    return {
        "sentence_id": f"fn:{sent.ID}:{start}-{end}",
        "tokens": tokens,
        "text": text,
        "span_start": span_start,
        "span_end": span_end,
        "frame": frame,
        "lexical_unit": lu,
        "pos_tags": _fn_pos(sent, offsets),
        "source": source,
        "corpus_part": part,
        "document": document,
        "annotation_date": parse_fn_date(cdate),
        "order": order,
    }


def _fn_pos(sent, offsets: list[tuple[int, int]]) -> list[str] | None:  # noqa: ANN001
    """PENN tags from the sentence's POS layer where its spans match our tokens."""
    pos_spans = sent.get("POS") or (sent.annotationSet[0].get("POS") if sent.annotationSet else None)
    if not pos_spans:
        return None
    by_span = {(s, e): tag for s, e, tag in pos_spans}
    return [by_span.get(off, "_") for off in offsets]


IMPORTERS = {"framenet": read_framenet, "conll": read_conll, "jsonl": read_jsonl_sentences}


def import_corpus(cfg: ImportSettings, out: Path | str) -> ImportStats:
    """Import the inputs (all of one format) into a SENTENCES artifact, streaming."""
    stats = ImportStats(max_tokens=cfg.max_tokens)
    seen: set[str] = set()
    with artifacts.open_writer(out, artifacts.SENTENCES) as writer:
        buffer: list[dict[str, Any]] = []
        for path in cfg.inputs:
            kwargs = {"parts": cfg.parts} if cfg.format == "framenet" else {}
            for row in IMPORTERS[cfg.format](path, max_tokens=cfg.max_tokens, stats=stats, **kwargs):
                if row["sentence_id"] in seen:
                    raise InputError(path, row["source"], f"duplicate sentence id {row['sentence_id']!r}")
                seen.add(row["sentence_id"])
                buffer.append(row)
                if len(buffer) >= 4096:
                    writer.write(buffer)
                    buffer = []
        writer.write(buffer)
    log.info("imported %d rows from %s (%s)", stats.rows_kept, ", ".join(map(str, cfg.inputs)), stats.as_dict())
    return stats
