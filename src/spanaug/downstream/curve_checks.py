"""Checks on the Figure 8 curves that need no model: which augmenter's curve is the baseline's again.

Kept apart from :mod:`spanaug.downstream.augmenter_comparison` (which trains Frame ID models) so
that the report reads the curves without importing torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The curve without augmentation.
BASELINE = "none"


def same_as_baseline(rows: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    """Augmenters whose curve equals 'none' at every fraction (mean and s.d. of F1), each with
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
