"""Precision, recall and F1 (one formula for every metric of the project), the seed paper's span metrics,
and the calibration of an aligner's scores (expected calibration error)."""

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
    return {
        "soft_p": soft_p,
        "soft_r": soft_r,
        "soft_f1": soft_f1,
        "exact_p": exact_p,
        "exact_r": exact_r,
        "exact_f1": exact_f1,
        "n": len(gold),
    }


def expected_calibration_error(scores: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """ECE: the bin-size-weighted mean |accuracy - mean score| over ``bins`` equal-width score bins."""
    if len(scores) != len(correct):
        raise ValueError("scores and correct differ in length")
    if not scores:
        return 0.0
    totals = [[0, 0.0, 0.0] for _ in range(bins)]  # count, score sum, correct sum
    for s, c in zip(scores, correct):
        b = min(bins - 1, max(0, int(s * bins)))
        totals[b][0] += 1
        totals[b][1] += s
        totals[b][2] += float(c)
    return sum(n / len(scores) * abs(c / n - s / n) for n, s, c in totals if n)


def null_share(spans: Sequence[tuple[int, int] | None]) -> float:
    """The share of null spans ('no counterpart'); 0 for none at all."""
    return sum(s is None for s in spans) / len(spans) if spans else 0.0


def prediction_metrics(
    gold: Sequence[tuple[int, int] | None], scored: Sequence[tuple[tuple[int, int] | None, float]], bins: int = 10
) -> dict[str, float]:
    """``span_metrics`` plus the ECE of the score against exact correctness (over non-null
    predictions) and the shares of null predictions and of null gold spans."""
    preds = [p for p, _ in scored]
    m: dict[str, float] = span_metrics(gold, preds)
    answered = [(s, g is not None and tuple(g) == tuple(p)) for g, (p, s) in zip(gold, scored) if p is not None]
    m["ece"] = expected_calibration_error([s for s, _ in answered], [c for _, c in answered], bins)
    m["pred_null_share"] = null_share(preds)
    m["gold_null_share"] = null_share(gold)
    return m
