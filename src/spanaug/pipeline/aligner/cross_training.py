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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from spanaug.core.aligner_settings import CrossAlignerConfig, CrossTrainSettings
from spanaug.core.calibration import fit_platt, platt
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import expected_calibration_error, span_metrics
from spanaug.pipeline.aligner.cross_inputs import Batch, Encoded, split_scores, target_distribution
from spanaug.pipeline.aligner.cross_model import CrossAligner, fit_temperature
from spanaug.pipeline.aligner.instances import Instance
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


def _param_groups(named: Sequence[tuple[str, nn.Parameter]], lr: float, weight_decay: float) -> list[dict[str, Any]]:
    decay = [p for n, p in named if p.ndim > 1 and "norm" not in n.lower()]
    rest = [p for n, p in named if not (p.ndim > 1 and "norm" not in n.lower())]
    return [
        g
        for g in (
            {"params": decay, "lr": lr, "weight_decay": weight_decay},
            {"params": rest, "lr": lr, "weight_decay": 0.0},
        )
        if g["params"]
    ]


class _Trainer:
    """Batches, optional cached encoder prefixes (tuning only the top layers), and evaluation."""

    def __init__(self, aligner: CrossAligner, tcfg: CrossTrainSettings):
        self.aligner = aligner
        self.tcfg = tcfg
        self.n_top = aligner.config.tune_layers
        self.cached = self.n_top is not None and self.n_top < aligner.n_layers
        self.prefix: dict[int, torch.Tensor] = {}

    def _disk_cache(self) -> Path | None:
        cfg = self.aligner.config
        if not self.tcfg.prefix_cache_dir or not cfg.marker_init:
            return None
        name = hashlib.sha1(json.dumps([cfg.encoder, cfg.markers, cfg.marker_init, self.n_top]).encode()).hexdigest()[
            :16
        ]
        return Path(self.tcfg.prefix_cache_dir) / f"prefix-{name}.pt"

    def cache_prefixes(self, encs: Sequence[Encoded], key0: int, progress: bool) -> None:
        """The frozen layers' output of every instance, computed once (kept as float16 on the CPU)."""
        if not self.cached:
            return
        disk = self._disk_cache()
        stored: dict[str, torch.Tensor] = torch.load(disk, weights_only=True) if disk and disk.is_file() else {}
        keys = [hashlib.sha1(bytes(str(x.ids), "ascii")).hexdigest() for x in encs]
        todo = []
        for n, key in enumerate(keys):
            if key in stored:
                self.prefix[key0 + n] = stored[key]
            else:
                todo.append(n)
        order = sorted(todo, key=lambda n: len(encs[n].ids))
        size = 64
        for start in tqdm(range(0, len(order), size), desc="frozen layers", disable=not progress, leave=False):
            idx = order[start : start + size]
            batch = self.aligner.collate([encs[n] for n in idx])
            states = self.aligner.prefix_states(batch, self.n_top).to("cpu", torch.float16)
            for row, n in enumerate(idx):
                self.prefix[key0 + n] = stored[keys[n]] = states[row, : len(encs[n].ids)].clone()
        if disk and todo:
            disk.parent.mkdir(parents=True, exist_ok=True)
            tmp = disk.with_name(disk.name + f".{os.getpid()}.tmp")
            torch.save(stored, tmp)
            os.replace(tmp, disk)

    def hidden(self, batch: Batch, keys: Sequence[int]) -> torch.Tensor:
        if not self.cached:
            return self.aligner.hidden(batch)
        states = torch.zeros(len(keys), batch.ids.shape[1], self.aligner.encoder.config.hidden_size)
        for row, key in enumerate(keys):
            x = self.prefix[key]
            states[row, : x.shape[0]] = x.float()
        return self.aligner.top_layers(states.to(self.aligner.device), batch.mask, self.n_top)

    def raw_scores(self, encs: Sequence[Encoded], key0: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        al = self.aligner
        al.encoder.eval()
        al.head.eval()
        out: list[Any] = [None] * len(encs)
        order = sorted(range(len(encs)), key=lambda n: len(encs[n].ids))
        with torch.inference_mode():
            for start in range(0, len(order), 32):
                idx = order[start : start + 32]
                batch = al.collate([encs[n] for n in idx])
                split_scores(batch, al.scores(batch, self.hidden(batch, [key0 + n for n in idx])), idx, out)
        return out


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
    rng = random.Random(tcfg.seed)
    train, extra, held, source = threshold_split(train, extra, dev, tcfg.threshold_holdout, tcfg.seed)
    dev = list(dev) if dev else held
    aligner = aligner or CrossAligner(dataclasses.replace(cfg), device=device)
    cfg = aligner.config
    cfg.calibration = None  # refitted below; a scaling fitted to the old weights means nothing for the new ones
    data = train + extra
    encs, enc_stats = aligner.encode(data)
    labels, outside = [], 0
    kept = []
    for inst, enc in zip(data, encs):
        if enc is None:
            continue
        cands = candidate_spans(len(enc.target_words), enc.source_len, cfg.k)
        if inst.target_span is not None and inst.target_span[1] >= len(enc.target_words):
            enc_stats["gold_cut_skipped"] = enc_stats.get("gold_cut_skipped", 0) + 1
            continue
        dist, found = target_distribution(cands, inst.target_span, cfg.loss)
        outside += not found
        kept.append(enc)
        labels.append(dist)
    if not kept:
        raise ConfigError("no cross-aligner training instance fits the encoder")
    pre_encs, pre_labels = [], []
    if pretrain:
        for inst, enc in zip(pretrain, aligner.encode(pretrain)[0]):
            if enc is not None and (inst.target_span is None or inst.target_span[1] < len(enc.target_words)):
                pre_encs.append(enc)
                pre_labels.append(
                    target_distribution(
                        candidate_spans(len(enc.target_words), enc.source_len, cfg.k), inst.target_span, cfg.loss
                    )[0]
                )
    dev_encs, _ = aligner.encode(dev) if dev else ([], {})
    dev_ok = [n for n, x in enumerate(dev_encs) if x is not None]
    tuned = _tuned_parameters(aligner)
    named_enc = [(n, p) for n, p in aligner.encoder.named_parameters() if p.requires_grad]
    groups = _param_groups(named_enc, tcfg.learning_rate, tcfg.weight_decay)
    groups += _param_groups(list(aligner.head.named_parameters()), tcfg.head_learning_rate, tcfg.weight_decay)
    opt = torch.optim.AdamW(groups)
    trainer = _Trainer(aligner, tcfg)
    started = time.perf_counter()
    trainer.cache_prefixes(kept, 0, progress)
    trainer.cache_prefixes(pre_encs, 10_000_000, progress)
    trainer.cache_prefixes([dev_encs[n] for n in dev_ok], 20_000_000, progress)
    cache_s = time.perf_counter() - started
    if trainer.cached:
        log.info("cross aligner: frozen layers of %d instances computed once in %.0f s", len(trainer.prefix), cache_s)
    steps_per_epoch = math.ceil(len(kept) / tcfg.batch_size)
    pre_steps = math.ceil(len(pre_encs) / tcfg.batch_size) * tcfg.pretrain_epochs
    total_steps = steps_per_epoch * tcfg.epochs + pre_steps
    warmup = max(1, round(tcfg.warmup * total_steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warmup, max(0.0, (total_steps - step) / max(1, total_steps - warmup)))
    )
    loss_history, dev_history = [], []
    best: tuple[float, int, dict[str, Any] | None] = (-1.0, -1, None)
    stopped_early = False

    def run_epoch(encs_: Sequence[Encoded], labels_: Sequence[torch.Tensor], key0: int, desc: str) -> float:
        nonlocal stopped_early
        aligner.head.train()
        if tuned:
            aligner.encoder.train()
        total, n_batches = 0.0, 0
        for idx in tqdm(
            _length_batches([len(x.ids) for x in encs_], tcfg.batch_size, rng),
            desc=desc,
            disable=not progress,
            leave=False,
        ):
            batch = aligner.collate([encs_[n] for n in idx])
            logits = aligner.scores(batch, trainer.hidden(batch, [key0 + n for n in idx]))
            target = torch.zeros_like(logits)
            for row, n in enumerate(idx):
                target[row, : len(labels_[n])] = labels_[n]
            logp = torch.log_softmax(logits, dim=-1).masked_fill(target == 0, 0.0)
            loss = -(target * logp).sum(-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], tcfg.max_grad_norm)
            opt.step()
            sched.step()
            total += loss.item()
            n_batches += 1
            if n_batches % 50 == 0:
                log.info(
                    "%s: step %d, mean loss %.4f, %.0f s",
                    desc,
                    n_batches,
                    total / n_batches,
                    time.perf_counter() - started,
                )
            if tcfg.max_minutes is not None and time.perf_counter() - started > 60 * tcfg.max_minutes:
                stopped_early = True
                break
        return total / max(n_batches, 1)

    for epoch in range(tcfg.pretrain_epochs if pre_encs else 0):
        loss_history.append(
            {"pretrain_epoch": epoch + 1, "loss": run_epoch(pre_encs, pre_labels, 10_000_000, "pretrain")}
        )
    for epoch in range(tcfg.epochs):
        if stopped_early:
            break
        loss = run_epoch(kept, labels, 0, f"epoch {epoch + 1}")
        loss_history.append({"epoch": epoch + 1, "loss": loss})
        if dev_ok:
            raw = trainer.raw_scores([dev_encs[n] for n in dev_ok], 20_000_000)
            preds = aligner.decide(raw, temperature=1.0, threshold=0.5)
            m = span_metrics([dev[n].target_span for n in dev_ok], [p for p, _ in preds])
            dev_history.append({"epoch": epoch + 1, **m})
            log.info(
                "cross aligner epoch %d: loss %.4f, held-out soft F1 %.3f exact F1 %.3f",
                epoch + 1,
                loss,
                m["soft_f1"],
                m["exact_f1"],
            )
            if m[tcfg.select_on] > best[0]:
                best = (m[tcfg.select_on], epoch + 1, _trainable_state(aligner))
        else:
            log.info("cross aligner epoch %d: loss %.4f", epoch + 1, loss)
    if best[2] is not None:
        _load_trainable_state(aligner, best[2])
    train_s = time.perf_counter() - started
    aligner.encoder.eval()
    aligner.head.eval()
    for p in aligner.encoder.parameters():
        p.requires_grad_(False)
    summary: dict[str, Any] = {
        "kind": "cross",
        "train_instances": len(kept),
        "extra_instances": len(extra),
        "pretrain_instances": len(pre_encs),
        "gold_outside_candidates": outside,
        "encoding": enc_stats,
        "loss_history": loss_history,
        "heldout_history": dev_history,
        "best_epoch": best[1] if best[2] is not None else len(loss_history),
        "stopped_at_time_limit": stopped_early,
        "prefix_cache_s": round(cache_s, 1),
        "train_s": round(train_s, 1),
        "threshold_source": source,
    }
    if dev_ok:
        raw = trainer.raw_scores([dev_encs[n] for n in dev_ok], 20_000_000)
        gold = [dev[n].target_span for n in dev_ok]
        if tcfg.calibrate:
            t, nll = fit_temperature(raw, gold)
            cfg.temperature, cfg.temperature_source = t, f"fitted on {source} (NLL {nll:.3f})"
        cfg.threshold, metrics = aligner.tune_threshold(raw, gold, tcfg.tune_threshold_on)
        cfg.threshold_source = source
        summary.update({"threshold": cfg.threshold, "temperature": cfg.temperature, "heldout_metrics": metrics})
        if tcfg.calibrate:
            summary["calibration"] = _fit_calibration(aligner, raw, gold)
    else:
        cfg.threshold, cfg.threshold_source = 0.5, "untuned"
        summary.update({"threshold": 0.5, "temperature": cfg.temperature})
    log.info(
        "cross aligner: threshold %.4f, temperature %.3f (%s); trained in %.0f s",
        cfg.threshold,
        cfg.temperature,
        source,
        train_s,
    )
    return aligner, summary


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
