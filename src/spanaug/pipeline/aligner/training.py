"""Training the span aligner: the scorer (and optionally the encoder's top layers), then the null threshold.

The threshold is tuned on dev instances; without them, on a seeded share of the training sentence
pairs held out from training, so that the aligner can answer 'no alignment' by default.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import random
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn

from spanaug.core import training_loop
from spanaug.core.aligner_settings import AlignerConfig, AlignerTrainSettings
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import span_metrics
from spanaug.core.splits import assign_parts
from spanaug.pipeline.aligner.instances import Instance, pair_key, without_pairs
from spanaug.pipeline.aligner.kinds import Recipe
from spanaug.pipeline.aligner.model import SpanAligner, soft_labels
from spanaug.pipeline.aligner.threshold_plan import threshold_plan

log = logging.getLogger(__name__)


def tune_threshold(
    gold: Sequence[tuple[int, int] | None],
    scored: Sequence[tuple[tuple[int, int] | None, float]],
    metric: str = "soft_f1",
) -> tuple[float, dict[str, float]]:
    """The score threshold (below it: no alignment) that maximises ``metric`` on dev data."""
    candidates = sorted({0.0} | {round(s, 4) for _, s in scored})
    best = (0.0, span_metrics(gold, [p for p, _ in scored]))
    for t in candidates:
        m = span_metrics(gold, [p if s >= t else None for p, s in scored])
        if m[metric] > best[1][metric]:
            best = (t, m)
    return best


def _batches(items: list, size: int) -> Iterator[list]:
    return (items[i : i + size] for i in range(0, len(items), size))


def holdout_by_pair(
    instances: Sequence[Instance], share: float, seed: int = 0
) -> tuple[list[Instance], list[Instance]]:
    """(kept, held out): ``share`` of the sentence pairs (seeded, at least one when ``share`` > 0
    and there are two or more pairs, never all) held out with all their spans."""
    keys = list(dict.fromkeys(pair_key(i) for i in instances))
    n_held = max(0, min(len(keys) - 1, max(1, round(len(keys) * share)))) if share > 0 else 0
    part = assign_parts(
        keys, [("held", n_held / len(keys) if keys else 0.0), ("kept", None)], order="shuffle", seed=seed
    )
    return (
        [i for i in instances if part[pair_key(i)] == "kept"],
        [i for i in instances if part[pair_key(i)] == "held"],
    )


def holdout_description(share: float, held: Sequence[Instance]) -> str:
    """How a threshold tuned on held-out training pairs was set (saved as ``threshold_source``)."""
    return f"held-out {share:.0%} of training pairs ({len({pair_key(i) for i in held})} pairs, {len(held)} instances)"


def threshold_split(
    train: Sequence[Instance], extra: Sequence[Instance], dev: Sequence[Instance] | None, share: float, seed: int
) -> tuple[list[Instance], list[Instance], list[Instance], str]:
    """(train, extra, held out, source): where an aligner's null threshold is tuned. On ``dev`` when
    given; else on ``share`` of the training pairs held out (their extra instances leave with them);
    else nowhere ('untuned'), as :func:`threshold_plan` decides (the workflow describes the same plan).
    Both aligner kinds use it, so they record ``threshold_source`` alike."""
    train, extra = list(train), list(extra)
    plan = threshold_plan(bool(dev), share, len({pair_key(i) for i in train}))
    if plan == "dev":
        return train, extra, [], "dev instances"
    if plan == "holdout":
        train, held = holdout_by_pair(train, share, seed)
        return train, without_pairs(extra, held), held, holdout_description(share, held)
    return train, extra, [], "untuned"


def train_paper(
    recipe: Recipe,
    train: Sequence[Instance],
    dev: Sequence[Instance] | None,
    *,
    device: str | None,
    progress: bool,
    extra: Sequence[Instance],
    pretrain: Sequence[Instance],
    aligner: SpanAligner | None,
) -> tuple[SpanAligner, dict[str, Any]]:
    """The paper kind's trainer in the registry (:data:`~.kinds.KINDS`): :func:`train_aligner` on the
    recipe's paper settings. It never pre-trains; the registry refuses ``pretrain`` before this."""
    cfg, tcfg = recipe.paper, recipe.paper_training
    return train_aligner(train, cfg, tcfg, dev=dev, device=device, progress=progress, aligner=aligner, extra=extra)


def train_aligner(
    train: Sequence[Instance],
    cfg: AlignerConfig,
    tcfg: AlignerTrainSettings,
    dev: Sequence[Instance] | None = None,
    device: str | None = "auto",
    progress: bool = True,
    aligner: SpanAligner | None = None,
    extra: Sequence[Instance] = (),
) -> tuple[SpanAligner, dict[str, Any]]:
    """Train the scorer (and the top encoder layers when configured) and tune the null threshold.

    The threshold is tuned on ``dev``; without it, on ``tcfg.threshold_holdout`` of the training
    sentence pairs, held out from training (with ``tcfg.refit_after_holdout`` the scorer is then
    trained again on every pair, keeping the threshold). ``config.threshold_source`` and the
    summary say which. ``extra`` instances (e.g. composed along paraphrase chains) are added to
    the training data; those on a held-out pair (either way round) are left out with it.
    """
    train, extra, held, source = threshold_split(train, extra, dev, tcfg.threshold_holdout, tcfg.seed)
    dev = dev if dev else held
    refit = bool(held) and tcfg.refit_after_holdout
    fresh = None
    if refit and aligner is not None:  # a second scorer over the same (frozen) encoder, or a copy of a tuned one
        tuned = bool(aligner.config.finetune_layers)
        fresh = SpanAligner(
            dataclasses.replace(aligner.config),
            encoder=copy.deepcopy(aligner.encoder) if tuned else aligner.encoder,
            tokenizer=aligner.tokenizer,
            device=str(aligner.device),
            cache=None if tuned else aligner.cache,
        )
    aligner, summary = _fit(train, cfg, tcfg, device, progress, aligner, extra)
    summary["threshold_source"] = source
    if dev:
        scored = aligner.predict(dev, threshold=0.0)
        threshold, metrics = tune_threshold([d.target_span for d in dev], scored)
        summary.update({"threshold": threshold, "dev_metrics": metrics})
        if refit:
            aligner, refit_summary = _fit(train + held, cfg, tcfg, device, progress, fresh, extra)
            summary.update(
                {
                    "refit_on_all_pairs": True,
                    "train_instances": refit_summary["train_instances"],
                    "loss_history": refit_summary["loss_history"],
                }
            )
            source += ", then trained again on all pairs"
            summary["threshold_source"] = source
        aligner.config.threshold = threshold
    else:
        aligner.config.threshold = 0.0
        summary["threshold"] = 0.0
    aligner.config.threshold_source = source
    log.info("aligner threshold %.4f (%s)", aligner.config.threshold, source)
    return aligner, summary


def _fit(
    train: Sequence[Instance],
    cfg: AlignerConfig,
    tcfg: AlignerTrainSettings,
    device: str | None,
    progress: bool,
    aligner: SpanAligner | None,
    extra: Sequence[Instance],
) -> tuple[SpanAligner, dict[str, Any]]:
    """Train the scorer (and tuned encoder layers) on ``train`` + ``extra``; no threshold."""
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    aligner = aligner or SpanAligner(dataclasses.replace(cfg), device=device)
    train = list(train) + list(extra)
    loss_fn = nn.BCEWithLogitsLoss()
    params = [{"params": aligner.scorer.parameters(), "lr": tcfg.learning_rate}]
    tuned = [p for p in aligner.encoder.parameters() if p.requires_grad]
    if tuned:
        params.append({"params": tuned, "lr": tcfg.encoder_learning_rate})
        aligner.cache = None  # encodings change as the encoder learns
        step_batches = _finetune_batches(aligner, train, cfg, tcfg, rng)
    else:
        step_batches = _frozen_batches(aligner, train, cfg, tcfg, rng, progress)
    opt = torch.optim.Adam(params)

    def loss(batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor | None:
        feats, labels = batch
        if feats.shape[0] < 2:
            return None  # batch norm needs more than one row
        return loss_fn(aligner.scorer(feats), labels)

    result = training_loop.fit(
        training_loop.LoopSettings(epochs=tcfg.epochs, name="aligner", progress=progress),
        opt,
        lambda epoch: step_batches(),
        loss,
        [aligner.scorer],
    )
    aligner.encoder.eval()
    return aligner, {"train_instances": len(train), "extra_instances": len(extra), "loss_history": result.losses}


def _frozen_batches(
    aligner: SpanAligner,
    train: Sequence[Instance],
    cfg: AlignerConfig,
    tcfg: AlignerTrainSettings,
    rng: random.Random,
    progress: bool,
):
    """With a frozen encoder, candidates, features and labels never change: build them once."""
    pairs = list(dict.fromkeys(pair_key(i) for i in train))
    vecs = dict(zip(pairs, aligner.encode_pairs(pairs, progress=progress)))
    examples = []
    for inst in train:
        cands, feats = aligner.instance_rows(vecs[pair_key(inst)], inst.source_span)
        if cands.shape[0]:
            examples.append((feats, soft_labels(cands, inst.target_span, cfg.loss)))
    if not examples:
        raise ConfigError("no training instance has a candidate span")

    def epoch() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng.shuffle(examples)
        for chunk in _batches(examples, tcfg.batch_size):
            yield torch.cat([f for f, _ in chunk]), torch.cat([y for _, y in chunk])

    return epoch


def _finetune_batches(
    aligner: SpanAligner, train: Sequence[Instance], cfg: AlignerConfig, tcfg: AlignerTrainSettings, rng: random.Random
):
    """With a tuned encoder, each batch re-encodes its sentence pairs (once per pair) with gradients."""
    order = list(train)

    def epoch() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng.shuffle(order)
        for chunk in _batches(order, tcfg.batch_size):
            pairs = list(dict.fromkeys(pair_key(i) for i in chunk))
            vecs = dict(zip(pairs, aligner.encode_batch(pairs)))
            feats, labels = [], []
            for inst in chunk:
                cands, f = aligner.instance_rows(vecs[pair_key(inst)], inst.source_span)
                feats.append(f)
                labels.append(soft_labels(cands, inst.target_span, cfg.loss))
            yield torch.cat(feats), torch.cat(labels)

    return epoch
