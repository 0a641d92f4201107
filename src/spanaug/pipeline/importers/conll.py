"""The open-SESAME CoNLL importer: one block of 15 tab-separated columns per frame annotation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError
from spanaug.core.files import iter_lines
from spanaug.core.text import detokenize, is_blank
from spanaug.pipeline.importers.common import ImportStats, frame_element, keep

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
        if row is not None and keep(row, stats, max_tokens):
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
