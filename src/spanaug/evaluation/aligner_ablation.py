"""Evaluation of the span aligner: the seed paper's Table 2 ablations, Figures 4-5 and §4.6.

Data are split by sentence pair (no pair is in two splits). The encoder is loaded once and its
outputs are shared by every ablation, since it is frozen.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from spanaug.core import files, plotting
from spanaug.core.aligner_settings import AblationSettings, AlignerConfig, AlignerTrainSettings
from spanaug.core.degraded import warn
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import span_metrics
from spanaug.core.splits import assign_parts
from spanaug.pipeline.aligner.instances import Instance, pair_key, reverse_instances
from spanaug.pipeline.aligner.model import SpanAligner, candidate_spans, span_means
from spanaug.pipeline.aligner.training import train_aligner, tune_threshold

log = logging.getLogger(__name__)

#: Table 2's rows: features and loss (hard 0/1 labels unless SBCE).
ABLATIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "Cue": (("cue",), "hard"),
    "Mx": (("mx",), "hard"),
    "Df": (("df",), "hard"),
    "Mx+Cue": (("mx", "cue"), "hard"),
    "Df+Cue": (("df", "cue"), "hard"),
    "Df+Mx": (("df", "mx"), "hard"),
    "Df+Mx+Cue": (("df", "mx", "cue"), "hard"),
    "Df+Mx+Cue+SBCE": (("df", "mx", "cue"), "soft"),
}


def split_by_pair(
    instances: Sequence[Instance], *, dev_share: float, test_share: float, seed: int
) -> tuple[list[Instance], list[Instance], list[Instance]]:
    """Train/dev/test split in which all spans of one sentence pair stay together (shares of the pairs)."""
    part = assign_parts(
        (pair_key(i) for i in instances),
        [("test", test_share), ("dev", dev_share), ("train", None)],
        order="shuffle",
        seed=seed,
    )
    out: dict[str, list[Instance]] = {"train": [], "dev": [], "test": []}
    for inst in instances:
        out[part[pair_key(inst)]].append(inst)
    return out["train"], out["dev"], out["test"]


@torch.no_grad()
def cosine_scores(aligner: SpanAligner, instances: Sequence[Instance]) -> list[tuple[tuple[int, int] | None, float]]:
    """The untrained baseline: the candidate whose mean-pooled vector is closest (cosine) to the source span's."""
    vecs = aligner.encode_pairs([pair_key(i) for i in instances])
    out = []
    for inst, (src_vecs, tgt_vecs) in zip(instances, vecs):
        s, e = inst.source_span
        cands = candidate_spans(tgt_vecs.shape[0], e - s + 1, aligner.config.k, device=aligner.device)
        if not len(cands):
            out.append((None, 0.0))
            continue
        src, cand = span_means(src_vecs, tgt_vecs, inst.source_span, cands)
        sims = torch.nn.functional.cosine_similarity(src, cand)
        best = int(sims.argmax())
        out.append(((int(cands[best, 0]), int(cands[best, 1])), float(sims[best])))
    return out


def breakdown(
    instances: Sequence[Instance], preds: Sequence[tuple[int, int] | None], key: Callable[[Instance], Any]
) -> list[dict[str, Any]]:
    """Metrics per bucket of ``key`` (e.g. span length, position difference)."""
    buckets: dict[Any, list[int]] = {}
    for n, inst in enumerate(instances):
        buckets.setdefault(key(inst), []).append(n)
    rows = []
    for bucket in sorted(buckets, key=lambda b: (isinstance(b, str), b)):
        idx = buckets[bucket]
        m = span_metrics([instances[i].target_span for i in idx], [preds[i] for i in idx])
        rows.append({"bucket": bucket, **m})
    return rows


def span_length(inst: Instance) -> int:
    return inst.source_span[1] - inst.source_span[0] + 1


def position_difference(inst: Instance) -> str | int:
    """|source start - gold target start|, capped at 10; 'null' for spans with no counterpart."""
    if inst.target_span is None:
        return "null"
    return min(abs(inst.source_span[0] - inst.target_span[0]), 10)


def unseen_in_training(train: Sequence[Instance], test: Sequence[Instance]) -> list[Instance]:
    """Test instances whose source span text never occurs as a training source span (§4.6)."""
    seen = {" ".join(i.source_tokens[i.source_span[0] : i.source_span[1] + 1]).lower() for i in train}
    return [i for i in test if " ".join(i.source_tokens[i.source_span[0] : i.source_span[1] + 1]).lower() not in seen]


def run_ablation(
    instances: Sequence[Instance],
    cfg: AblationSettings,
    base_cfg: AlignerConfig,
    out_dir: Path | str,
    device: str = "auto",
    systems: Sequence[str] | None = None,
    extra_instances: Sequence[Instance] = (),
) -> dict[str, Any]:
    """Train and test every ablation row and the cosine baseline; write tables and plots to ``out_dir``.

    Every row is ``base_cfg`` (encoder, k) with the row's features and loss. Beyond the paper,
    ``cfg.finetune_layers``, ``cfg.extra_reversed`` and ``extra_instances`` each add a row: the full
    model with the encoder's top layers tuned, with reversed training instances added, and with
    extra instances added (a self-training round on paraphrase-chain alignments).
    """
    _check_systems(systems or ())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train, dev, test = split_by_pair(instances, dev_share=cfg.dev_share, test_share=cfg.test_share, seed=cfg.seed)
    training = AlignerTrainSettings(epochs=cfg.epochs, seed=cfg.seed)
    log.info("alignment evaluation: %d train, %d dev, %d test instances", len(train), len(dev), len(test))
    cache: dict = {}
    base = SpanAligner(base_cfg, device=device, cache=cache)
    gold = [i.target_span for i in test]
    unseen = unseen_in_training(train, test)
    rows, memo_rows = [], []

    def record(name: str, scored_test, scored_unseen) -> None:
        rows.append({"system": name, **span_metrics(gold, [p for p, _ in scored_test])})
        memo_rows.append(
            {
                "system": name,
                "split": "unseen source spans",
                **span_metrics([i.target_span for i in unseen], [p for p, _ in scored_unseen]),
            }
        )

    record("cosine (untrained)", *_cosine_baseline(base, dev, test, unseen))
    full_preds = None
    for name in systems or ABLATIONS:
        features, loss = ABLATIONS[name]
        row_cfg = dataclasses.replace(base_cfg, features=list(features), loss=loss)
        aligner = SpanAligner(row_cfg, encoder=base.encoder, tokenizer=base.tokenizer, device=device, cache=cache)
        aligner, _ = train_aligner(train, row_cfg, training, dev=dev, aligner=aligner, progress=False)
        preds = aligner.predict(test)
        record(name, preds, aligner.predict(unseen) if unseen else [])
        log.info("%s: %s", name, rows[-1])
        if name == "Df+Mx+Cue+SBCE":
            full_preds = [p for p, _ in preds]
    for name, row_cfg, extra in _extension_rows(cfg, base_cfg, train, extra_instances):
        # A tuned encoder must not share the frozen one's weights or cache: it gets its own copy.
        tuned = bool(row_cfg.finetune_layers)
        enc = copy.deepcopy(base.encoder) if tuned else base.encoder
        aligner = SpanAligner(
            row_cfg, encoder=enc, tokenizer=base.tokenizer, device=device, cache=None if tuned else cache
        )
        aligner, _ = train_aligner(train, row_cfg, training, dev=dev, aligner=aligner, progress=False, extra=extra)
        record(name, aligner.predict(test), aligner.predict(unseen) if unseen else [])
        log.info("%s: %s", name, rows[-1])
    files.write_csv(rows, out_dir / "ablation.csv")
    files.write_csv(memo_rows, out_dir / "memorisation.csv")
    summary: dict[str, Any] = {
        "train": len(train),
        "dev": len(dev),
        "test": len(test),
        "unseen_test": len(unseen),
        "encoder": base_cfg.encoder,
        "epochs": cfg.epochs,
        "seed": cfg.seed,
        "table": rows,
        "warnings": below_baseline(rows),
    }
    if full_preds is not None:
        _write_breakdowns(test, full_preds, out_dir)
    plot_ablation(rows, out_dir / "ablation.png")
    files.write_json(summary, out_dir / "summary.json")
    return summary


def _check_systems(systems: Sequence[str]) -> None:
    unknown = set(systems) - set(ABLATIONS)
    if unknown:
        raise ConfigError(f"unknown ablation system(s) {sorted(unknown)}: expected some of {list(ABLATIONS)}")


def _cosine_baseline(
    base: SpanAligner, dev: Sequence[Instance], test: Sequence[Instance], unseen: Sequence[Instance]
) -> tuple[list[tuple[tuple[int, int] | None, float]], ...]:
    """The cosine baseline's predictions on the test and unseen instances, its threshold tuned on dev."""
    threshold, _ = tune_threshold([i.target_span for i in dev], cosine_scores(base, dev))
    return tuple(
        [(p if score >= threshold else None, score) for p, score in cosine_scores(base, part)]
        for part in (test, unseen)
    )


def _extension_rows(
    cfg: AblationSettings, base_cfg: AlignerConfig, train: Sequence[Instance], extra_instances: Sequence[Instance]
) -> list[tuple[str, AlignerConfig, list[Instance]]]:
    """The rows beyond the paper's that ``cfg`` and ``extra_instances`` ask for: name, aligner, extra data."""
    rows = []
    if cfg.extra_reversed:
        rows.append(("+SBCE +reversed instances", base_cfg, reverse_instances(train)))
    if extra_instances:
        rows.append((f"+SBCE +{len(extra_instances)} extra instances", base_cfg, list(extra_instances)))
    if cfg.finetune_layers:
        tuned = dataclasses.replace(base_cfg, finetune_layers=cfg.finetune_layers)
        rows.append((f"+SBCE +tuned top {cfg.finetune_layers} layers", tuned, []))
    return rows


def _write_breakdowns(test: Sequence[Instance], preds: Sequence[tuple[int, int] | None], out_dir: Path) -> None:
    """The full model's scores by span length and by position difference (Figures 4-5)."""
    by_len = breakdown(test, preds, span_length)
    by_pos = breakdown(test, preds, position_difference)
    files.write_csv(by_len, out_dir / "by_span_length.csv")
    files.write_csv(by_pos, out_dir / "by_position_difference.csv")
    plot_breakdowns(by_len, by_pos, out_dir / "breakdowns.png")


def below_baseline(rows: Sequence[dict[str, Any]], metric: str = "soft_f1") -> list[dict[str, Any]]:
    """Warnings for the full model's rows (soft BCE on every feature, as the pipeline trains it, and
    its extensions) that score below the untrained cosine baseline (the first row): training did
    not help, so the pipeline's aligner is likely no better than cosine matching. The partial
    feature sets are ablations, expected to be weaker, and are not flagged."""
    warnings: list[dict[str, Any]] = []
    baseline = rows[0][metric]
    worse = [
        r
        for r in rows[1:]
        if "SBCE" in r["system"] and r[metric] is not None and baseline is not None and r[metric] < baseline
    ]
    for row in worse:
        warn(
            warnings,
            "degraded",
            f"{row['system']}: this paper-kind aligner of Table 2 has held-out {metric.replace('_', ' ')} "
            f"{row[metric]:.3f}, below the "
            f"untrained cosine baseline's {baseline:.3f} ({rows[0]['n']} test instances)",
            log,
        )
    return warnings


def plot_ablation(
    rows: list[dict[str, Any]], path: Path, title: str = "Span aligner ablations (held-out test)"
) -> None:
    fig, ax = plotting.subplots(figsize=(8, 3.8))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["soft_f1"] for r in rows], width=0.4, label="soft F1")
    ax.bar([i + 0.2 for i in x], [r["exact_f1"] for r in rows], width=0.4, label="exact F1")
    ax.set_xticks(list(x), [r["system"] for r in rows], rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title(title)
    plotting.save(fig, path)


def plot_breakdowns(by_len: list[dict[str, Any]], by_pos: list[dict[str, Any]], path: Path) -> None:
    fig, axes = plotting.subplots(1, 2, figsize=(9, 3.5))
    for ax, rows, title in (
        (axes[0], by_len, "F1 by source span length"),
        (axes[1], by_pos, "F1 by position difference"),
    ):
        labels = [str(r["bucket"]) for r in rows]
        ax.plot(labels, [r["soft_f1"] for r in rows], marker="o", label="soft F1")
        ax.plot(labels, [r["exact_f1"] for r in rows], marker="s", label="exact F1")
        ax.set_ylim(0, 1)
        ax.set_title(title)
    axes[0].legend()
    plotting.save(fig, path)
