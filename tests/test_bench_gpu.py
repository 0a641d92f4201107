"""scripts/bench_gpu.py's measuring: output lengths while the stage is timed, and the chain job's CPU stages."""

import importlib.util
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
spec = importlib.util.spec_from_file_location("bench_gpu", REPO / "scripts" / "bench_gpu.py")
bench_gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_gpu)


def test_each_output_is_as_long_as_its_source_while_the_stage_is_timed():
    """Random weights never end a beam: each sentence's limit is its source's length (at most the cap)."""
    real = bench_gpu.search_spec.length_limit
    with bench_gpu.outputs_as_long_as_sources(None):
        assert bench_gpu.search_spec.length_limit(30) == 30
        assert bench_gpu.search_spec.length_limit(30, 64) == 30  # not the stage's max_new_tokens
    with bench_gpu.outputs_as_long_as_sources(25):
        assert bench_gpu.search_spec.length_limit(30) == 25
        assert bench_gpu.search_spec.length_limit(12) == 12
    assert bench_gpu.search_spec.length_limit is real
    assert real(30) == 55  # the stage's own rule: 1.5 x 30 + 10


def test_the_cpu_stages_of_a_chain_job_are_timed_per_request():
    """What a chain job runs on its host while its GPU waits: constraint expansion and selection,
    through the stages' own functions, on FrameNet rows (seed ids made unique when they repeat)."""
    from conftest import seed

    rows = [seed(f"s{n}", "Abby bought a car from Robin".split(), 1, 1, "Commerce_buy", "buy.v") for n in range(3)]
    for row in rows:
        row["frame_elements"] = None
    assert 0 < bench_gpu.cpu_stage_seconds_per_request(rows, n=10) < 1
