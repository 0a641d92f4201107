"""Training the Frame ID model: Adam, early stopping on dev F1 (given, or a held-out share of the
training sentences), the best epoch kept, then optionally a refit on all the sentences.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from spanaug.core import training_loop
from spanaug.core.errors import ConfigError
from spanaug.core.evaluation_settings import FrameIdTrainSettings
from spanaug.downstream.frameid.baseline import triple_scores
from spanaug.downstream.frameid.data import NULL, Sentence, hold_out_dev
from spanaug.downstream.frameid.lexicon import FrameLexicon
from spanaug.downstream.frameid.model import FrameIdConfig, FrameIdentifier, glove_dimension

log = logging.getLogger(__name__)


def build_config(
    sentences: Sequence[Sentence], encoder: str, glove: str | None = None, lexicon: dict[str, set[str]] | None = None
) -> FrameIdConfig:
    """Label, POS and character inventories of the training data (and the lexicon's frames).

    Each span's candidate frames always come from a FrameLexicon: the training triggers'
    (lemma, frame) pairs, plus the lexicon's LUs when one is given. Without the lexicon a span
    whose text or lemma never was a training trigger is not scored at all.
    """
    frame_lexicon = FrameLexicon.build(sentences, lexicon or {})
    frames = {f for s in sentences for f in s.triggers.values()} | frame_lexicon.frames()
    tags = sorted({t for s in sentences for t in (s.pos or [])} | set(_universal_tags()))
    chars = sorted({ch for s in sentences for w in s.tokens for ch in w})
    return FrameIdConfig(
        encoder=encoder,
        frames=[NULL, *sorted(frames)],
        pos_tags=["<unk>", *tags],
        chars=["<pad>", "<unk>", *chars],
        glove=glove,
        glove_dim=glove_dimension(glove) if glove else 0,
        frame_lexicon=frame_lexicon.entries,
    )


def _universal_tags() -> list[str]:
    return [
        "ADJ",
        "ADP",
        "ADV",
        "AUX",
        "CCONJ",
        "DET",
        "INTJ",
        "NOUN",
        "NUM",
        "PART",
        "PRON",
        "PROPN",
        "PUNCT",
        "SCONJ",
        "SYM",
        "VERB",
        "X",
    ]


def train_frameid(
    train: Sequence[Sentence],
    encoder: str,
    tcfg: FrameIdTrainSettings,
    dev: Sequence[Sentence] | None = None,
    glove: str | None = None,
    device: str | None = "auto",
    progress: bool = True,
    lexicon: dict[str, set[str]] | None = None,
) -> tuple[FrameIdentifier, dict[str, Any]]:
    """Train with Adam, keeping the epoch with the best dev F1 and stopping after ``tcfg.patience``
    epochs without a better one.

    Without ``dev``, ``tcfg.holdout_share`` of the full-text training sentences are held out as
    dev; with ``tcfg.refit`` the model is then trained again on all the sentences for the best
    epoch's number of epochs, so that the held-out sentences' triggers also become candidates.
    Each span chooses among its candidate frames: the training triggers' (lemma, frame) pairs, plus
    the frames its lemma can evoke in ``lexicon`` (frame -> LUs) when one is given.
    """
    if not train:
        raise ConfigError("no training sentences")

    def held_out(sentences: Sequence[Sentence]) -> training_loop.HeldOut[Sentence]:
        rest, dev = hold_out_dev(sentences, tcfg.holdout_share, tcfg.seed)
        if dev:
            source = f"held out: {tcfg.holdout_share:g} of the full-text training sentences (seed {tcfg.seed})"
        elif tcfg.holdout_share:
            source = "none: no full-text training sentences to hold out"
        else:
            source = "none: holdout_share is 0"
        return training_loop.HeldOut(rest, dev, source)

    def fit_once(
        train: list[Sentence], dev: list[Sentence], settings: FrameIdTrainSettings
    ) -> tuple[FrameIdentifier, dict[str, Any]]:
        return _train(train, dev, encoder, settings, glove, device, progress, lexicon)

    return training_loop.train_with_dev(
        train,
        dev,
        tcfg,
        hold_out=held_out,
        fit_once=fit_once,
        unit="sentences",
        refit_keys=("train_sentences", "sentences_windowed"),
    )


def _train(
    train: list[Sentence],
    dev: list[Sentence],
    encoder: str,
    tcfg: FrameIdTrainSettings,
    glove: str | None,
    device: str | None,
    progress: bool,
    lexicon: dict[str, set[str]] | None,
) -> tuple[FrameIdentifier, dict[str, Any]]:
    """``tcfg.epochs`` epochs at most; with ``dev``, early stopping and the best epoch's weights."""
    start = time.perf_counter()
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    model = FrameIdentifier(build_config(train, encoder, glove, lexicon), device=device)
    model.load_glove(train)
    model.encode(train + dev)  # once, before the epochs are timed
    opt = torch.optim.Adam(model.net.parameters(), lr=tcfg.learning_rate)
    order = list(train)

    def batches(epoch: int) -> Iterator[list[Sentence]]:
        rng.shuffle(order)
        return (order[first : first + tcfg.batch_size] for first in range(0, len(order), tcfg.batch_size))

    setup_seconds = time.perf_counter() - start
    result = training_loop.fit(
        training_loop.LoopSettings(
            epochs=tcfg.epochs, name="frameid", progress=progress, select_on="f1", patience=tcfg.patience
        ),
        opt,
        batches,
        model.loss,
        [model.net],
        evaluate=(lambda epoch: triple_scores(dev, model.predict(dev))) if dev else None,
        state=lambda: {k: v.detach().clone() for k, v in model.net.state_dict().items()},
        load_state=model.net.load_state_dict,
    )
    summary = {
        "train_sentences": len(train),
        "config": dataclasses.asdict(tcfg),
        **result.summary("f1", setup_seconds, start),
        "sentences_windowed": model.windowed,
    }
    return model, summary
