"""Frame ID data: sentences with their gold triggers, read from CoNLL or Parquet, and their splits."""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from spanaug.core import artifacts, files
from spanaug.core.errors import InputError
from spanaug.core.evaluation_settings import SplitSettings
from spanaug.core.splits import assign_parts

log = logging.getLogger(__name__)

NULL = "NULL"
MAX_SPAN = 3
Span = tuple[int, int]


@dataclasses.dataclass
class Sentence:
    """Tokens with gold triggers; ``full`` when every trigger is annotated (negatives are known)."""

    tokens: list[str]
    triggers: dict[Span, str]
    pos: list[str] | None = None
    full: bool = True


def sentences_from_rows(rows: Iterable[dict[str, Any]], full: bool | None = None) -> list[Sentence]:
    """Group one-annotation-per-row SENTENCES rows into sentences (by document and tokens)."""
    grouped: dict[tuple, Sentence] = {}
    for row in rows:
        key = (row.get("document"), tuple(row["tokens"]))
        is_full = full if full is not None else row.get("corpus_part") in ("fulltext", "conll")
        sent = grouped.setdefault(key, Sentence(list(row["tokens"]), {}, row.get("pos_tags"), is_full))
        sent.triggers[(row["span_start"], row["span_end"])] = row["frame"]
    return list(grouped.values())


def read_training_file(path: Path | str) -> list[Sentence]:
    """Open-SESAME CoNLL, or Parquet: imported sentences (SENTENCES), augmented outputs or an
    augmenter's examples (EXAMPLES). A file of gold sentences that holds none is an error; augmented
    outputs or examples may legitimately be none (a warning says so)."""
    from spanaug.pipeline.importers import read_conll

    path = Path(path)
    if path.suffix != ".parquet":
        sentences = sentences_from_rows(read_conll(path))
        if not sentences:
            raise InputError(path, None, "holds no sentence with a contiguous trigger")
        return sentences
    names = set(artifacts.read_schema(path).names)
    if "output_id" in names:  # augmented outputs: only their aligned triggers
        table = artifacts.read_table(path, artifacts.AUGMENTED)
        out = [
            Sentence(list(r["paraphrase_tokens"]), {(r["aligned_start"], r["aligned_end"]): r["frame"]}, None, False)
            for r in table.to_pylist()
            if r["aligned_start"] is not None
        ]
    elif "augmenter" in names:  # an augmenter's examples: only their triggers
        out = examples_to_sentences(artifacts.read_table(path, artifacts.EXAMPLES).to_pylist())
    elif "sentence_id" in names:
        out = sentences_from_rows(artifacts.read_table(path, artifacts.SENTENCES).to_pylist())
        if not out:
            raise InputError(path, None, "holds no sentences")
        return out
    else:
        raise InputError(
            path,
            None,
            "not imported sentences, augmented outputs or examples (no sentence_id/output_id/augmenter column)",
        )
    if not out:
        log.warning("%s holds no aligned output or example: it adds no training sentence", path)
    return out


def read_sentences(paths: Sequence[Path | str]) -> list[Sentence]:
    """The sentences of several training files, in order."""
    return [sent for path in paths for sent in read_training_file(path)]


def hold_out_dev(sentences: Sequence[Sentence], share: float, seed: int) -> tuple[list[Sentence], list[Sentence]]:
    """(train, dev): ``share`` of the full-text sentences, drawn by ``seed``, become dev.

    Only full-text sentences can be scored (their unannotated spans are known negatives), so dev
    is drawn from them; exemplar and augmented sentences stay in training. Dev is empty when the
    share rounds to no sentence, or would leave no full-text sentence to train on.
    """
    full = [i for i, s in enumerate(sentences) if s.full]
    n_dev = round(share * len(full))
    if n_dev == 0 or n_dev >= len(full):
        return list(sentences), []
    chosen = set(random.Random(seed).sample(full, n_dev))
    return (
        [s for i, s in enumerate(sentences) if i not in chosen],
        [s for i, s in enumerate(sentences) if i in chosen],
    )


def candidate_spans(n: int, max_len: int = MAX_SPAN) -> list[Span]:
    return [(s, s + k) for s in range(n) for k in range(max_len) if s + k < n]


def split_conll(path: Path | str, out_dir: Path | str, cfg: SplitSettings) -> dict[str, int]:
    """Train/dev/test CoNLL files by contiguous sentence ranges (documents stay mostly whole).

    The open-SESAME files number sentences in document order but do not mark documents, so
    contiguous ranges stand in for held-out documents: the last ``cfg.test_share`` of sentences is
    the test split, the ``cfg.dev_share`` before it the dev split.
    """
    from spanaug.pipeline.importers import ImportStats, conll_block_row, conll_blocks

    path = Path(path)
    blocks = []
    for order, block in enumerate(conll_blocks(path)):
        # Checked as the reader will check it: a bad block is this file's fault, not the split file's.
        conll_block_row(path, block, order, ImportStats(), path.stem)
        blocks.append((block[0][1][6], ["\t".join(cols) + "\n" for _, cols in block]))
    if not blocks:
        raise InputError(path, None, "holds no sentences (expected open-SESAME CoNLL blocks)")
    sent_ids = list(dict.fromkeys(s for s, _ in blocks))
    part = assign_parts(sent_ids, [("train", None), ("dev", cfg.dev_share), ("test", cfg.test_share)])
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name in ("train", "dev", "test"):
        with files.atomic_path(out_dir / f"{name}.conll", ".conll") as tmp, open(tmp, "w", encoding="utf-8") as out:
            for sid, lines in blocks:
                if part[sid] == name:
                    out.writelines(lines)
                    out.write("\n")
        counts[name] = sum(1 for s in sent_ids if part[s] == name)
    return counts


#: Imported corpus parts by the split's part names: CoNLL (open-SESAME) and JSONL rows are full-text
#: annotations (every trigger of a sentence is labelled, so its other spans are negatives).
PARTS = {"fulltext": ("fulltext", "conll", "jsonl"), "exemplar": ("exemplar",)}


def split_sentences(path: Path | str, out_dir: Path | str, cfg: SplitSettings) -> dict[str, int]:
    """Train/dev/test Parquet from the imported sentences of ``cfg.parts``, whole documents (full
    text) or sentences (exemplars) at a time, ordered by a stable hash so that no frame's exemplars
    cluster in one split."""

    import pyarrow.compute as pc

    table = artifacts.read_table(path, artifacts.SENTENCES)
    parts = [part for name in cfg.parts for part in PARTS[name]]
    table = table.filter(pc.is_in(table.column("corpus_part"), value_set=pa.array(parts)))
    if not table.num_rows:
        raise InputError(path, None, f"no sentences of the parts {list(cfg.parts)} to split")
    rows = table.select(["tokens", "corpus_part", "document"]).to_pylist()
    groups = [
        r["document"] if r["corpus_part"] != "exemplar" and r["document"] else " ".join(r["tokens"]) for r in rows
    ]
    part = assign_parts(groups, [("test", cfg.test_share), ("dev", cfg.dev_share), ("train", None)], order="hash")
    counts = {}
    for name in ("train", "dev", "test"):
        keep = [part[g] == name for g in groups]
        counts[name] = artifacts.write_table(table.filter(keep), Path(out_dir) / f"{name}.parquet", artifacts.SENTENCES)
    return counts


def sentence_key(tokens: Sequence[str]) -> str:
    """A sentence's identity across tokenisations: its lowercased characters without spaces."""
    return "".join(t.lower() for t in tokens)


def examples_to_sentences(rows: Iterable[Mapping[str, Any]]) -> list[Sentence]:
    """EXAMPLES rows as Frame ID training sentences: only their trigger is known (no negatives)."""
    return [Sentence(list(r["tokens"]), {(r["span_start"], r["span_end"]): r["frame"]}, None, False) for r in rows]
