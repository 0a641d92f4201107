"""Platt scaling: a score's log-odds mapped through ``sigmoid(a * logit(s) + b)``, fitted by
logistic regression against whether the answer was right.

Temperature scaling fits the whole softmax to the gold option; the figure a user reads is the
chosen span's score against exact correctness (the ECE of ``core.metrics``), and with few
held-out instances two parameters fitted to exactly that are the smallest thing that moves it.
Pure Python (two parameters, Newton's method): the CPU stages never import torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_EPS = 1e-6


def logit(p: float) -> float:
    p = min(1.0 - _EPS, max(_EPS, p))
    return math.log(p / (1.0 - p))


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def platt(score: float, params: Sequence[float] | None) -> float:
    """``score`` recalibrated by ``params`` = (a, b); unchanged when ``params`` is None."""
    if params is None:
        return score
    a, b = params
    return sigmoid(a * logit(score) + b)


def fit_platt(
    scores: Sequence[float],
    correct: Sequence[bool],
    l2: float = 1e-2,
    iterations: int = 50,
) -> tuple[float, float] | None:
    """(a, b) minimising the log loss of ``sigmoid(a * logit(score) + b)`` against ``correct``.

    ``l2`` pulls (a, b) towards the identity (1, 0), so a held-out set where every answer is
    right (or wrong) gives finite parameters. None when there is nothing to fit on.
    """
    if len(scores) != len(correct):
        raise ValueError("scores and correct differ in length")
    if not scores:
        return None
    xs = [logit(s) for s in scores]
    ys = [1.0 if c else 0.0 for c in correct]

    def loss(a: float, b: float) -> float:
        total = 0.0
        for x, y in zip(xs, ys):
            z = a * x + b
            total += max(z, 0.0) - z * y + math.log1p(math.exp(-abs(z)))  # log(1 + e^z) - z y, stably
        return total / len(xs) + l2 / 2 * ((a - 1.0) ** 2 + b * b)

    a, b = 1.0, 0.0
    current = loss(a, b)
    for _ in range(iterations):
        # gradient and Hessian of the mean log loss + l2/2 * ((a - 1)^2 + b^2)
        ga, gb = l2 * (a - 1.0), l2 * b
        haa, hab, hbb = l2, 0.0, l2
        for x, y in zip(xs, ys):
            p = sigmoid(a * x + b)
            r, w = (p - y) / len(xs), p * (1.0 - p) / len(xs)
            ga += r * x
            gb += r
            haa += w * x * x
            hab += w * x
            hbb += w
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        step = 1.0  # backtracking: a near-singular Hessian (scores all alike) overshoots
        trial = loss(a - da, b - db)
        while step > 1e-6 and trial > current:
            step /= 2
            trial = loss(a - step * da, b - step * db)
        if step <= 1e-6:
            break
        a, b = a - step * da, b - step * db
        previous, current = current, trial
        if previous - current < 1e-12:
            break
    return a, b
