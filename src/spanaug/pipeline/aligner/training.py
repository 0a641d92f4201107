"""Training the span aligner: the scorer (and optionally the encoder's top layers), then the null threshold.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from spanaug.core.config import AlignerConfig, AlignerTrainSettings
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import span_metrics
from spanaug.pipeline.aligner.instances import Instance, pair_key
from spanaug.pipeline.aligner.model import SpanAligner, soft_labels

log = logging.getLogger(__name__)


def tune_threshold(gold: Sequence[tuple[int, int] | None], scored: Sequence[tuple[tuple[int, int] | None, float]],
                   metric: str = "soft_f1") -> tuple[float, dict[str, float]]:
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


def train_aligner(train: Sequence[Instance], cfg: AlignerConfig, tcfg: AlignerTrainSettings, dev: Sequence[Instance] | None = None,
                  device: str | None = "auto", progress: bool = True, aligner: SpanAligner | None = None,
                  extra: Sequence[Instance] = ()) -> tuple[SpanAligner, dict[str, Any]]:
    """Train the scorer (and the top encoder layers when configured); tune the null threshold on ``dev``.

    ``extra`` instances (e.g. composed along paraphrase chains) are added to the training data.
    """
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    aligner = aligner or SpanAligner(cfg, device=device)
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
    history = []
    for epoch in range(tcfg.epochs):
        aligner.scorer.train()
        total, batches = 0.0, 0
        for feats, labels in tqdm(step_batches(), desc=f"epoch {epoch + 1}", disable=not progress, leave=False):
            if feats.shape[0] < 2:
                continue  # batch norm needs more than one row
            loss = loss_fn(aligner.scorer(feats), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
        history.append(total / max(batches, 1))
        log.info("aligner epoch %d: loss %.4f", epoch + 1, history[-1])
    aligner.scorer.eval()
    aligner.encoder.eval()
    summary: dict[str, Any] = {"train_instances": len(train), "extra_instances": len(extra), "loss_history": history}
    if dev:
        scored = aligner.predict(dev, threshold=0.0)
        threshold, metrics = tune_threshold([d.target_span for d in dev], scored)
        aligner.config.threshold = threshold
        summary.update({"threshold": threshold, "dev_metrics": metrics})
    return aligner, summary


def _frozen_batches(aligner: SpanAligner, train: Sequence[Instance], cfg: AlignerConfig, tcfg: AlignerTrainSettings,
                    rng: random.Random, progress: bool):  # noqa: ANN202
    """With a frozen encoder, candidates, features and labels never change: build them once."""
    pairs = list(dict.fromkeys(pair_key(i) for i in train))
    vecs = dict(zip(pairs, aligner.encode_pairs(pairs, progress=progress)))
    examples = []
    for inst in train:
        cands, feats = aligner._instance_rows(vecs[pair_key(inst)], inst.source_span)
        if cands.shape[0]:
            examples.append((feats, soft_labels(cands, inst.target_span, cfg.loss)))
    if not examples:
        raise ConfigError("no training instance has a candidate span")

    def epoch() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng.shuffle(examples)
        for chunk in _batches(examples, tcfg.batch_size):
            yield torch.cat([f for f, _ in chunk]), torch.cat([y for _, y in chunk])

    return epoch


def _finetune_batches(aligner: SpanAligner, train: Sequence[Instance], cfg: AlignerConfig, tcfg: AlignerTrainSettings,
                      rng: random.Random):  # noqa: ANN202
    """With a tuned encoder, each batch re-encodes its sentence pairs (once per pair) with gradients."""
    order = list(train)

    def epoch() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng.shuffle(order)
        for chunk in _batches(order, tcfg.batch_size):
            pairs = list(dict.fromkeys(pair_key(i) for i in chunk))
            vecs = dict(zip(pairs, aligner.encode_batch(pairs)))
            feats, labels = [], []
            for inst in chunk:
                cands, f = aligner._instance_rows(vecs[pair_key(inst)], inst.source_span)
                feats.append(f)
                labels.append(soft_labels(cands, inst.target_span, cfg.loss))
            yield torch.cat(feats), torch.cat(labels)

    return epoch
