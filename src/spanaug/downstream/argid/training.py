"""Training the argument identifier: Adam, early stopping on dev F1 (given, or a held-out share of the
training sentences), the best epoch kept, then optionally a refit on all the annotations."""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from spanaug.core import training_loop
from spanaug.core.argid_settings import ArgIdTrainSettings
from spanaug.core.errors import ConfigError
from spanaug.downstream.argid.data import Annotation, hold_out
from spanaug.downstream.argid.model import ArgumentIdentifier, build_config
from spanaug.downstream.argid.scoring import argument_scores

log = logging.getLogger(__name__)


def train_argid(
    train: Sequence[Annotation],
    encoder: str,
    tcfg: ArgIdTrainSettings,
    dev: Sequence[Annotation] | None = None,
    release: dict[str, dict[str, str]] | None = None,
    device: str | None = "auto",
    progress: bool = True,
) -> tuple[ArgumentIdentifier, dict[str, Any]]:
    """Train, keeping the epoch with the best dev F1 and stopping ``tcfg.patience`` epochs after it.

    Without ``dev``, ``tcfg.holdout_share`` of the training sentences are held out as dev; with
    ``tcfg.refit`` the model is then trained again on all of them for the best epoch's number of
    epochs. ``release`` (frame -> FE -> coreness, from a FrameNet release) adds each frame's FEs to
    the roles decoding may give its annotations.
    """
    if not train:
        raise ConfigError("no training annotations")

    def held_out(annotations: Sequence[Annotation]) -> training_loop.HeldOut[Annotation]:
        rest, dev = hold_out(annotations, tcfg.holdout_share, tcfg.seed)
        source = f"held out: {tcfg.holdout_share:g} of the training sentences (seed {tcfg.seed})" if dev else "none"
        return training_loop.HeldOut(rest, dev, source)

    def fit_once(
        train: list[Annotation], dev: list[Annotation], settings: ArgIdTrainSettings
    ) -> tuple[ArgumentIdentifier, dict[str, Any]]:
        return _train(train, dev, encoder, settings, release, device, progress)

    return training_loop.train_with_dev(
        train, dev, tcfg, hold_out=held_out, fit_once=fit_once, unit="annotations", refit_keys=("train_annotations",)
    )


def _train(
    train: list[Annotation],
    dev: list[Annotation],
    encoder: str,
    tcfg: ArgIdTrainSettings,
    release: dict[str, dict[str, str]] | None,
    device: str | None,
    progress: bool,
) -> tuple[ArgumentIdentifier, dict[str, Any]]:
    """``tcfg.epochs`` epochs at most; with ``dev``, early stopping and the best epoch's weights."""
    start = time.perf_counter()
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    cfg = build_config(train, encoder, release, tcfg.finetune, tcfg.max_width, tcfg.null_weight)
    model = ArgumentIdentifier(cfg, device=device)
    model.encode(train + dev)  # once, before the epochs are timed (frozen encoder)
    groups = model.parameters()
    for group in groups:
        group["lr"] = tcfg.encoder_learning_rate if group.pop("encoder", False) else tcfg.learning_rate
    opt = torch.optim.Adam(groups)
    groups_by_sentence: dict[str | None, list[Annotation]] = {}
    for a in train:
        groups_by_sentence.setdefault(a.sentence, []).append(a)
    sentences = list(groups_by_sentence.values())

    def batches(epoch: int) -> Iterator[list[Annotation]]:
        # Sentences shuffled, their annotations kept together: a tuned encoder then reads each
        # sentence about once per epoch, whatever its number of triggers.
        rng.shuffle(sentences)
        order = [a for group in sentences for a in group]
        return (order[first : first + tcfg.batch_size] for first in range(0, len(order), tcfg.batch_size))

    def evaluate(epoch: int) -> dict[str, Any]:
        scores = argument_scores(dev, model.predict(dev), model.inventory)
        return {k: scores[k] for k in ("precision", "recall", "f1")}

    modules = [model.net, model.encoder] if tcfg.finetune else [model.net]
    setup_seconds = time.perf_counter() - start
    result = training_loop.fit(
        training_loop.LoopSettings(
            epochs=tcfg.epochs, name="argid", progress=progress, select_on="f1", patience=tcfg.patience
        ),
        opt,
        batches,
        model.loss,
        modules,
        evaluate=evaluate if dev else None,
        state=lambda: [{k: v.detach().clone() for k, v in m.state_dict().items()} for m in modules],
        load_state=lambda states: [m.load_state_dict(s) for m, s in zip(modules, states)],
    )
    summary = {
        "train_annotations": len(train),
        "roles": len(cfg.roles) - 1,
        "frames": len(cfg.frames) - 1,
        "config": dataclasses.asdict(tcfg),
        **result.summary("f1", setup_seconds, start),
        "sentences_windowed": model.windowed,
    }
    return model, summary
