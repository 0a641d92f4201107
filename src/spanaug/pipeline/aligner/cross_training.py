"""Training the cross-encoder aligner: fine-tuning (whole encoder, or its top layers over cached
frozen-layer outputs), the epoch chosen, the temperature fitted and the null threshold tuned on
held-out pairs (dev instances, or a seeded share of the training pairs).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from tqdm import tqdm
from transformers import get_linear_schedule_with_warmup
from transformers.trainer_pt_utils import get_parameter_names

from spanaug.core import training_loop
from spanaug.core.aligner_settings import CrossAlignerConfig, CrossTrainSettings
from spanaug.core.calibration import fit_platt, platt
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import expected_calibration_error, span_metrics
from spanaug.pipeline.aligner.cross_inputs import Batch, Encoded, split_scores, target_distribution
from spanaug.pipeline.aligner.cross_model import CrossAligner, fit_temperature
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.kinds import Recipe
from spanaug.pipeline.aligner.model import candidate_spans, encoder_layers
from spanaug.pipeline.aligner.training import threshold_split

log = logging.getLogger(__name__)


def _length_batches(lengths: Sequence[int], size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of similar length: sort within shuffled pools of 50 batches."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda n: lengths[n])
        batches.extend(chunk[i : i + size] for i in range(0, len(chunk), size))
    rng.shuffle(batches)
    return batches


def _tuned_parameters(aligner: CrossAligner) -> list[nn.Parameter]:
    n_top = aligner.config.tune_layers
    if n_top is None:
        params = list(aligner.encoder.parameters())
    else:
        if n_top > aligner.n_layers:
            raise ConfigError(f"tune_layers {n_top} > the encoder's {aligner.n_layers} layers")
        params = (
            [p for layer in encoder_layers(aligner.encoder)[aligner.n_layers - n_top :] for p in layer.parameters()]
            if n_top
            else []
        )
    for p in aligner.encoder.parameters():
        p.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    return params


def _param_groups(module: nn.Module, lr: float, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups of ``module``'s trainable parameters: no weight decay on biases and LayerNorm
    layers (transformers' rule); the order of ``named_parameters`` is kept."""
    decayed = set(get_parameter_names(module, [nn.LayerNorm], ["bias"]))
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    groups = (
        {"params": [p for n, p in named if n in decayed], "lr": lr, "weight_decay": weight_decay},
        {"params": [p for n, p in named if n not in decayed], "lr": lr, "weight_decay": 0.0},
    )
    return [g for g in groups if g["params"]]


#: The prefix cache's key spaces: an instance is ``(split, its index in that split)``.
Split = Literal["train", "pretrain", "heldout"]


class _Trainer:
    """Batches, optional cached encoder prefixes (tuning only the top layers), and evaluation."""

    def __init__(self, aligner: CrossAligner, tcfg: CrossTrainSettings):
        self.aligner = aligner
        self.tcfg = tcfg
        self.n_top = aligner.config.tune_layers
        self.cached = self.n_top is not None and self.n_top < aligner.n_layers
        self.prefix: dict[tuple[Split, int], torch.Tensor] = {}

    def _disk_cache(self) -> Path | None:
        cfg = self.aligner.config
        if not self.tcfg.prefix_cache_dir or not cfg.marker_init:
            return None
        name = hashlib.sha1(json.dumps([cfg.encoder, cfg.markers, cfg.marker_init, self.n_top]).encode()).hexdigest()[
            :16
        ]
        return Path(self.tcfg.prefix_cache_dir) / f"prefix-{name}.pt"

    def cache_prefixes(self, encs: Sequence[Encoded], split: Split, progress: bool) -> None:
        """The frozen layers' output of every instance, computed once (kept as float16 on the CPU)."""
        if not self.cached:
            return
        disk = self._disk_cache()
        stored: dict[str, torch.Tensor] = torch.load(disk, weights_only=True) if disk and disk.is_file() else {}
        keys = [hashlib.sha1(bytes(str(x.ids), "ascii")).hexdigest() for x in encs]
        todo = []
        for n, key in enumerate(keys):
            if key in stored:
                self.prefix[split, n] = stored[key]
            else:
                todo.append(n)
        order = sorted(todo, key=lambda n: len(encs[n].ids))
        size = 64
        for start in tqdm(range(0, len(order), size), desc="frozen layers", disable=not progress, leave=False):
            idx = order[start : start + size]
            batch = self.aligner.collate([encs[n] for n in idx])
            states = self.aligner.prefix_states(batch, self.n_top).to("cpu", torch.float16)
            for row, n in enumerate(idx):
                self.prefix[split, n] = stored[keys[n]] = states[row, : len(encs[n].ids)].clone()
        if disk and todo:
            disk.parent.mkdir(parents=True, exist_ok=True)
            tmp = disk.with_name(disk.name + f".{os.getpid()}.tmp")
            torch.save(stored, tmp)
            os.replace(tmp, disk)

    def hidden(self, batch: Batch, split: Split, idx: Sequence[int]) -> torch.Tensor:
        if not self.cached:
            return self.aligner.hidden(batch)
        states = torch.zeros(len(idx), batch.ids.shape[1], self.aligner.encoder.config.hidden_size)
        for row, n in enumerate(idx):
            x = self.prefix[split, n]
            states[row, : x.shape[0]] = x.float()
        return self.aligner.top_layers(states.to(self.aligner.device), batch.mask, self.n_top)

    def raw_scores(self, encs: Sequence[Encoded], split: Split) -> list[tuple[torch.Tensor, torch.Tensor]]:
        al = self.aligner
        al.encoder.eval()
        al.head.eval()
        out: list[Any] = [None] * len(encs)
        order = sorted(range(len(encs)), key=lambda n: len(encs[n].ids))
        with torch.inference_mode():
            for start in range(0, len(order), 32):
                idx = order[start : start + 32]
                batch = al.collate([encs[n] for n in idx])
                split_scores(batch, al.scores(batch, self.hidden(batch, split, idx)), idx, out)
        return out

    def loss(
        self, encs: Sequence[Encoded], labels: Sequence[torch.Tensor], split: Split
    ) -> Callable[[list[int]], torch.Tensor]:
        """Cross-entropy of a batch (instance indices) against its target distributions over the candidates."""

        def batch_loss(idx: list[int]) -> torch.Tensor:
            batch = self.aligner.collate([encs[n] for n in idx])
            logits = self.aligner.scores(batch, self.hidden(batch, split, idx))
            target = torch.zeros_like(logits)
            for row, n in enumerate(idx):
                target[row, : len(labels[n])] = labels[n]
            logp = torch.log_softmax(logits, dim=-1).masked_fill(target == 0, 0.0)
            return -(target * logp).sum(-1).mean()

        return batch_loss


@dataclasses.dataclass
class _Data:
    """Encoded training, pre-training and held-out instances with their target distributions."""

    kept: list[Encoded]
    labels: list[torch.Tensor]
    outside: int
    stats: dict[str, int]
    pre: list[Encoded]
    pre_labels: list[torch.Tensor]
    dev: list[Instance]
    dev_encs: list[Encoded]
    dev_ok: list[int]

    def gold(self) -> list[tuple[int, int] | None]:
        return [self.dev[n].target_span for n in self.dev_ok]


def _labelled(
    aligner: CrossAligner, instances: Sequence[Instance]
) -> tuple[list[Encoded], list[torch.Tensor], int, dict[str, int]]:
    """(encodings, target distributions, golds outside the candidates, encoding counts) of the
    instances that fit the encoder; a gold span cut off by truncation drops its instance."""
    cfg = aligner.config
    encs, enc_stats = aligner.encode(instances)
    kept, labels, outside = [], [], 0
    for inst, enc in zip(instances, encs):
        if enc is None:
            continue
        if inst.target_span is not None and inst.target_span[1] >= len(enc.target_words):
            enc_stats["gold_cut_skipped"] = enc_stats.get("gold_cut_skipped", 0) + 1
            continue
        dist, found = target_distribution(
            candidate_spans(len(enc.target_words), enc.source_len, cfg.k), inst.target_span, cfg.loss
        )
        outside += not found
        kept.append(enc)
        labels.append(dist)
    return kept, labels, outside, enc_stats


def _data(aligner: CrossAligner, train: list[Instance], pretrain: Sequence[Instance], dev: list[Instance]) -> _Data:
    kept, labels, outside, stats = _labelled(aligner, train)
    if not kept:
        raise ConfigError("no cross-aligner training instance fits the encoder")
    pre, pre_labels, _, _ = _labelled(aligner, pretrain) if pretrain else ([], [], 0, {})
    dev_encs = aligner.encode(dev)[0] if dev else []
    dev_ok = [n for n, x in enumerate(dev_encs) if x is not None]
    return _Data(kept, labels, outside, stats, pre, pre_labels, dev, dev_encs, dev_ok)


def _optimizer(
    aligner: CrossAligner, tcfg: CrossTrainSettings, data: _Data
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW over the tuned encoder parameters and the head; linear warm-up, then linear decay to 0."""
    groups = _param_groups(aligner.encoder, tcfg.learning_rate, tcfg.weight_decay)
    groups += _param_groups(aligner.head, tcfg.head_learning_rate, tcfg.weight_decay)
    opt = torch.optim.AdamW(groups)
    steps_per_epoch = math.ceil(len(data.kept) / tcfg.batch_size)
    pre_steps = math.ceil(len(data.pre) / tcfg.batch_size) * tcfg.pretrain_epochs
    total_steps = steps_per_epoch * tcfg.epochs + pre_steps
    return opt, get_linear_schedule_with_warmup(opt, max(1, round(tcfg.warmup * total_steps)), total_steps)


def _fit(
    trainer: _Trainer, data: _Data, progress: bool, started: float
) -> tuple[list[dict[str, Any]], training_loop.LoopResult]:
    """Pre-train, then train, choosing the epoch on the held-out instances; (loss history, the training's result)."""
    aligner, tcfg = trainer.aligner, trainer.tcfg
    rng = random.Random(tcfg.seed)
    opt, sched = _optimizer(aligner, tcfg, data)
    tuned = any(p.requires_grad for p in aligner.encoder.parameters())
    loop = training_loop.LoopSettings(
        epochs=tcfg.epochs,
        max_grad_norm=tcfg.max_grad_norm,
        time_limit_s=None if tcfg.max_minutes is None else 60 * tcfg.max_minutes,
        progress=progress,
        log_every=50,
        select_on=tcfg.select_on,
    )

    def run(name: str, epochs: int, encs: list[Encoded], labels: list[torch.Tensor], split: Split, **kw: Any):
        return training_loop.fit(
            dataclasses.replace(loop, name=name, epochs=epochs),
            opt,
            lambda epoch: _length_batches([len(x.ids) for x in encs], tcfg.batch_size, rng),
            trainer.loss(encs, labels, split),
            [aligner.head, aligner.encoder] if tuned else [aligner.head],
            scheduler=sched,
            started=started,
            **kw,
        )

    pre = run("cross pretrain", tcfg.pretrain_epochs if data.pre else 0, data.pre, data.pre_labels, "pretrain")
    history: list[dict[str, Any]] = [{"pretrain_epoch": e.epoch, "loss": e.loss} for e in pre.epochs]
    main = run(
        "cross aligner",
        0 if pre.stopped_at_time_limit else tcfg.epochs,
        data.kept,
        data.labels,
        "train",
        evaluate=(lambda epoch: _heldout_metrics(trainer, data)) if data.dev_ok else None,
        state=lambda: _trainable_state(aligner),
        load_state=lambda state: _load_trainable_state(aligner, state),
    )
    main.stopped_at_time_limit |= pre.stopped_at_time_limit
    history += [{"epoch": e.epoch, "loss": e.loss} for e in main.epochs]
    return history, main


def _heldout_metrics(trainer: _Trainer, data: _Data) -> dict[str, Any]:
    raw = trainer.raw_scores([data.dev_encs[n] for n in data.dev_ok], "heldout")
    preds = trainer.aligner.decide(raw, temperature=1.0, threshold=0.5)
    return span_metrics(data.gold(), [p for p, _ in preds])


def train_cross_aligner(
    train: Sequence[Instance],
    cfg: CrossAlignerConfig,
    tcfg: CrossTrainSettings,
    dev: Sequence[Instance] | None = None,
    device: str | None = "auto",
    progress: bool = True,
    aligner: CrossAligner | None = None,
    extra: Sequence[Instance] = (),
    pretrain: Sequence[Instance] = (),
) -> tuple[CrossAligner, dict[str, Any]]:
    """Fine-tune a cross aligner; choose the epoch, fit the temperature and tune the threshold on ``dev``.

    Without ``dev``, ``tcfg.threshold_holdout`` of the training sentence pairs are held out for
    that (and ``extra`` instances on those pairs, either way round, are dropped). ``pretrain``
    instances (e.g. synthetic pairs) are trained on first for ``tcfg.pretrain_epochs``, then the
    training data. The summary records the held-out metrics, the sources of the threshold and
    the temperature, the truncation counts and the training time.
    """
    torch.manual_seed(tcfg.seed)
    train, extra, held, source = threshold_split(train, extra, dev, tcfg.threshold_holdout, tcfg.seed)
    aligner = aligner or CrossAligner(dataclasses.replace(cfg), device=device)
    aligner.config.calibration = None  # refitted below; a scaling fitted to the old weights means nothing now
    data = _data(aligner, train + extra, pretrain, list(dev) if dev else held)
    _tuned_parameters(aligner)
    trainer = _Trainer(aligner, tcfg)
    started = time.perf_counter()
    trainer.cache_prefixes(data.kept, "train", progress)
    trainer.cache_prefixes(data.pre, "pretrain", progress)
    trainer.cache_prefixes([data.dev_encs[n] for n in data.dev_ok], "heldout", progress)
    cache_s = time.perf_counter() - started
    if trainer.cached:
        log.info("cross aligner: frozen layers of %d instances computed once in %.0f s", len(trainer.prefix), cache_s)
    history, result = _fit(trainer, data, progress, started)
    train_s = time.perf_counter() - started
    aligner.encoder.eval()
    aligner.head.eval()
    for p in aligner.encoder.parameters():
        p.requires_grad_(False)
    summary: dict[str, Any] = {
        "kind": "cross",
        "train_instances": len(data.kept),
        "extra_instances": len(extra),
        "pretrain_instances": len(data.pre),
        "gold_outside_candidates": data.outside,
        "encoding": data.stats,
        "loss_history": history,
        "heldout_history": [{"epoch": e.epoch, **e.evaluation} for e in result.epochs if e.evaluation is not None],
        "best_epoch": result.best_epoch if result.best_epoch is not None else len(history),
        "stopped_at_time_limit": result.stopped_at_time_limit,
        "prefix_cache_s": round(cache_s, 1),
        "train_s": round(train_s, 1),
        "threshold_source": source,
    }
    summary.update(_tune_on_heldout(trainer, data, source))
    log.info(
        "cross aligner: threshold %.4f, temperature %.3f (%s); trained in %.0f s",
        aligner.config.threshold,
        aligner.config.temperature,
        source,
        train_s,
    )
    return aligner, summary


def train_cross(
    recipe: Recipe,
    train: Sequence[Instance],
    dev: Sequence[Instance] | None,
    *,
    device: str | None,
    progress: bool,
    extra: Sequence[Instance],
    pretrain: Sequence[Instance],
    aligner: CrossAligner | None,
) -> tuple[CrossAligner, dict[str, Any]]:
    """The cross kind's trainer in the registry (:data:`~.kinds.KINDS`): :func:`train_cross_aligner`
    on the recipe's cross settings."""
    return train_cross_aligner(
        train,
        recipe.cross,
        recipe.cross_training,
        dev=dev,
        device=device,
        progress=progress,
        aligner=aligner,
        extra=extra,
        pretrain=pretrain,
    )


def _tune_on_heldout(trainer: _Trainer, data: _Data, source: str) -> dict[str, Any]:
    """Fit the temperature (and the Platt scaling) and tune the null threshold on the held-out
    instances (untuned without them); the summary's entries on it."""
    aligner, tcfg, cfg = trainer.aligner, trainer.tcfg, trainer.aligner.config
    if not data.dev_ok:
        cfg.threshold, cfg.threshold_source = 0.5, "untuned"
        return {"threshold": 0.5, "temperature": cfg.temperature}
    raw = trainer.raw_scores([data.dev_encs[n] for n in data.dev_ok], "heldout")
    gold = data.gold()
    if tcfg.calibrate:
        t, nll = fit_temperature(raw, gold)
        cfg.temperature, cfg.temperature_source = t, f"fitted on {source} (NLL {nll:.3f})"
    cfg.threshold, metrics = aligner.tune_threshold(raw, gold, tcfg.tune_threshold_on, tcfg.null_share_tolerance)
    cfg.threshold_source = source
    out = {"threshold": cfg.threshold, "temperature": cfg.temperature, "heldout_metrics": metrics}
    if tcfg.calibrate:
        out["calibration"] = _fit_calibration(aligner, raw, gold)
    return out


def _fit_calibration(
    aligner: CrossAligner, raw: Sequence[Any], gold: Sequence[tuple[int, int] | None]
) -> dict[str, Any]:
    """Fit the Platt scaling of the chosen span's score on the held-out answers (non-null
    predictions against exact correctness, as the ECE counts them); the held-out ECE before and after."""
    answered = [
        (score, g is not None and tuple(g) == span)
        for (span, score), g in zip(aligner.decide(raw), gold)
        if span is not None
    ]
    scores, correct = [s for s, _ in answered], [c for _, c in answered]
    before = expected_calibration_error(scores, correct)
    params = fit_platt(scores, correct)
    aligner.config.calibration = list(params) if params else None
    after = expected_calibration_error([platt(s, params) for s in scores], correct)
    log.info(
        "cross aligner: Platt scaling %s on %d held-out answers, ECE %.3f -> %.3f", params, len(scores), before, after
    )
    return {
        "params": aligner.config.calibration,
        "answers": len(scores),
        "heldout_ece_before": before,
        "heldout_ece_after": after,
    }


def _trainable_state(aligner: CrossAligner) -> dict[str, Any]:
    enc = {n: p.detach().clone() for n, p in aligner.encoder.named_parameters() if p.requires_grad}
    return {"encoder": enc, "head": copy.deepcopy(aligner.head.state_dict())}


def _load_trainable_state(aligner: CrossAligner, state: dict[str, Any]) -> None:
    params = dict(aligner.encoder.named_parameters())
    with torch.no_grad():
        for name, value in state["encoder"].items():
            params[name].copy_(value)
    aligner.head.load_state_dict(state["head"])
