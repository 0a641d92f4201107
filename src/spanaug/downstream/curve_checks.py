"""Checks on the Figure 8 curves that need no model: which augmenter's curve is the baseline's again,
and which points come from a model that predicts nothing.

Kept apart from :mod:`spanaug.downstream.augmenter_comparison` (which trains Frame ID models) so
that the report reads the curves without importing torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The curve without augmentation: its key (``--augmenter none``, the points' folder, the curves'
#: ``augmenter`` column) and its one name in plots, tables, warnings and docs.
BASELINE = "none"
BASELINE_LABEL = "no augmentation"


def label(augmenter: str) -> str:
    """An augmenter's name on a figure or a page: the baseline's label, else its key."""
    return BASELINE_LABEL if augmenter == BASELINE else augmenter


def same_as_baseline(rows: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    """Augmenters whose curve equals the baseline's at every fraction (mean and s.d. of F1), each with
    whether it also added no examples at all (then it cannot differ)."""
    key = {(r["augmenter"], float(r["fraction"])): r for r in rows}
    base = {f: (r["f1_mean"], r["f1_std"]) for (a, f), r in key.items() if a == BASELINE}
    out: dict[str, bool] = {}
    for augmenter in dict.fromkeys(r["augmenter"] for r in rows):
        if augmenter == BASELINE or not base:
            continue
        own = {f: r for (a, f), r in key.items() if a == augmenter}
        if set(own) == set(base) and all((r["f1_mean"], r["f1_std"]) == base[f] for f, r in own.items()):
            out[augmenter] = all(not float(r.get("augmented_examples") or 0) for r in own.values())
    return out


def predicted_nothing(points: Sequence[Mapping[str, Any]]) -> int | None:
    """How many of a curve point's seeds trained a model that predicted nothing on the test set
    (``n_pred`` 0: its F1 of 0 measures no model); None when no seed recorded its predictions."""
    counts = [p["n_pred"] for p in points if p.get("n_pred") is not None]
    return sum(n == 0 for n in counts) if counts else None


def silence_note(silent: int | None, seeds: int) -> str:
    """The curve table's note on a point with seeds whose model predicted nothing ('' otherwise)."""
    if not silent:
        return ""
    who = "the model" if seeds == 1 else f"{silent} of {seeds} seeds' models"
    return f"{who} predicted nothing on the test set (0 predictions): F1 0 there measures no model"
