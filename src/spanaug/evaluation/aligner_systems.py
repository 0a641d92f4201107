"""Aligner kinds and training-data sources compared on one held-out split (beyond Table 2).

Every row is trained on the training part of ``aligner_ablation.split_by_pair`` (extra data made only
from training pairs), uses the dev part for the threshold (and the cross encoder's epoch and
temperature) unless the row says otherwise, and is scored on the same test part. Columns: soft
and exact P/R/F1, expected calibration error of the score against exact correctness (over
non-null predictions), the share of null predictions beside the gold share, the memorisation
split (§4.6: test spans whose source text is no training source span) and the training time.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from spanaug.core import files
from spanaug.core.aligner_settings import (
    ALIGNER_SYSTEMS,
    AlignerConfig,
    AlignerSystemsSettings,
    AlignerTrainSettings,
    CrossTrainSection,
)
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import prediction_metrics, span_metrics
from spanaug.evaluation.aligner_ablation import split_by_pair, unseen_in_training
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.model import SpanAligner
from spanaug.pipeline.aligner.training import train_aligner
from spanaug.pipeline.aligner.training_data import DataSources, extra_training_instances

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- systems


@dataclasses.dataclass
class Row:
    """One system: how it is trained (kind, extra data, threshold handling)."""

    name: str
    kind: str  # paper | cross
    extra: tuple[str, ...] = ()  # phrases, reversed, chains
    pretrain: bool = False  # synthetic pre-training (cross only)
    threshold: str = "dev"  # dev | holdout | holdout-refit | untuned
    description: str = ""


SYSTEMS: dict[str, Row] = {
    r.name: r
    for r in [
        Row("paper", "paper", description="Df+Mx+Cue+SBCE, threshold tuned on the dev pairs"),
        Row(
            "paper-untuned",
            "paper",
            threshold="untuned",
            description="no dev file, old default: threshold 0 (never null)",
        ),
        Row(
            "paper-holdout",
            "paper",
            threshold="holdout",
            description="no dev file, new default: threshold on 10% of training pairs held out",
        ),
        Row(
            "paper-holdout-refit",
            "paper",
            threshold="holdout-refit",
            description="as paper-holdout, then retrained on all training pairs",
        ),
        Row(
            "paper+phrases",
            "paper",
            ("phrases",),
            description="+ every phrase pair of the training pairs' word alignments",
        ),
        Row("paper+reversed", "paper", ("reversed",), description="+ reversed instances"),
        Row("cross", "cross", description="cross encoder, dev pairs choose the epoch, temperature and threshold"),
        Row(
            "cross-holdout",
            "cross",
            threshold="holdout",
            description="cross encoder, no dev file: 10% of training pairs held out",
        ),
        Row(
            "cross+phrases",
            "cross",
            ("phrases",),
            description="+ every phrase pair of the training pairs' word alignments",
        ),
        Row("cross+reversed", "cross", ("reversed",), description="+ reversed instances"),
        Row(
            "cross+chains",
            "cross",
            ("chains",),
            description="+ instances composed along chains of shared sentences (graph augmenter)",
        ),
        Row("cross+synthetic", "cross", pretrain=True, description="pre-trained on synthetic same-frame rewrites"),
        Row(
            "cross+phrases+reversed",
            "cross",
            ("phrases", "reversed"),
            description="+ phrase pairs + reversed instances",
        ),
        Row(
            "cross+reversed+synthetic",
            "cross",
            ("reversed",),
            pretrain=True,
            description="+ reversed instances, pre-trained on synthetic rewrites: needs no word-aligned corpus",
        ),
        Row("cross+all", "cross", ("phrases", "reversed", "chains"), pretrain=True, description="every source"),
    ]
}
assert tuple(SYSTEMS) == ALIGNER_SYSTEMS  # the settings' choices


def run_systems(
    instances: Sequence[Instance],
    cfg: AlignerSystemsSettings,
    encoder: str,
    out_dir: Path | str,
    sources: DataSources | None = None,
    k: int = 5,
    device: str | None = "auto",
    resume: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Train and test each of ``cfg.rows`` on one split; rows go to ``systems.csv`` (and to
    ``systems.jsonl`` as each finishes, so that with ``resume`` a killed run keeps the rows it
    has), predictions to ``pred/``. The cross rows train with ``cfg.cross`` (seed: ``cfg.seed``)."""
    from spanaug.pipeline.aligner.cross_training import train_cross_aligner

    seed = cfg.seed
    cross = cfg.cross or CrossTrainSection()
    sources = sources or DataSources()
    out_dir = Path(out_dir)
    (out_dir / "pred").mkdir(parents=True, exist_ok=True)
    train, dev, test = split_by_pair(instances, seed=seed)
    gold = [i.target_span for i in test]
    unseen_ids = {i.id for i in unseen_in_training(train, test)}
    unseen_idx = [n for n, i in enumerate(test) if i.id in unseen_ids]
    done_path = out_dir / "systems.jsonl"
    done = {}
    if resume and done_path.is_file():
        for line in done_path.read_text().splitlines():
            rec = json.loads(line)
            done[rec["system"]] = rec
    elif done_path.exists():
        done_path.unlink()
    cache: dict = {}
    base: SpanAligner | None = None
    rows = []
    for name in cfg.rows:
        if name in done:
            log.info("%s: kept from %s", name, done_path)
            rows.append(done[name])
            continue
        row = SYSTEMS[name]
        extra, counts = extra_training_instances(row.extra, train, sources, seed, held_out=dev + test)
        use_dev = dev if row.threshold == "dev" else None
        started = time.perf_counter()
        if row.kind == "paper":
            if base is None:
                base = SpanAligner(AlignerConfig(encoder=encoder, k=k), device=device, cache=cache)
            row_cfg = AlignerConfig(encoder=encoder, k=k)
            aligner = SpanAligner(row_cfg, encoder=base.encoder, tokenizer=base.tokenizer, device=device, cache=cache)
            tcfg = AlignerTrainSettings(
                epochs=cfg.epochs,
                seed=seed,
                threshold_holdout=0.0 if row.threshold == "untuned" else 0.1,
                refit_after_holdout=row.threshold == "holdout-refit",
            )
            aligner, summary = train_aligner(
                train, row_cfg, tcfg, dev=use_dev, aligner=aligner, progress=progress, extra=extra
            )
        else:
            cross_cfg = cross.architecture(encoder, k)
            cross_tcfg = dataclasses.replace(cross.training(), seed=seed)
            if row.threshold not in ("dev", "holdout"):
                raise ConfigError(f"cross systems tune the threshold on dev or held-out pairs, not {row.threshold!r}")
            pretrain = list(sources.synthetic) if row.pretrain else []
            if row.pretrain and not pretrain:
                raise ConfigError(f"system {row.name!r} needs synthetic pre-training instances")
            aligner, summary = train_cross_aligner(
                train,
                cross_cfg,
                cross_tcfg,
                dev=use_dev,
                device=device,
                progress=progress,
                extra=extra,
                pretrain=pretrain,
            )
        train_s = time.perf_counter() - started
        scored = aligner.predict(test)
        artifacts_rows = [
            {"id": i.id, "target_span": list(p) if p else None, "score": s} for i, (p, s) in zip(test, scored)
        ]
        files.write_jsonl(artifacts_rows, out_dir / "pred" / f"{name}.jsonl")
        m = prediction_metrics(gold, scored)
        mu = span_metrics([gold[n] for n in unseen_idx], [scored[n][0] for n in unseen_idx])
        rec = {
            "system": name,
            **{key: m[key] for key in ("soft_p", "soft_r", "soft_f1", "exact_p", "exact_r", "exact_f1")},
            "ece": m["ece"],
            "pred_null_share": m["pred_null_share"],
            "gold_null_share": m["gold_null_share"],
            "unseen_soft_f1": mu["soft_f1"],
            "unseen_exact_f1": mu["exact_f1"],
            "n": m["n"],
            "n_unseen": mu["n"],
            "train_instances": summary["train_instances"],
            "extra": counts,
            "train_s": round(train_s, 1),
            "threshold": aligner.config.threshold,
            "threshold_source": aligner.config.threshold_source,
            "description": row.description,
            "summary": {k_: v for k_, v in summary.items() if k_ not in ("loss_history",)},
        }
        if row.kind == "cross":
            rec["temperature"] = aligner.config.temperature
            rec["config"] = dataclasses.asdict(aligner.config)
        log.info(
            "%s: soft F1 %.3f exact F1 %.3f ECE %.3f null %.3f/%.3f (%.0f s)",
            name,
            m["soft_f1"],
            m["exact_f1"],
            m["ece"],
            m["pred_null_share"],
            m["gold_null_share"],
            train_s,
        )
        with open(done_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(rec) + "\n")
        rows.append(rec)
        del aligner
        torch.manual_seed(seed)
    table = [{key: value for key, value in r.items() if not isinstance(value, dict)} for r in rows]
    files.write_csv(table, out_dir / "systems.csv")
    summary = {
        "train": len(train),
        "dev": len(dev),
        "test": len(test),
        "unseen_test": len(unseen_idx),
        "encoder": encoder,
        "seed": seed,
        "table": table,
    }
    files.write_json(summary, out_dir / "systems_summary.json")
    return summary


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of the rows' main columns."""
    cols = [
        ("system", "{}"),
        ("soft_f1", "{:.3f}"),
        ("exact_f1", "{:.3f}"),
        ("ece", "{:.3f}"),
        ("pred_null_share", "{:.3f}"),
        ("gold_null_share", "{:.3f}"),
        ("unseen_soft_f1", "{:.3f}"),
        ("unseen_exact_f1", "{:.3f}"),
        ("train_s", "{:.0f}"),
    ]
    lines = ["| " + " | ".join(c for c, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(fmt.format(r[c]) for c, fmt in cols) + " |")
    return "\n".join(lines)


def data_sources(cfg: AlignerSystemsSettings) -> DataSources:
    """The word-aligned pairs, synthetic instances and phrase options that ``cfg`` names."""
    from spanaug.pipeline.aligner.training_data import read_sources

    return read_sources(cfg, cfg.gold_pairs, cfg.synthetic)
