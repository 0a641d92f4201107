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
from spanaug.core.aligner_settings import AlignerConfig, AlignerSystem, AlignerSystemsSettings
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import prediction_metrics, span_metrics
from spanaug.evaluation.aligner_ablation import split_by_pair, unseen_in_training
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.kinds import Recipe, train_kind
from spanaug.pipeline.aligner.model import SpanAligner
from spanaug.pipeline.aligner.training_data import DataSources, extra_training_instances

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- systems


@dataclasses.dataclass
class Row:
    """How one system is trained (kind, extra data, threshold handling)."""

    kind: str  # paper | cross
    extra: tuple[str, ...] = ()  # phrases, reversed, chains
    pretrain: bool = False  # synthetic pre-training (cross only)
    threshold: str = "dev"  # dev | holdout | holdout-refit | untuned
    description: str = ""


#: How each row of the settings' list (``AlignerSystem``) is trained; a test checks that every
#: name has its recipe.
SYSTEMS: dict[AlignerSystem, Row] = {
    "paper": Row("paper", description="Df+Mx+Cue+SBCE, threshold tuned on the dev pairs"),
    "paper-untuned": Row(
        "paper",
        threshold="untuned",
        description="no dev file, old default: threshold 0 (never null)",
    ),
    "paper-holdout": Row(
        "paper",
        threshold="holdout",
        description="no dev file, new default: threshold on 10% of training pairs held out",
    ),
    "paper-holdout-refit": Row(
        "paper",
        threshold="holdout-refit",
        description="as paper-holdout, then retrained on all training pairs",
    ),
    "paper+phrases": Row(
        "paper",
        ("phrases",),
        description="+ every phrase pair of the training pairs' word alignments",
    ),
    "paper+reversed": Row("paper", ("reversed",), description="+ reversed instances"),
    "cross": Row("cross", description="cross encoder, dev pairs choose the epoch, temperature and threshold"),
    "cross-holdout": Row(
        "cross",
        threshold="holdout",
        description="cross encoder, no dev file: 10% of training pairs held out",
    ),
    "cross+phrases": Row(
        "cross",
        ("phrases",),
        description="+ every phrase pair of the training pairs' word alignments",
    ),
    "cross+reversed": Row("cross", ("reversed",), description="+ reversed instances"),
    "cross+chains": Row(
        "cross",
        ("chains",),
        description="+ instances composed along chains of shared sentences (graph augmenter)",
    ),
    "cross+synthetic": Row("cross", pretrain=True, description="pre-trained on synthetic same-frame rewrites"),
    "cross+phrases+reversed": Row(
        "cross",
        ("phrases", "reversed"),
        description="+ phrase pairs + reversed instances",
    ),
    "cross+reversed+synthetic": Row(
        "cross",
        ("reversed",),
        pretrain=True,
        description="+ reversed instances, pre-trained on synthetic rewrites: needs no word-aligned corpus",
    ),
    "cross+all": Row("cross", ("phrases", "reversed", "chains"), pretrain=True, description="every source"),
}


@dataclasses.dataclass
class _Split:
    """The held-out split every row shares, and the test spans unseen in training (§4.6)."""

    train: list[Instance]
    dev: list[Instance]
    test: list[Instance]
    unseen_idx: list[int]

    @classmethod
    def of(cls, instances: Sequence[Instance], cfg: AlignerSystemsSettings) -> _Split:
        train, dev, test = split_by_pair(instances, dev_share=cfg.dev_share, test_share=cfg.test_share, seed=cfg.seed)
        unseen_ids = {i.id for i in unseen_in_training(train, test)}
        return cls(train, dev, test, [n for n, i in enumerate(test) if i.id in unseen_ids])


@dataclasses.dataclass
class _PaperEncoder:
    """The frozen encoder (and its outputs) that every paper row shares, loaded by the first."""

    device: str | None
    cache: dict = dataclasses.field(default_factory=dict)
    base: SpanAligner | None = None

    def aligner(self, config: AlignerConfig) -> SpanAligner:
        if self.base is None:
            self.base = SpanAligner(config, device=self.device, cache=self.cache)
        return SpanAligner(
            config, encoder=self.base.encoder, tokenizer=self.base.tokenizer, device=self.device, cache=self.cache
        )


def run_systems(
    instances: Sequence[Instance],
    cfg: AlignerSystemsSettings,
    base_cfg: AlignerConfig,
    out_dir: Path | str,
    sources: DataSources | None = None,
    device: str | None = "auto",
    resume: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Train and test each of ``cfg.rows`` on one split; rows go to ``systems.csv`` (and to
    ``systems.jsonl`` as each finishes, so that with ``resume`` a killed run keeps the rows it
    has), predictions to ``pred/``. Every row uses ``base_cfg``'s encoder and k; the cross rows
    train with ``cfg.cross`` (seed: ``cfg.seed``)."""
    sources = sources or DataSources()
    out_dir = Path(out_dir)
    (out_dir / "pred").mkdir(parents=True, exist_ok=True)
    split = _Split.of(instances, cfg)
    done_path = out_dir / "systems.jsonl"
    done = _finished_rows(done_path, resume)
    paper = _PaperEncoder(device)
    rows = []
    for name in cfg.rows:
        if name in done:
            log.info("%s: kept from %s", name, done_path)
            rows.append(done[name])
            continue
        row = SYSTEMS[name]
        extra, counts = extra_training_instances(
            row.extra, split.train, sources, cfg.seed, held_out=split.dev + split.test
        )
        started = time.perf_counter()
        aligner, summary = _train_row(name, split, extra, cfg, base_cfg, sources, paper, progress)
        train_s = round(time.perf_counter() - started, 1)
        rec = {
            "system": name,
            **_test_scores(name, aligner, split, out_dir, train_s),
            "train_instances": summary["train_instances"],
            "extra": counts,
            "train_s": train_s,
            "threshold": aligner.config.threshold,
            "threshold_source": aligner.config.threshold_source,
            "description": row.description,
            "summary": {key: value for key, value in summary.items() if key != "loss_history"},
        }
        if row.kind == "cross":
            rec["temperature"] = aligner.config.temperature
            rec["config"] = dataclasses.asdict(aligner.config)
        with open(done_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(rec) + "\n")
        rows.append(rec)
        del aligner
        torch.manual_seed(cfg.seed)
    return _write_summary(rows, split, base_cfg.encoder, cfg.seed, out_dir)


def _finished_rows(done_path: Path, resume: bool) -> dict[str, dict[str, Any]]:
    """The rows a killed run finished (with ``resume``); otherwise their file is started afresh."""
    done = {}
    if resume and done_path.is_file():
        for line in done_path.read_text().splitlines():
            rec = json.loads(line)
            done[rec["system"]] = rec
    elif done_path.exists():
        done_path.unlink()
    return done


def _train_row(
    name: str,
    split: _Split,
    extra: list[Instance],
    cfg: AlignerSystemsSettings,
    base_cfg: AlignerConfig,
    sources: DataSources,
    paper: _PaperEncoder,
    progress: bool,
) -> tuple[Any, dict[str, Any]]:
    """One row's aligner, trained as its recipe says, and its training summary."""
    row = SYSTEMS[name]
    recipe = _row_recipe(row, cfg, base_cfg)
    pretrain = list(sources.synthetic) if row.pretrain else []
    if row.pretrain and not pretrain:
        raise ConfigError(f"system {name!r} needs synthetic pre-training instances")
    # The paper rows share one frozen encoder (and its cache of encoded sentences).
    aligner = paper.aligner(recipe.paper) if row.kind == "paper" else None
    use_dev = split.dev if row.threshold == "dev" else None
    return train_kind(
        row.kind,
        recipe,
        split.train,
        use_dev,
        device=paper.device,
        progress=progress,
        extra=extra,
        pretrain=pretrain,
        aligner=aligner,
    )


def _row_recipe(row: Row, cfg: AlignerSystemsSettings, base_cfg: AlignerConfig) -> Recipe:
    """The systems' recipe with the row's threshold handling: the paper kind tunes on dev pairs, on
    held-out training pairs (then refits on all of them for ``holdout-refit``) or nowhere; the cross
    kind on dev or held-out pairs."""
    if row.kind == "cross" and row.threshold not in ("dev", "holdout"):
        raise ConfigError(f"cross systems tune the threshold on dev or held-out pairs, not {row.threshold!r}")
    recipe = Recipe.of(base_cfg.encoder, base_cfg.k, epochs=cfg.epochs, seed=cfg.seed, cross=cfg.cross)
    paper_training = dataclasses.replace(recipe.paper_training, refit_after_holdout=row.threshold == "holdout-refit")
    if row.threshold == "untuned":  # no held-out pairs: the threshold stays at its untuned default
        paper_training = dataclasses.replace(paper_training, threshold_holdout=0.0)
    return dataclasses.replace(recipe, paper_training=paper_training)


def _test_scores(name: str, aligner: Any, split: _Split, out_dir: Path, train_s: float) -> dict[str, Any]:
    """A trained row's scores on the test part (its predictions written to ``pred/``)."""
    gold = [i.target_span for i in split.test]
    scored = aligner.predict(split.test)
    predictions = [
        {"id": i.id, "target_span": list(p) if p else None, "score": s} for i, (p, s) in zip(split.test, scored)
    ]
    files.write_jsonl(predictions, out_dir / "pred" / f"{name}.jsonl")
    m = prediction_metrics(gold, scored)
    mu = span_metrics([gold[n] for n in split.unseen_idx], [scored[n][0] for n in split.unseen_idx])
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
    return {
        **{key: m[key] for key in ("soft_p", "soft_r", "soft_f1", "exact_p", "exact_r", "exact_f1")},
        "ece": m["ece"],
        "pred_null_share": m["pred_null_share"],
        "gold_null_share": m["gold_null_share"],
        "unseen_soft_f1": mu["soft_f1"],
        "unseen_exact_f1": mu["exact_f1"],
        "n": m["n"],
        "n_unseen": mu["n"],
    }


def _write_summary(rows: list[dict[str, Any]], split: _Split, encoder: str, seed: int, out_dir: Path) -> dict[str, Any]:
    """``systems.csv`` (the flat columns) and ``systems_summary.json``."""
    table = [{key: value for key, value in r.items() if not isinstance(value, dict)} for r in rows]
    files.write_csv(table, out_dir / "systems.csv")
    summary = {
        "train": len(split.train),
        "dev": len(split.dev),
        "test": len(split.test),
        "unseen_test": len(split.unseen_idx),
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
