"""Precision, recall and F1 (one formula for every metric of the project) and the seed paper's span metrics."""

from __future__ import annotations

from collections.abc import Sequence


def prf(hits: int, n_pred: int, n_gold: int, gold_hits: int | None = None) -> tuple[float, float, float]:
    """Precision ``hits / n_pred``, recall ``gold_hits / n_gold`` (``hits`` unless the two hit counts
    differ, as with possible and sure word links) and their F1; 0.0 where a ratio is undefined."""
    gold_hits = hits if gold_hits is None else gold_hits
    precision = hits / n_pred if n_pred else 0.0
    recall = gold_hits / n_gold if n_gold else 0.0
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


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
    soft_p, soft_r, soft_f1 = prf(overlap, n_pred_tok, n_gold_tok)
    exact_p, exact_r, exact_f1 = prf(exact_hits, n_pred, n_gold)
    return {"soft_p": soft_p, "soft_r": soft_r, "soft_f1": soft_f1,
            "exact_p": exact_p, "exact_r": exact_r, "exact_f1": exact_f1, "n": len(gold)}
