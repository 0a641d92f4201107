"""Settings of the argument identifier (``spanaug argid train``): written once here, the options
and their help generated from them (``spanaug.cli.options``)."""

from __future__ import annotations

from typing import Literal

from spanaug.core.settings import Settings, setting, settings

#: What becomes of an augmenter's example that lost an FE: left out, or trained on its other FEs.
LostFes = Literal["drop_example", "keep_example"]


@settings
class ArgIdTrainSettings(Settings):
    """Training the argument identifier (``spanaug argid train``)."""

    # Defaults measured on the shared FrameNet 1.7 dev split with MiniLM on 2 CPU cores (docs/argid.md):
    # a frozen MiniLM stayed under 0.30 test F1 after 8 epochs, a tuned one passed 0.35 in 4-6; a refit
    # after early stopping would double the time, so the held-out share's best epoch is kept as is.
    epochs: int = setting(8, "most training epochs (early stopping on dev may end sooner)", minimum=1)
    batch_size: int = setting(16, "annotations (sentence, trigger, frame) per step", minimum=1)
    learning_rate: float = setting(2e-3, "Adam learning rate of the network over the encoder", exclusiveMinimum=0)
    finetune: bool = setting(
        True, "fine-tune the encoder (--no-finetune: frozen, its vectors computed once; faster, less accurate)"
    )
    encoder_learning_rate: float = setting(
        1e-4, "Adam learning rate of the encoder with --finetune", exclusiveMinimum=0
    )
    max_width: int = setting(
        20,
        "longest candidate span in tokens: a longer gold FE cannot be found (1 in 20 of the shared split's test FEs)",
        minimum=1,
    )
    null_weight: float = setting(
        0.25, "weight of the spans that are no FE (NULL) in the loss, against 1 for an FE's span", exclusiveMinimum=0
    )
    patience: int = setting(
        3,
        "stop after this many epochs without a better dev F1 (0: never stop early); the best epoch's weights are kept",
        minimum=0,
    )
    holdout_share: float = setting(
        0.1,
        "without a dev set: share of the training sentences held out as dev (drawn by the seed); "
        "0: every epoch is trained and the last kept",
        minimum=0,
        exclusiveMaximum=1,
    )
    refit: bool = setting(
        False,
        "after early stopping on a held-out share, train again on all the training sentences "
        "for the best epoch's number of epochs",
    )
    threads: int = setting(1, "CPU threads while training (0: torch's default)", minimum=0)
    seed: int = setting(0, "weights, batch order and the held-out share")
