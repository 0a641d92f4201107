"""One aligner recipe across domains: trained on each word-aligned corpus alone and on all of them,
tested on every corpus's held-out pairs (``spanaug align cross-domain``).

A user's corpus comes from yet another domain, so one held-out figure on one corpus says little.
Each corpus gives span instances by the shared data's rule (``word_aligned.instances_from_alignments``).
Its test set is its development part when it has one, otherwise ``test_share`` of its pairs; of
the rest, ``dev_share`` of the pairs tune the aligner (epoch, temperature, calibration, null
threshold) and the others train it. A row trains on the training parts of its corpora, tunes on
their tuning parts, and is tested on every corpus. Extra instances (phrase pairs, reversed) come
from the row's training pairs only and never lie on any corpus's tuning or test pair.
Per cell: soft and exact F1, ECE of the score against exact correctness, null share predicted and gold.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files
from spanaug.core.aligner_settings import AlignerConfig, CrossDomainSettings
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import prediction_metrics
from spanaug.evaluation.aligner_ablation import split_by_pair
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.kinds import Recipe, train_kind
from spanaug.pipeline.aligner.training import holdout_by_pair
from spanaug.pipeline.aligner.training_data import DataSources, extra_training_instances, phrase_options
from spanaug.pipeline.aligner.word_aligned import AlignedPair, instances_from_alignments

log = logging.getLogger(__name__)

#: The columns of a cell, in the order of the table.
CELL_METRICS = ("soft_f1", "exact_f1", "ece", "pred_null_share", "gold_null_share")


@dataclasses.dataclass
class Domain:
    """One corpus: its word-aligned pairs and its instances split into train, tune and test parts."""

    name: str
    pairs: list[AlignedPair]
    train: list[Instance]
    tune: list[Instance]
    test: list[Instance]
    test_source: str  # "dev part" | "held-out pairs"


def make_domain(
    name: str, pairs: Sequence[AlignedPair], dev_pairs: Sequence[AlignedPair] | None, cfg: CrossDomainSettings
) -> Domain:
    """A corpus split for the table: tested on its dev part when given, else on held-out pairs."""
    instances = instances_from_alignments(pairs, prefix=name, seed=cfg.seed)
    if dev_pairs:
        train, tune = holdout_by_pair(instances, cfg.dev_share, cfg.seed)
        test = instances_from_alignments(dev_pairs, prefix=f"{name}-dev", seed=cfg.seed)
        source = "dev part"
    else:
        train, tune, test = split_by_pair(instances, dev_share=cfg.dev_share, test_share=cfg.test_share, seed=cfg.seed)
        source = "held-out pairs"
    if not (train and tune and test):
        raise ConfigError(
            f"cross-domain corpus {name!r}: too few span instances to train, tune and test "
            f"({len(train)}, {len(tune)}, {len(test)})"
        )
    return Domain(name, list(pairs), train, tune, test, source)


def train_set_names(cfg: CrossDomainSettings) -> list[str]:
    """The rows: ``cfg.train_sets``, or each corpus alone and then all of them."""
    sets = cfg.train_sets or [*cfg.corpora, "all"]
    for name in sets:
        unknown = [part for part in _members(name, cfg.corpora) if part not in cfg.corpora]
        if unknown:
            raise ConfigError(f"cross-domain train set {name!r}: no corpus named {unknown[0]!r} ({list(cfg.corpora)})")
    return sets


def _members(train_set: str, corpora: Mapping[str, str]) -> list[str]:
    return list(corpora) if train_set == "all" else train_set.split("+")


def run_cross_domain(
    domains: Sequence[Domain],
    cfg: CrossDomainSettings,
    base_cfg: AlignerConfig,
    out_dir: Path | str,
    synthetic: Sequence[Instance] = (),
    device: str | None = "auto",
    resume: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Train one aligner per train set and test it on every domain; ``cross_domain.csv`` (one line per
    cell), ``cross_domain.json`` (the split sizes and the rows) and ``cross_domain.jsonl`` (each row as
    it finishes, so that with ``resume`` a killed run keeps them)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_name = {d.name: d for d in domains}
    done_path = out_dir / "cross_domain.jsonl"
    done = _finished(done_path, resume)
    held_out = [i for d in domains for i in d.tune + d.test]
    rows = []
    for train_set in train_set_names(cfg):
        if train_set in done:
            rows.append(done[train_set])
            continue
        members = [by_name[n] for n in _members(train_set, cfg.corpora)]
        train = [i for d in members for i in d.train]
        tune = [i for d in members for i in d.tune]
        names = (["phrases"] if cfg.phrases else []) + (["reversed"] if cfg.reversed else [])
        sources = DataSources(gold_pairs=[p for d in members for p in d.pairs], phrase_options=phrase_options(cfg))
        extra, counts = extra_training_instances(names, train, sources, cfg.seed, held_out=held_out)
        started = time.perf_counter()
        aligner, summary = _train(train, tune, extra, synthetic, cfg, base_cfg, device, progress)
        train_s = round(time.perf_counter() - started, 1)
        cells = {d.name: _cell(aligner, d) for d in domains}
        row = {
            "train": train_set,
            "train_instances": len(train),
            "extra": counts,
            "tune_instances": len(tune),
            "train_s": train_s,
            "threshold": aligner.config.threshold,
            "cells": cells,
            "summary": {k: v for k, v in summary.items() if k not in ("loss_history", "encoding")},
        }
        with open(done_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        rows.append(row)
        del aligner
    return _write(rows, domains, cfg, base_cfg, out_dir)


def _finished(path: Path, resume: bool) -> dict[str, dict[str, Any]]:
    if resume and path.is_file():
        return {row["train"]: row for row in map(json.loads, path.read_text().splitlines())}
    path.unlink(missing_ok=True)
    return {}


def _train(
    train: list[Instance],
    tune: list[Instance],
    extra: list[Instance],
    synthetic: Sequence[Instance],
    cfg: CrossDomainSettings,
    base_cfg: AlignerConfig,
    device: str | None,
    progress: bool,
) -> tuple[Any, dict[str, Any]]:
    """One row's aligner, tuned on its corpora's tuning parts."""
    recipe = Recipe.of(base_cfg.encoder, base_cfg.k, epochs=cfg.epochs, seed=cfg.seed, cross=cfg.cross)
    return train_kind(
        cfg.kind,
        recipe,
        train,
        tune,
        device=device,
        progress=progress,
        extra=extra,
        pretrain=synthetic,
    )


def _cell(aligner: Any, domain: Domain) -> dict[str, Any]:
    """A trained aligner's scores on one domain's test set."""
    scored = aligner.predict(domain.test)
    m = prediction_metrics([i.target_span for i in domain.test], scored)
    return {**{k: m[k] for k in CELL_METRICS}, "n": m["n"]}


def _write(
    rows: list[dict[str, Any]],
    domains: Sequence[Domain],
    cfg: CrossDomainSettings,
    base_cfg: AlignerConfig,
    out_dir: Path,
) -> dict[str, Any]:
    table = [
        {"train": r["train"], "test": f"{d.name} ({d.test_source})", **r["cells"][d.name], "train_s": r["train_s"]}
        for r in rows
        for d in domains
    ]
    files.write_csv(table, out_dir / "cross_domain.csv")
    summary = {
        "kind": cfg.kind,
        "encoder": base_cfg.encoder,
        "seed": cfg.seed,
        "domains": {
            d.name: {"train": len(d.train), "tune": len(d.tune), "test": len(d.test), "test_source": d.test_source}
            for d in domains
        },
        "rows": rows,
        "table": table,
    }
    files.write_json(summary, out_dir / "cross_domain.json")
    return summary


def format_table(summary: Mapping[str, Any]) -> str:
    """A Markdown table: a line per train set, per test domain 'soft/exact F1, ECE, null pred/gold'."""
    tests = list(summary["domains"])
    head = "| train on | " + " | ".join(f"{t} ({summary['domains'][t]['test_source']})" for t in tests) + " |"
    lines = [head, "|---|" + "---|" * len(tests)]
    for row in summary["rows"]:
        cells = [row["cells"][t] for t in tests]
        lines.append(
            f"| {row['train']} | "
            + " | ".join(
                f"{c['soft_f1']:.3f}/{c['exact_f1']:.3f}, ECE {c['ece']:.3f}, "
                f"null {c['pred_null_share']:.3f}/{c['gold_null_share']:.3f}"
                for c in cells
            )
            + " |"
        )
    return "\n".join(lines)
