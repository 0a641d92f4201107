"""The augmenter comparison of Figure 8: Frame ID F1 against the share of training sentences.

One point trains Frame ID on a sample of the training sentences (a fraction, a seed), with or
without one augmenter's examples for the sampled sentences, and scores it on the fixed test
split. Points are independent jobs; ``curves`` averages them over seeds.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files, plotting
from spanaug.core.errors import ConfigError, InputError
from spanaug.downstream.augmenters import AUGMENTERS, GecaSettings, geca_examples
from spanaug.downstream.curve_checks import BASELINE, label, predicted_nothing, same_as_baseline, silence_note
from spanaug.downstream.frameid.baseline import triple_scores
from spanaug.downstream.frameid.data import Sentence, examples_to_sentences, sentence_key
from spanaug.downstream.frameid.training import FrameIdTrainSettings, train_frameid

log = logging.getLogger(__name__)


def sample_indices(keys: Sequence[str], fraction: float, seed: int) -> list[int]:
    """``fraction`` of the positions of ``keys`` (sentence keys; at least one), drawn without replacement
    by ``seed``, in input order. The draw depends on the keys, not on their order in the input."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"fraction must be in (0, 1], got {fraction}")
    if not keys:
        raise ConfigError("train: the pool holds no training sentence to sample from")
    k = max(1, round(fraction * len(keys)))
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return sorted(random.Random(seed).sample(order, k))


def sample_sentences(pool: Sequence[Sentence], fraction: float, seed: int) -> list[Sentence]:
    """``fraction`` of the sentences (at least one), drawn without replacement by ``seed``."""
    return [pool[i] for i in sample_indices([sentence_key(s.tokens) for s in pool], fraction, seed)]


def examples_for(
    sample: Sequence[Sentence],
    augmenter: str,
    examples: Sequence[Mapping[str, Any]] | None,
    geca: GecaSettings | None = None,
) -> list[Sentence]:
    """The augmenter's training sentences for this sample.

    Precomputed examples (paraphrastic, lexsub) are kept when they derive from a sampled
    sentence; GECA builds its indexes from the sample itself, as it would with that little data.
    """
    if augmenter == BASELINE:
        return []
    if augmenter == "geca":
        return examples_to_sentences(geca_examples(sample, geca)[0])
    if augmenter not in AUGMENTERS:
        raise ConfigError(f"unknown augmenter {augmenter!r}: expected one of {(BASELINE, *AUGMENTERS)}")
    if examples is None:
        raise ConfigError(f"augmenter {augmenter!r} needs its examples file")
    keys = {sentence_key(s.tokens) for s in sample}
    return examples_to_sentences(r for r in examples if r["seed_key"] in keys)


@dataclasses.dataclass(frozen=True)
class Point:
    """One point of Figure 8: an augmenter (or :data:`BASELINE`, no augmentation) on a sample of the
    training sentences."""

    augmenter: str
    fraction: float
    seed: int  # the sample's and the training's


@dataclasses.dataclass
class PointData:
    """What a point trains and tests on: the pool sampled from, the fixed test split, and optionally
    dev sentences, the augmenter's examples (paraphrastic, lexsub) and the lexicon of frames."""

    pool: Sequence[Sentence]
    test: Sequence[Sentence]
    dev: Sequence[Sentence] | None = None
    examples: Sequence[Mapping[str, Any]] | None = None
    lexicon: dict[str, set[str]] | None = None


def run_point(
    point: Point,
    data: PointData,
    encoder: str,
    tcfg: FrameIdTrainSettings,
    geca: GecaSettings | None = None,
    device: str | None = "auto",
) -> dict[str, Any]:
    """Train on a sample (plus the augmenter's examples of it) and score on ``data.test``.

    Without ``data.dev``, train_frameid holds out a share of the sampled (full-text) sentences for
    early stopping, as ``frameid train`` does; their augmenter examples stay in training.
    """
    augmenter, fraction, seed = point.augmenter, point.fraction, point.seed
    test = data.test
    sample = sample_sentences(data.pool, fraction, seed)
    extra = examples_for(sample, augmenter, data.examples, geca)
    model, summary = train_frameid(
        sample + extra,
        encoder,
        dataclasses.replace(tcfg, seed=seed),
        dev=data.dev,
        device=device,
        progress=False,
        lexicon=data.lexicon,
    )
    scores = triple_scores(test, model.predict(test))
    log.info(
        "point %s %.0f%% seed %d: %d sentences + %d examples: F1 %.3f",
        augmenter,
        100 * fraction,
        seed,
        len(sample),
        len(extra),
        scores["f1"],
    )
    return {
        "augmenter": augmenter,
        "fraction": fraction,
        "seed": seed,
        "train_sentences": len(sample),
        "augmented_examples": len(extra),
        **scores,
        "best_dev_f1": summary["best_dev_f1"],
        "best_epoch": summary["best_epoch"],
        "dev": summary["dev"]["source"],
        "refit": summary["refit"] is not None,
    }


def read_points(paths: Sequence[Path | str]) -> list[dict[str, Any]]:
    """Point results (``frameid point``), each checked: a JSON object with the augmenter (a name),
    the fraction (in (0, 1]), the seed (an integer) and F1 (in [0, 1])."""
    points = []
    for path in paths:
        point = files.read_json(path)
        if not isinstance(point, dict):
            raise InputError(path, None, "not a point result (expected a JSON object)")
        missing = {"augmenter", "fraction", "seed", "f1"} - set(point)
        if missing:
            raise InputError(path, None, f"point result lacks {sorted(missing)}")
        number = {k: isinstance(point[k], (int, float)) and not isinstance(point[k], bool) for k in ("fraction", "f1")}
        if not (
            isinstance(point["augmenter"], str)
            and point["augmenter"].strip()
            and number["fraction"]
            and 0 < point["fraction"] <= 1
            and number["f1"]
            and 0 <= point["f1"] <= 1
            and isinstance(point["seed"], int)
            and not isinstance(point["seed"], bool)
        ):
            raise InputError(
                path,
                None,
                "point result with augmenter {augmenter!r}, fraction {fraction!r}, seed "
                "{seed!r}, f1 {f1!r} (expected a name, a number in (0, 1], an integer and "
                "a number in [0, 1])".format(**point),
            )
        for key in ("train_sentences", "augmented_examples"):
            if not isinstance(point.get(key, 0), (int, float)) or isinstance(point.get(key, 0), bool):
                raise InputError(path, None, f"{key} is {point[key]!r} (expected a number)")
        # The model's predictions on the test set (points written before it was checked lack it).
        n_pred = point.get("n_pred", 0)
        if not isinstance(n_pred, int) or isinstance(n_pred, bool) or n_pred < 0:
            raise InputError(path, None, f"n_pred is {n_pred!r} (expected a count of predictions)")
        points.append(point)
    return points


def curves(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation of F1 per (augmenter, fraction), over seeds, with the mean count of
    the models' predictions on the test set, how many seeds' models predicted nothing, and a note
    saying so (blank where the points did not record their predictions)."""
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = defaultdict(list)
    for p in points:
        groups[(p["augmenter"], float(p["fraction"]))].append(p)
    rows = []
    for (augmenter, fraction), group in sorted(groups.items(), key=lambda kv: (kv[0][0] != BASELINE, kv[0])):
        f1 = [g["f1"] for g in group]
        mean = sum(f1) / len(f1)
        std = math.sqrt(sum((x - mean) ** 2 for x in f1) / (len(f1) - 1)) if len(f1) > 1 else 0.0
        rows.append(
            {
                "augmenter": augmenter,
                "fraction": fraction,
                "seeds": len(group),
                "f1_mean": round(mean, 4),
                "f1_std": round(std, 4),
                "train_sentences": round(sum(g.get("train_sentences", 0) for g in group) / len(group), 1),
                "augmented_examples": round(sum(g.get("augmented_examples", 0) for g in group) / len(group), 1),
                **_predictions(group),
            }
        )
    return rows


def _predictions(group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A curve point's predictions columns (see :func:`curves`)."""
    counts = [g["n_pred"] for g in group if g.get("n_pred") is not None]
    silent = predicted_nothing(group)
    return {
        "n_pred": round(sum(counts) / len(counts), 1) if counts else None,
        "seeds_predicting_nothing": silent,
        "note": silence_note(silent, len(group)),
    }


def plot_curves(rows: Sequence[Mapping[str, Any]], path: Path | str, ylabel: str = "Frame ID F1 (test)") -> None:
    """F1 against the share of training sentences, one line per augmenter, error bars = 1 s.d."""
    fig, ax = plotting.subplots(figsize=(8, 4))
    by_augmenter: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_augmenter[row["augmenter"]].append(row)
    same = same_as_baseline(rows)
    for augmenter, group in by_augmenter.items():
        group = sorted(group, key=lambda r: r["fraction"])
        name = label(augmenter)
        style: dict[str, Any] = {"marker": "o"}
        if augmenter in same:
            # Drawn on top of the baseline: say so, and keep the line under it visible.
            name += f" (= {label(BASELINE)}{': 0 examples' if same[augmenter] else ''})"
            style = {"marker": "o", "linestyle": "--", "markerfacecolor": "none", "markersize": 9}
        ax.errorbar(
            [100 * r["fraction"] for r in group],
            [r["f1_mean"] for r in group],
            yerr=[r["f1_std"] for r in group],
            capsize=3,
            label=name,
            **style,
        )
    _mark_silent_points(ax, rows)
    ax.set_xlabel("training sentences sampled (%)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))  # outside: the notes need the axes
    plotting.save(fig, path)


def _mark_silent_points(ax: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """A red cross and a note on each point where a seed's model predicted nothing: its F1 of 0 is no
    measurement of the augmenter, and would otherwise read as one."""
    silent = [r for r in rows if r.get("seeds_predicting_nothing")]
    right = max((float(r["fraction"]) for r in rows), default=1.0)
    for n, r in enumerate(silent):
        x, y = 100 * r["fraction"], r["f1_mean"]
        first = "model predicts nothing" if n == 0 else None
        ax.plot([x], [y], marker="x", markersize=12, color="red", linestyle="none", zorder=5, label=first)
        at_right = float(r["fraction"]) == right  # written leftwards there, inside the axes
        ax.annotate(
            f"{label(r['augmenter'])}: {r['seeds_predicting_nothing']}/{r['seeds']} predict nothing",
            (x, y),
            textcoords="offset points",
            xytext=(-6 if at_right else 6, 6 + 10 * (n % 3)),
            ha="right" if at_right else "left",
            fontsize=7,
            color="red",
        )


def curves_stage(
    point_paths: Sequence[Path | str], table: Path | str, plot: Path | str, ylabel: str = "Frame ID F1 (test)"
) -> list[dict[str, Any]]:
    """CLI stage: point results (Frame ID's or the argument identifier's) -> the curve table (CSV) and figure."""
    rows = curves(read_points(point_paths))
    for row in rows:
        if row["note"]:
            log.warning(
                "%s at %.0f%% of the training sentences: %s",
                label(row["augmenter"]),
                100 * row["fraction"],
                row["note"],
            )
    files.write_csv(rows, table)
    plot_curves(rows, plot, ylabel)
    return rows
