"""Importers of span-labelled corpora (FrameNet release, open-SESAME CoNLL, JSONL) and seed selection.

Every importer yields rows of :data:`spanaug.artifacts.SENTENCES`: one row per (sentence,
contiguous trigger span). Discontiguous triggers and sentences longer than ``max_tokens`` are
skipped and counted in :class:`ImportStats`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import zlib
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug import artifacts
from spanaug.errors import ConfigError, InputError

log = logging.getLogger(__name__)

_TOKEN_RE = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]", re.UNICODE)


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
        if out and not (
            re.fullmatch(r"[.,;:!?%)\]}]|'s|n't|'[a-z]{1,2}", tok) or out.endswith(("(", "[", "$"))
        ):
            out += " "
        out += tok
    return out


def tokenize_around_span(text: str, char_start: int, char_end: int) -> tuple[list[str], list[tuple[int, int]], int, int]:
    """Tokenize ``text`` with token boundaries forced at the span's edges.

    Returns tokens, their offsets and the inclusive token span covering
    ``text[char_start:char_end]``.
    """
    before = tokenize_with_offsets(text[:char_start], 0)
    inside = tokenize_with_offsets(text[char_start:char_end], char_start)
    pieces = before + inside + tokenize_with_offsets(text[char_end:], char_end)
    n_before, n_span = len(before), len(inside)
    if n_span == 0:
        raise ValueError("span holds no token")
    tokens = [p[0] for p in pieces]
    offsets = [(p[1], p[2]) for p in pieces]
    return tokens, offsets, n_before, n_before + n_span - 1


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


# ---------------------------------------------------------------- open-SESAME CoNLL


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


# ---------------------------------------------------------------- JSONL


def iter_jsonl(path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error naming it."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, lineno, f"invalid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise InputError(path, lineno, "each line must be a JSON object")
            yield lineno, rec


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


# ---------------------------------------------------------------- FrameNet release


def parse_fn_date(value: str | None) -> str | None:
    """FrameNet's ``cDate`` ("02/08/2001 01:27:50 PST Thu") as ISO 8601, or None."""
    if not value:
        return None
    try:
        return datetime.strptime(value[:19], "%m/%d/%Y %H:%M:%S").isoformat()
    except ValueError:
        return None


def framenet_reader(root: Path):  # noqa: ANN201
    """NLTK's FrameNet reader on a release directory (nothing is downloaded)."""
    from nltk.corpus.reader.framenet import FramenetCorpusReader
    import nltk.data

    for index in ("frameIndex.xml", "luIndex.xml", "frRelation.xml"):
        if not (root / index).is_file():
            raise InputError(root / index, None, "missing: not a FrameNet release directory")
    # NLTK's path sandbox reads only under nltk.data.path; the user named this root explicitly.
    resolved = str(root.resolve())
    if resolved not in nltk.data.path:
        nltk.data.path.append(resolved)
    return FramenetCorpusReader(resolved, [])


def framenet_lexicon(root: Path | str) -> dict[str, set[str]]:
    """Frame name -> its lexical units (``lemma.pos``, lower-cased) from a release's LU index."""
    root = Path(root)
    reader = framenet_reader(root)
    lexicon: dict[str, set[str]] = {}
    for lu in _guarded(root / "luIndex.xml", lambda: list(reader.lus())):
        lexicon.setdefault(lu.frame.name, set()).add(lu.name.lower())
    return lexicon


def framenet_definitions(root: Path | str) -> dict[str, str]:
    """Frame name -> its definition text (markup stripped), for annotation tasks."""
    root = Path(root)
    reader = framenet_reader(root)
    out = {}
    for frame in _guarded(root / "frameIndex.xml", lambda: list(reader.frames())):
        out[frame.name] = re.sub(r"<[^>]+>", "", frame.definition or "").strip()
    return out


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


def _guarded(path: Path, load):  # noqa: ANN001, ANN202
    """Run an NLTK load, turning any parse failure into an error naming the file."""
    try:
        return load()
    except InputError:
        raise
    except Exception as exc:  # NLTK raises assorted errors on malformed XML
        raise InputError(path, None, f"malformed FrameNet XML: {type(exc).__name__}: {exc}") from exc


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


# ---------------------------------------------------------------- import entry point


IMPORTERS = {"framenet": read_framenet, "conll": read_conll, "jsonl": read_jsonl_sentences}


def import_corpus(fmt: str, inputs: list[Path | str], out: Path | str, max_tokens: int | None = None,
                  parts: Iterable[str] = ("exemplar", "fulltext")) -> ImportStats:
    """Import one or more inputs of one format into a SENTENCES artifact, streaming."""
    if fmt not in IMPORTERS:
        raise ConfigError(f"unknown input format {fmt!r}; choose one of {sorted(IMPORTERS)}")
    stats = ImportStats(max_tokens=max_tokens)
    seen: set[str] = set()
    with artifacts.open_writer(out, artifacts.SENTENCES) as writer:
        buffer: list[dict[str, Any]] = []
        for path in inputs:
            kwargs = {"parts": parts} if fmt == "framenet" else {}
            for row in IMPORTERS[fmt](path, max_tokens=max_tokens, stats=stats, **kwargs):
                if row["sentence_id"] in seen:
                    raise InputError(path, row["source"], f"duplicate sentence id {row['sentence_id']!r}")
                seen.add(row["sentence_id"])
                buffer.append(row)
                if len(buffer) >= 4096:
                    writer.write(buffer)
                    buffer = []
        writer.write(buffer)
    log.info("imported %d rows from %s (%s)", stats.rows_kept, ", ".join(map(str, inputs)), stats.as_dict())
    return stats


# ---------------------------------------------------------------- seeds and shards


def select_seeds(table: pa.Table, mode: str, n_frames: int = 20, lus_per_frame: int = 3,
                 per_lu: int = 3) -> tuple[pa.Table, dict[str, Any]]:
    """Choose the seed rows: ``all``, or ``from_scratch`` as in the paper's §6.1.

    ``from_scratch`` takes the first ``n_frames`` frames (by name) with at least ``lus_per_frame``
    annotated LUs, the first LUs of each and the first annotations of each LU by creation date;
    rows without dates fall back on their order in the input.
    """
    if mode == "all":
        return table, {"mode": mode, "seeds": table.num_rows}
    if mode != "from_scratch":
        raise ConfigError(f"seeds.mode must be 'all' or 'from_scratch', not {mode!r}")
    dates = table.column("annotation_date").to_pylist()
    orders = table.column("order").to_pylist()
    uses_order = all(d is None for d in dates)
    key_rows = sorted(range(table.num_rows), key=lambda i: (dates[i] is None, dates[i] or "", orders[i]))
    rank = {row: r for r, row in enumerate(key_rows)}
    frames = table.column("frame").to_pylist()
    lus = table.column("lexical_unit").to_pylist()
    by_frame: dict[str, dict[str, list[int]]] = {}
    for i in key_rows:
        by_frame.setdefault(frames[i], {}).setdefault(lus[i], []).append(i)
    chosen: list[int] = []
    chosen_frames: list[str] = []
    for frame in sorted(by_frame):
        lu_rows = by_frame[frame]
        if len(lu_rows) < lus_per_frame:
            continue
        # LUs in the order of their first annotation.
        first_lus = sorted(lu_rows, key=lambda lu: rank[lu_rows[lu][0]])
        for lu in first_lus[:lus_per_frame]:
            chosen.extend(lu_rows[lu][:per_lu])
        chosen_frames.append(frame)
        if len(chosen_frames) == n_frames:
            break
    seeds = table.take(pa.array(sorted(chosen), type=pa.int64()))
    report = {
        "mode": mode,
        "seeds": seeds.num_rows,
        "frames": chosen_frames,
        "ordering": "input order stands in for annotation dates" if uses_order else "annotation date",
    }
    return seeds, report


def shard_of(key: str, n_shards: int) -> int:
    """A stable shard index for a key (the same on every machine and run)."""
    return zlib.crc32(key.encode("utf-8")) % n_shards


def shard_table(table: pa.Table, key: str, n_shards: int) -> list[pa.Table]:
    """Split ``table`` into ``n_shards`` parts by a stable hash of column ``key``."""
    idx = pa.array([shard_of(k, n_shards) for k in table.column(key).to_pylist()], type=pa.int32())
    return [table.filter(pc.equal(idx, j)) for j in range(n_shards)]
