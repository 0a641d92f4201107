"""The one training loop of spanaug's hand-written trainers (span aligners, DiscAlign, Frame ID,
argument ID, the filter classifier), and the dev-set driver Frame ID and argument ID share.

transformers' Trainer does not fit them: they train on cached features with their own batching and
must stay reproducible draw for draw. So each trainer keeps its data, its shuffling (its RNG is
drawn exactly as before) and its loss; this loop does the rest: train mode, zero_grad, backward,
optional clipping, the optimizer and scheduler steps, the mean loss per epoch, progress bars and
periodic logs, a time limit, held-out evaluation with patience and the best epoch's state kept.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

import torch
from torch import nn
from tqdm import tqdm

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Model = TypeVar("Model")
Settings = TypeVar("Settings")  # a dataclass of training settings with epochs, threads and refit

#: What ``loss(batch)`` returns: the loss, the loss and its weight in the epoch's mean, or None to skip the batch.
LossResult = torch.Tensor | tuple[torch.Tensor, float] | None


@dataclasses.dataclass
class LoopSettings:
    """How :func:`fit` runs (the trainer's own settings fill it in)."""

    epochs: int
    name: str = "training"  # in progress bars ("name N") and log lines
    max_grad_norm: float | None = None  # clip the gradients' total norm to this (None: no clipping)
    time_limit_s: float | None = None  # stop after the epoch in which this many seconds have passed
    progress: bool = True  # tqdm bars per epoch
    log_every: int | None = None  # also log the running mean loss every N steps (None: never)
    log_epochs: bool = True  # log each epoch's loss (and evaluation)
    select_on: str | None = None  # the key of evaluate()'s dict whose best value chooses the epoch kept
    patience: int | None = None  # stop this many epochs after the best one (None or 0: never)
    patience_above: float = 0.0  # patience counts only once the best value exceeds this (nothing learnt before)


@dataclasses.dataclass
class EpochRecord:
    """One epoch: its number (from 1), mean loss, seconds, and the evaluation (when there is one)."""

    epoch: int
    loss: float
    seconds: float
    steps: int
    evaluation: dict[str, Any] | None = None
    eval_seconds: float | None = None

    def history_entry(self) -> dict[str, Any]:
        """The epoch in a training summary's history: loss and seconds, and the dev scores when there is dev."""
        entry: dict[str, Any] = {"epoch": self.epoch, "loss": self.loss, "seconds": round(self.seconds, 2)}
        if self.evaluation is not None:
            entry["dev"] = self.evaluation
            entry["dev_seconds"] = round(self.eval_seconds or 0.0, 2)
        return entry


@dataclasses.dataclass
class LoopResult:
    """What :func:`fit` did: the epochs run, the best one (its state is loaded) and why it stopped."""

    epochs: list[EpochRecord]
    best_epoch: int | None = None  # None without evaluation
    best_value: float | None = None
    stopped_early: bool = False  # by patience, before the last epoch
    stopped_at_time_limit: bool = False
    seconds: float = 0.0

    @property
    def losses(self) -> list[float]:
        return [e.loss for e in self.epochs]

    def summary(self, select_on: str, setup_seconds: float, started: float) -> dict[str, Any]:
        """A training summary's epochs: how many ran, whether patience stopped them, the best epoch
        and its dev ``select_on`` (the last epoch, None, without dev), the times (``started`` on
        ``time.perf_counter``) and the history."""
        history = [e.history_entry() for e in self.epochs]
        evaluated = self.best_epoch is not None
        return {
            "epochs_run": len(history),
            "stopped_early": self.stopped_early,
            "best_epoch": self.best_epoch if evaluated else len(history),
            f"best_dev_{select_on}": self.best_value if evaluated else None,
            "seconds_per_epoch": round(sum(h["seconds"] for h in history) / max(len(history), 1), 2),
            "setup_seconds": round(setup_seconds, 2),
            "total_seconds": round(time.perf_counter() - started, 2),
            "history": history,
        }


def fit(
    settings: LoopSettings,
    optimizer: torch.optim.Optimizer,
    batches: Callable[[int], Iterable[Any]],
    loss: Callable[[Any], LossResult],
    modules: Sequence[nn.Module],
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    evaluate: Callable[[int], dict[str, Any]] | None = None,
    state: Callable[[], Any] | None = None,
    load_state: Callable[[Any], None] | None = None,
    started: float | None = None,
) -> LoopResult:
    """Train ``settings.epochs`` epochs at most over ``batches(epoch)`` (epochs count from 1).

    ``modules`` are put in train mode at each epoch's start (and left in eval mode at the end).
    After each epoch ``evaluate(epoch)`` (if given) scores the model; the epoch whose
    ``settings.select_on`` value is best (strictly higher than every earlier one) is kept through
    ``state()`` and restored with ``load_state`` at the end. The time limit counts from
    ``started`` (a ``time.perf_counter()`` value; default: now), so setup can count against it.
    """
    started = time.perf_counter() if started is None else started
    result = LoopResult(epochs=[])
    best_state = None
    for epoch in range(1, settings.epochs + 1):
        record, result.stopped_at_time_limit = _epoch(
            settings, optimizer, scheduler, batches(epoch), loss, modules, epoch, started
        )
        if evaluate is not None:
            tick = time.perf_counter()
            record.evaluation = evaluate(epoch)
            record.eval_seconds = time.perf_counter() - tick
            value = record.evaluation[settings.select_on] if settings.select_on else None
            if value is not None and (result.best_value is None or value > result.best_value):
                result.best_epoch, result.best_value = epoch, value
                best_state = state() if state is not None else None
        result.epochs.append(record)
        if settings.log_epochs:
            log.info("%s epoch %d: loss %.4f%s", settings.name, epoch, record.loss, _described(record.evaluation))
        if result.stopped_at_time_limit:
            break
        if epoch < settings.epochs and _out_of_patience(settings, result, epoch):
            result.stopped_early = True
            break
    if best_state is not None and load_state is not None:
        load_state(best_state)
    for module in modules:
        module.eval()
    result.seconds = time.perf_counter() - started
    return result


def _epoch(
    settings: LoopSettings,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None,
    batches: Iterable[Any],
    loss: Callable[[Any], LossResult],
    modules: Sequence[nn.Module],
    epoch: int,
    started: float,
) -> tuple[EpochRecord, bool]:
    """One pass over ``batches``; stops after the step that passes the time limit (then True)."""
    tick = time.perf_counter()
    for module in modules:
        module.train()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    total, weight, steps = 0.0, 0.0, 0
    desc = f"{settings.name} {epoch}"
    for batch in tqdm(batches, desc=desc, disable=not settings.progress, leave=False):
        out = loss(batch)
        if out is None:
            continue
        value, w = out if isinstance(out, tuple) else (out, 1)
        optimizer.zero_grad(set_to_none=True)
        value.backward()
        if settings.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        total += value.item() * w
        weight += w
        steps += 1
        if settings.log_every and steps % settings.log_every == 0:
            log.info("%s: step %d, mean loss %.4f, %.0f s", desc, steps, total / weight, time.perf_counter() - started)
        if settings.time_limit_s is not None and time.perf_counter() - started > settings.time_limit_s:
            return EpochRecord(epoch, total / weight, time.perf_counter() - tick, steps), True
    return EpochRecord(epoch, total / weight if weight else 0.0, time.perf_counter() - tick, steps), False


def _out_of_patience(settings: LoopSettings, result: LoopResult, epoch: int) -> bool:
    """Patience counts from the best epoch once the best value passes ``patience_above``: a model
    still at 0 has not started to learn, so it is not compared yet."""
    if not settings.patience or result.best_epoch is None or result.best_value is None:
        return False
    return result.best_value > settings.patience_above and epoch - result.best_epoch >= settings.patience


def _described(evaluation: dict[str, Any] | None) -> str:
    if not evaluation:
        return ""
    shown = ", ".join(f"{k} {v:.3f}" for k, v in evaluation.items() if isinstance(v, float))
    return f", held out: {shown}" if shown else ""


# ---------------------------------------------------------------- dev sets, threads and the refit


@dataclasses.dataclass
class HeldOut(Generic[Item]):
    """What ``train_with_dev``'s ``hold_out`` returns: the training items left, the dev items held
    out (empty when none could be), and a line saying where dev came from."""

    train: list[Item]
    dev: list[Item]
    source: str


def train_with_dev(
    train: Sequence[Item],
    dev: Sequence[Item] | None,
    settings: Settings,
    *,
    hold_out: Callable[[Sequence[Item]], HeldOut[Item]],
    fit_once: Callable[[list[Item], list[Item], Settings], tuple[Model, dict[str, Any]]],
    unit: str,
    refit_keys: Sequence[str] = (),
) -> tuple[Model, dict[str, Any]]:
    """The driver the downstream models (Frame ID, argument ID) share around their ``fit_once(train,
    dev, settings)``, which trains once and returns the model and a summary with ``epochs_run``,
    ``best_epoch`` and ``total_seconds``. ``settings`` is the model's training dataclass, with
    ``epochs``, ``threads`` (0: torch's default) and ``refit``.

    Without ``dev``, ``hold_out`` draws it from the training items; with ``refit`` the model is then
    trained again on all of them for the best epoch's number of epochs. Training runs on the
    settings' threads, restored after. The summary gains ``dev`` (its source and size in ``unit``),
    ``refit`` (None, or its epochs, seconds and ``refit_keys`` of its summary) and the total time."""
    start = time.perf_counter()
    held_out = dev is None
    if dev is None:
        split = hold_out(train)
        train, dev, source = split.train, split.dev, split.source
    else:
        source = "given"
    before = torch.get_num_threads()
    if settings.threads:
        torch.set_num_threads(settings.threads)
    try:
        model, summary = fit_once(list(train), list(dev), settings)
        summary = {"dev": {"source": source, unit: len(dev)}, **summary, "refit": None}
        if held_out and dev and settings.refit:
            again_settings = dataclasses.replace(settings, epochs=summary["best_epoch"])
            model, again = fit_once([*train, *dev], [], again_settings)
            summary["refit"] = {
                **{key: again[key] for key in refit_keys},
                "epochs": again["epochs_run"],
                "seconds": again["total_seconds"],
            }
    finally:
        torch.set_num_threads(before)
    summary["total_seconds"] = round(time.perf_counter() - start, 2)
    return model, summary
