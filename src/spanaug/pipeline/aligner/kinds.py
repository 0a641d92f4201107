"""The aligner kinds, written once: for each, the class that loads and predicts it and the function
that trains it, imported only when a model of that kind is loaded or trained (torch, transformers).

Loading (:mod:`.loading`), the ``align train`` command, the evaluations that train rows of either
kind and the workflow's preflight all read :data:`KINDS`, so a new kind is one entry here plus its
modules. Torch-free: the preflight asks which kinds pre-train before any model exists.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from spanaug.core import modeldir
from spanaug.core.aligner_settings import (
    AlignerConfig,
    AlignerTrainSettings,
    CrossAlignerConfig,
    CrossTrainSection,
    CrossTrainSettings,
)
from spanaug.core.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Kind:
    """One aligner kind: where its model class and its trainer live (module, name), and whether it
    can pre-train on other instances before its training data."""

    model: tuple[str, str]
    trainer: tuple[str, str]
    #: What a saved folder of this kind records it holds (core.modeldir), and its config's class:
    #: checked before its weights load, and by the preflight.
    what: str
    config: type
    pretrains: bool = False


KINDS: dict[str, Kind] = {
    "paper": Kind(
        model=("spanaug.pipeline.aligner.model", "SpanAligner"),
        trainer=("spanaug.pipeline.aligner.training", "train_paper"),
        what="paper aligner",
        config=AlignerConfig,
    ),
    "cross": Kind(
        model=("spanaug.pipeline.aligner.cross_model", "CrossAligner"),
        trainer=("spanaug.pipeline.aligner.cross_training", "train_cross"),
        what="cross aligner",
        config=CrossAlignerConfig,
        pretrains=True,
    ),
}


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How to train an aligner of either kind: each kind reads its own architecture and training
    settings, so one recipe serves a row whatever its kind."""

    paper: AlignerConfig
    paper_training: AlignerTrainSettings
    cross: CrossAlignerConfig
    cross_training: CrossTrainSettings

    @classmethod
    def of(cls, encoder: str, k: int, epochs: int, seed: int, cross: CrossTrainSection | None = None) -> Recipe:
        """The evaluations' recipe: the paper kind for ``epochs``, the cross kind as ``cross`` says
        (its defaults when None), both on ``encoder`` with window ``k`` and seeded with ``seed``."""
        cross = cross or CrossTrainSection()
        return cls(
            paper=AlignerConfig(encoder=encoder, k=k),
            paper_training=AlignerTrainSettings(epochs=epochs, seed=seed),
            cross=cross.architecture(encoder, k),
            cross_training=dataclasses.replace(cross.training(), seed=seed),
        )


class Trainer(Protocol):
    """The signature every kind's trainer has: the trained aligner and its training summary."""

    def __call__(
        self,
        recipe: Recipe,
        train: Sequence[Any],
        dev: Sequence[Any] | None,
        *,
        device: str | None,
        progress: bool,
        extra: Sequence[Any],
        pretrain: Sequence[Any],
        aligner: Any | None,
    ) -> tuple[Any, dict[str, Any]]: ...


def kind_entry(kind: str) -> Kind:
    """The registry's entry for ``kind``; an unknown kind is a user error naming the known ones."""
    if kind not in KINDS:
        raise ConfigError(f"unknown aligner kind {kind!r} (known: {', '.join(KINDS)})")
    return KINDS[kind]


def pretraining_kinds() -> list[str]:
    return [name for name, entry in KINDS.items() if entry.pretrains]


def pretrain_problem(kind: str) -> str | None:
    """Why an aligner of ``kind`` cannot be given pre-training instances (None when it can)."""
    if kind_entry(kind).pretrains:
        return None
    return f"only the {' and '.join(pretraining_kinds())} aligner pre-trains"


def load_attribute(where: tuple[str, str]) -> Any:
    module, name = where
    return getattr(importlib.import_module(module), name)


def train_kind(
    kind: str,
    recipe: Recipe,
    train: Sequence[Any],
    dev: Sequence[Any] | None,
    *,
    device: str | None = "auto",
    progress: bool = False,
    extra: Sequence[Any] = (),
    pretrain: Sequence[Any] = (),
    aligner: Any | None = None,
) -> tuple[Any, dict[str, Any]]:
    """An aligner of ``kind`` trained by ``recipe`` on ``train`` (+ ``extra``), tuned on ``dev`` (or on
    held-out training pairs), after ``pretrain`` where the kind pre-trains; and its summary.
    ``aligner`` continues from a model of that kind (the paper kind: one frozen encoder shared by
    several rows)."""
    if pretrain and (problem := pretrain_problem(kind)):
        raise ConfigError(f"pre-training instances given to a {kind} aligner: {problem} (aligner.kind)")
    trainer: Trainer = load_attribute(kind_entry(kind).trainer)
    return trainer(
        recipe, train, dev, device=device, progress=progress, extra=extra, pretrain=pretrain, aligner=aligner
    )


#: The kind of a directory whose config.json has no ``kind``: the paper aligner saved it none before.
DEFAULT_KIND = "paper"


def aligner_kind(path: Path | str) -> str:
    """The ``kind`` saved in a trained aligner's config (``paper`` when it has none); a known one."""
    config = Path(path) / modeldir.CONFIG_FILE
    if not config.is_file():
        raise ConfigError(f"{path}: not a trained aligner (no {modeldir.CONFIG_FILE})")
    try:
        saved = json.loads(config.read_text(encoding="utf-8"))
        kind = saved.get("kind", DEFAULT_KIND)
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
        raise ConfigError(f"{config}: not a trained aligner's config ({exc})") from None
    if kind not in KINDS:
        raise ConfigError(
            f"{path}: unknown aligner kind {kind!r} in {modeldir.CONFIG_FILE} (known: {', '.join(KINDS)})"
        )
    return str(kind)
