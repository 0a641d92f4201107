"""Platt scaling of aligner scores (core.calibration)."""

import random

import pytest

from spanaug.core.calibration import fit_platt, logit, platt, sigmoid
from spanaug.core.metrics import expected_calibration_error


def test_logit_and_sigmoid_invert_and_stay_finite():
    for p in (0.01, 0.3, 0.5, 0.97):
        assert sigmoid(logit(p)) == pytest.approx(p)
    assert sigmoid(logit(0.0)) == pytest.approx(0.0, abs=1e-5) and sigmoid(logit(1.0)) == pytest.approx(1.0, abs=1e-5)
    assert sigmoid(-800.0) == 0.0 and sigmoid(800.0) == 1.0


def test_fit_recovers_a_known_miscalibration():
    rng = random.Random(0)
    scores = [rng.uniform(0.02, 0.98) for _ in range(4000)]
    correct = [rng.random() < sigmoid(0.5 * logit(s) - 1.0) for s in scores]
    a, b = fit_platt(scores, correct, l2=0.0)
    assert a == pytest.approx(0.5, abs=0.1) and b == pytest.approx(-1.0, abs=0.15)
    assert expected_calibration_error([platt(s, (a, b)) for s in scores], correct) < 0.03
    assert expected_calibration_error(scores, correct) > 0.15


def test_degenerate_inputs():
    assert fit_platt([], []) is None
    a, b = fit_platt([0.9] * 5, [True] * 5)  # all right: finite, and pushes the score up
    assert platt(0.9, (a, b)) > 0.9 and abs(a) < 10 and abs(b) < 10
    assert platt(0.7, None) == 0.7
    with pytest.raises(ValueError):
        fit_platt([0.5], [])
