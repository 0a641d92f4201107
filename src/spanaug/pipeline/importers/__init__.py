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

One module per format (:mod:`.framenet`, :mod:`.conll`, :mod:`.jsonl`) and their shared helpers
(:mod:`.common`); this package holds the import itself and names every public importer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanaug.core import artifacts
from spanaug.core.config import ImportSettings
from spanaug.core.errors import InputError
from spanaug.pipeline.importers.common import ImportStats, frame_element
from spanaug.pipeline.importers.conll import (
    CONLL_COLUMNS,
    conll_block_row,
    conll_blocks,
    conll_frame_elements,
    read_conll,
)
from spanaug.pipeline.importers.framenet import read_framenet
from spanaug.pipeline.importers.jsonl import read_jsonl_sentences

__all__ = [
    "CONLL_COLUMNS",
    "IMPORTERS",
    "ImportStats",
    "conll_block_row",
    "conll_blocks",
    "conll_frame_elements",
    "frame_element",
    "import_corpus",
    "input_labels",
    "read_conll",
    "read_framenet",
    "read_jsonl_sentences",
]

log = logging.getLogger(__name__)


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
