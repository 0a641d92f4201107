"""The argument-identification experiment: argument F1 against the share of training sentences, with
and without an augmenter's examples (the Frame ID comparison of Figure 8, for frame elements).

One point samples a share of the pool's sentences (all their trigger annotations), adds the augmenter's
examples of the sampled sentences, trains the argument identifier and scores it on the fixed test split.
The examples are the augmenters' EXAMPLES files, with the FEs each carries: ``paraphrastic``, the run's
aligned outputs with their aligned FEs; ``lexsub``, the aligned trigger put back into its seed with the
seed's FEs moved. An example that lost an FE is left out by default (``lost_fes``): the lost FE's words
are in it, unmarked, and would be learnt as no FE. The curves are Frame ID's
(``augmenter_comparison.curves_stage``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core.argid_settings import ArgIdTrainSettings, LostFes
from spanaug.core.errors import ConfigError
from spanaug.downstream.argid.data import Annotation, annotation_from_row, hold_out
from spanaug.downstream.argid.scoring import argument_scores
from spanaug.downstream.argid.training import train_argid
from spanaug.downstream.augmenter_comparison import Point, sample_indices
from spanaug.downstream.curve_checks import BASELINE
from spanaug.downstream.frameid.data import sentence_key

log = logging.getLogger(__name__)

#: The augmenters whose examples carry FEs that the experiment can add (besides none).
ARGID_AUGMENTERS = ("paraphrastic", "lexsub")

#: The curve figure's axis label.
YLABEL = "argument F1 (test, gold frames)"


def by_sentence(annotations: Sequence[Annotation]) -> dict[str, list[Annotation]]:
    """The annotations grouped by sentence (its key: lowercased characters without spaces)."""
    groups: dict[str, list[Annotation]] = {}
    for a in annotations:
        groups.setdefault(sentence_key(a.tokens), []).append(a)
    return groups


def sample_annotations(pool: Sequence[Annotation], fraction: float, seed: int) -> list[Annotation]:
    """Every annotation of ``fraction`` of the pool's sentences, drawn as Frame ID draws its sample."""
    groups = by_sentence(pool)
    keys = list(groups)
    return [a for i in sample_indices(keys, fraction, seed) for a in groups[keys[i]]]


def example_annotations(
    examples: Sequence[Mapping[str, Any]],
    sentence_keys: set[str],
    lost_fes: LostFes = "drop_example",
    source: Path = Path("examples.parquet"),
) -> tuple[list[Annotation], int]:
    """An augmenter's examples (EXAMPLES rows) of the sentences in ``sentence_keys`` as annotations with
    the FEs they carry, and how many of those examples were left out: no FE annotated, or (with
    ``drop_example``) an FE lost."""
    out, skipped = [], 0
    for i, row in enumerate(examples):
        if row["seed_key"] not in sentence_keys:
            continue
        annotation = annotation_from_row(row, "tokens", "span_start", "span_end", source, f"row {i + 1}", lost_fes)
        if annotation is None:
            skipped += 1
        else:
            out.append(annotation)
    return out, skipped


@dataclasses.dataclass
class ArgIdPointData:
    """What a point trains and tests on: the pool sampled from, the fixed test split, optional dev
    annotations, the augmenter's examples (EXAMPLES rows with their FEs), a FrameNet release's frames,
    and what becomes of an example that lost an FE."""

    pool: Sequence[Annotation]
    test: Sequence[Annotation]
    dev: Sequence[Annotation] | None = None
    examples: Sequence[Mapping[str, Any]] | None = None
    release: dict[str, dict[str, str]] | None = None
    lost_fes: LostFes = "drop_example"


def run_argid_point(
    point: Point, data: ArgIdPointData, encoder: str, tcfg: ArgIdTrainSettings, device: str | None = "auto"
) -> dict[str, Any]:
    """Train on a sample (plus the augmenter's examples of it) and score on ``data.test`` (gold frames).

    Without ``data.dev``, ``tcfg.holdout_share`` of the sampled sentences are held out for early
    stopping; the augmenter's examples of every sampled sentence stay in training, as in Frame ID's
    points (the held-out share is then the dev set given to training, so no refit follows)."""
    augmenter, fraction, seed = point.augmenter, point.fraction, point.seed
    tcfg = dataclasses.replace(tcfg, seed=seed)
    sample = sample_annotations(data.pool, fraction, seed)
    keys = set(by_sentence(sample))
    if augmenter == BASELINE:
        extra, skipped = [], 0
    elif augmenter in ARGID_AUGMENTERS:
        if data.examples is None:
            raise ConfigError(f"augmenter {augmenter!r} needs its examples file")
        extra, skipped = example_annotations(data.examples, keys, data.lost_fes)
    else:
        raise ConfigError(f"unknown augmenter {augmenter!r}: expected one of {(BASELINE, *ARGID_AUGMENTERS)}")
    train, dev = list(sample), data.dev
    if dev is None:  # held out here, from the sample alone ([] when the share rounds to none)
        train, dev = hold_out(sample, tcfg.holdout_share, seed)
    model, summary = train_argid(
        train + extra, encoder, tcfg, dev=dev, release=data.release, device=device, progress=False
    )
    scores = argument_scores(data.test, model.predict(data.test), model.inventory)
    log.info(
        "point %s %.0f%% seed %d: %d sentences (%d annotations) + %d examples (%d left out): F1 %.3f",
        augmenter,
        100 * fraction,
        seed,
        len(keys),
        len(sample),
        len(extra),
        skipped,
        scores["f1"],
    )
    return {
        "augmenter": augmenter,
        "fraction": fraction,
        "seed": seed,
        "train_sentences": len(keys),
        "train_annotations": len(sample),
        "augmented_examples": len(extra),
        "augmented_left_out": skipped,
        "lost_fes": data.lost_fes,
        **scores,
        "best_dev_f1": summary["best_dev_f1"],
        "best_epoch": summary["best_epoch"],
        "dev": "none" if not dev else "given" if data.dev is not None else "held out",
        "seconds": summary["total_seconds"],
    }
