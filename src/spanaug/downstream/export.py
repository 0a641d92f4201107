"""The augmented dataset for other tools: open-SESAME CoNLL, and a dataset card for release.

Frame ID and SRL tools (open-SESAME and its successors) read the open-SESAME CoNLL format, so
every aligned output becomes one CoNLL block: 15 tab-separated columns per token (id, form, ``_``,
lemma, coarse POS, POS, sentence number, five ``_``, lexical unit, frame, frame-element tag), the
lexical unit and frame on the trigger tokens, and the output's frame elements as BIO tags
(``B-Name`` on an FE's first token, ``I-Name`` on the others, ``O`` outside any; all ``O`` for an
output whose FEs are null: ``frame_elements.mode`` off, or none annotated). An FE has tags only
where it has words: the format has no place for null-instantiated FEs, for FEs a paraphrase lost
(``LOST``: no span in the output) or for coreness, so those leave nothing in column 15 and are
counted apart in the summary. The project's own importer
(:func:`spanaug.pipeline.importers.read_conll`) reads such a file back, one row per output, with
the same overt FEs.

The dataset card that goes with the export is :mod:`spanaug.downstream.card`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import artifacts, files
from spanaug.core.degraded import warn
from spanaug.core.errors import ArtifactError
from spanaug.core.tagging import load_tagger
from spanaug.core.validation import LOST
from spanaug.pipeline.constraints import lemma_of
from spanaug.pipeline.importers import CONLL_COLUMNS

log = logging.getLogger(__name__)

_EXPORT_COLUMNS = [
    "output_id",
    "seed_id",
    "frame",
    "lexical_unit",
    "iteration",
    "paraphrase_tokens",
    "aligned_start",
    "aligned_end",
    "aligned_text",
    "aligned_lemma",
    "frame_elements",
]


def output_lexical_unit(aligned_lemma: str | None, aligned_text: str | None, seed_lu: str) -> str:
    """The output's own lexical unit: its aligned span's lemma with the seed LU's part of speech
    (``purchase.v`` for a seed ``buy.v`` rewritten as *purchased*)."""
    lemma = (aligned_lemma or aligned_text or "").lower()
    pos = seed_lu.rpartition(".")[2] if "." in seed_lu else ""
    return f"{lemma}.{pos}" if pos else lemma


def fe_tags(row: Mapping[str, Any], n_tokens: int) -> list[str]:
    """Column 15: the output's overt FEs as BIO tags (each piece of a discontiguous FE opens with
    ``B-``, so the importer reads the pieces back apart)."""
    tags = ["O"] * n_tokens
    for fe in row.get("frame_elements") or ():
        if fe["null_type"] is not None:  # null-instantiated or LOST: no words to tag
            continue
        if any(c.isspace() for c in fe["name"]):
            raise ArtifactError(
                f"output {row['output_id']}: FE name {fe['name']!r} holds whitespace, which CoNLL cannot carry"
            )
        tags[fe["start"] : fe["end"] + 1] = [f"B-{fe['name']}"] + [f"I-{fe['name']}"] * (fe["end"] - fe["start"])
    return tags


def untagged_fes(fes: Sequence[Mapping[str, Any]] | None) -> Counter:
    """The FEs of an output that column 15 cannot show, by why: null instantiations (CNI, DNI,
    INI) and FEs the paraphrase lost (LOST)."""
    counts: Counter = Counter()
    for fe in fes or ():
        if fe["null_type"] == LOST:
            counts["lost_fes_left_out"] += 1
        elif fe["null_type"] is not None:
            counts["null_instantiated_fes_left_out"] += 1
    return counts


def conll_block(row: Mapping[str, Any], sentence: int, tagger: Any = None) -> list[str]:
    """One aligned output as CoNLL lines (no trailing blank line)."""
    tokens = row["paraphrase_tokens"]
    bad = [t for t in tokens if not t or any(c.isspace() for c in t)]
    if bad:
        raise ArtifactError(
            f"output {row['output_id']}: token {bad[0]!r} is empty or holds whitespace, which CoNLL cannot carry"
        )
    tags = tagger.tag(list(tokens)) if tagger is not None else ["_"] * len(tokens)
    lu = output_lexical_unit(row["aligned_lemma"], row["aligned_text"], row["lexical_unit"])
    roles = fe_tags(row, len(tokens))
    lines = []
    for i, token in enumerate(tokens):
        lemma = lemma_of([token], tags[i]) if tagger is not None else "_"
        trigger = row["aligned_start"] <= i <= row["aligned_end"]
        cols = [
            str(i + 1),
            token,
            "_",
            lemma,
            tags[i],
            tags[i],
            str(sentence),
            "_",
            "_",
            "_",
            "_",
            "_",
            lu if trigger else "_",
            row["frame"] if trigger else "_",
            roles[i],
        ]
        lines.append("\t".join(cols))
    assert len(cols) == CONLL_COLUMNS
    return lines


def iter_aligned(augmented: Path | str, counts: Counter | None = None) -> Iterator[dict[str, Any]]:
    """The aligned outputs of an AUGMENTED table (a filtered subset works too), in file order;
    ``counts`` gets the number of outputs without an aligned span, which are left out."""
    for table in artifacts.iter_batches(augmented, artifacts.AUGMENTED):
        aligned = table.filter(table.column("aligned_start").is_valid()).select(_EXPORT_COLUMNS)
        if counts is not None:
            counts["unaligned_left_out"] += table.num_rows - aligned.num_rows
        yield from aligned.to_pylist()


def export_conll(
    augmented: Path | str, out: Path | str, out_ids: Path | str | None = None, pos_tagger: str | None = None
) -> dict[str, int]:
    """Write every aligned output as an open-SESAME CoNLL block; sentence numbers count from 0.

    ``out_ids`` (TSV) maps each sentence number to its output id, seed and iteration, since CoNLL
    has no column for them. ``pos_tagger`` ('lexicon' or 'spacy:<model>') fills the lemma and POS
    columns with universal POS tags and lemminflect lemmas; without it they are ``_``.
    """
    tagger = None
    if pos_tagger:
        tagger, why = load_tagger(pos_tagger)
        if tagger is None:
            raise ArtifactError(f"cannot fill the POS columns: {why}")
    n = 0
    counts: Counter = Counter(unaligned_left_out=0, null_instantiated_fes_left_out=0, lost_fes_left_out=0)
    ids = []
    with files.atomic_path(out, ".conll") as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for row in iter_aligned(augmented, counts):
            handle.write("\n".join(conll_block(row, n, tagger)) + "\n\n")
            counts.update(untagged_fes(row["frame_elements"]))
            ids.append(
                {
                    "sentence": n,
                    "output_id": row["output_id"],
                    "seed_id": row["seed_id"],
                    "iteration": row["iteration"],
                    "seed_lexical_unit": row["lexical_unit"],
                }
            )
            n += 1
    if out_ids:
        _write_tsv(ids, out_ids)
    warnings: list[dict[str, Any]] = []
    if not n:
        warn(
            warnings,
            "empty",
            f"CoNLL export of {augmented}: no aligned output, so {out} holds no block "
            f"({counts['unaligned_left_out']} outputs without an aligned span)",
            log,
        )
    return {"blocks": n, **counts, "warnings": warnings}


def _write_tsv(rows: Sequence[Mapping[str, Any]], path: Path | str) -> None:
    import csv

    fields = list(rows[0]) if rows else ["sentence", "output_id", "seed_id", "iteration", "seed_lexical_unit"]
    with files.atomic_path(path, ".tsv") as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
