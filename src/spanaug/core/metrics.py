"""Span-alignment metrics of the seed paper (soft and exact precision, recall, F1).
"""

from __future__ import annotations

from collections.abc import Sequence


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def span_metrics(gold: Sequence[tuple[int, int] | None], pred: Sequence[tuple[int, int] | None]) -> dict[str, float]:
    """The seed paper's soft (token-level, micro) and exact span precision, recall and F1."""
    overlap = n_pred_tok = n_gold_tok = 0
    exact_hits = n_pred = n_gold = 0
    for g, p in zip(gold, pred, strict=True):
        gset = set(range(g[0], g[1] + 1)) if g is not None else set()
        pset = set(range(p[0], p[1] + 1)) if p is not None else set()
        overlap += len(gset & pset)
        n_pred_tok += len(pset)
        n_gold_tok += len(gset)
        if p is not None:
            n_pred += 1
            exact_hits += int(g is not None and tuple(g) == tuple(p))
        n_gold += int(g is not None)
    soft_p = overlap / n_pred_tok if n_pred_tok else 0.0
    soft_r = overlap / n_gold_tok if n_gold_tok else 0.0
    exact_p = exact_hits / n_pred if n_pred else 0.0
    exact_r = exact_hits / n_gold if n_gold else 0.0
    return {"soft_p": soft_p, "soft_r": soft_r, "soft_f1": _f1(soft_p, soft_r),
            "exact_p": exact_p, "exact_r": exact_r, "exact_f1": _f1(exact_p, exact_r), "n": len(gold)}
