"""scripts/bench_gpu.py's projection counts the encoder inputs the align stage spends per request."""

import importlib.util
import sys

import pytest
from conftest import REPO

from spanaug.core.config import FrameElementSettings

sys.path.insert(0, str(REPO / "scripts"))
spec = importlib.util.spec_from_file_location("bench_gpu", REPO / "scripts" / "bench_gpu.py")
bench_gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_gpu)


@pytest.mark.parametrize(
    ("kind", "settings", "inputs"),
    [
        ("paper", {"mode": "align"}, 3.0),  # a pair's encoding serves its trigger and FEs
        ("cross", {"mode": "off"}, 3.0),  # the triggers alone
        ("cross", {"mode": "keep"}, 3.0),  # FEs found by their words, not aligned
        ("cross", {"mode": "align"}, 3.0 + 1.5),  # the chosen beam's FEs alone (align_rows)
        ("cross", {"mode": "align", "select": "joint"}, 3.0 + 3 * 1.5),  # every beam's
        ("cross", {"mode": "align", "require": "core"}, 3.0 + 3 * 1.5),
    ],
)
def test_inputs_per_request_are_what_the_align_stage_encodes(kind, settings, inputs):
    fe = FrameElementSettings(**settings)
    assert bench_gpu.encoder_inputs_per_request(kind, 1.5, fe, 3) == inputs


def test_the_cpu_stages_of_a_chain_job_are_timed_per_request():
    """What a chain job runs on its host while its GPU waits: constraint expansion and selection,
    through the stages' own functions, on FrameNet rows (seed ids made unique when they repeat)."""
    from conftest import seed

    rows = [seed(f"s{n}", "Abby bought a car from Robin".split(), 1, 1, "Commerce_buy", "buy.v") for n in range(3)]
    for row in rows:
        row["frame_elements"] = None
    assert 0 < bench_gpu.cpu_stage_seconds_per_request(rows, n=10) < 1
