"""FE retention measures (spanaug.evaluation.fe_retention) on align-mode outputs, counted by hand,
and the Arrow computation of each output's lowest FE score against the pure rule it mirrors."""

import random

import pyarrow as pa
import pytest
from conftest import fe, write_fe_chains

from spanaug.core import artifacts
from spanaug.core.validation import LOST
from spanaug.evaluation import fe_retention as r
from spanaug.pipeline import frame_elements as fer


@pytest.fixture
def outputs(tmp_path):
    write_fe_chains(tmp_path)
    return artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED)


def test_per_iteration_counts_and_retention_by_coreness(outputs):
    one, two = r.per_iteration(outputs)
    assert one == pytest.approx(
        {
            "iteration": 1,
            "outputs": 3,
            "outputs_with_fes": 2,  # s3 has none annotated
            "fes_to_carry": 6,
            "carried": 6,
            "lost": 0,
            "null_instantiated": 1,
            "retention": 1.0,
            "core_retention": 1.0,
            "non_core_retention": 1.0,
            "unknown_coreness_retention": 1.0,
            "outputs_keeping_every_fe": 2,
            "mean_fe_score": (0.9 + 0.8 + 0.7 + 0.6 + 1.0 + 0.5) / 6,
            "verbatim_fes": None,  # not asked for: no seeds given to find the outputs' sources
            "verbatim_agreement": None,
        }
    )
    assert two == pytest.approx(
        {
            "iteration": 2,
            "outputs": 2,
            "outputs_with_fes": 2,
            "fes_to_carry": 6,
            "carried": 3,
            "lost": 3,  # s1's Seller; s2's Agent and Activity (its trigger did not align)
            "null_instantiated": 1,
            "retention": 0.5,
            "core_retention": 2 / 3,
            "non_core_retention": 1.0,
            "unknown_coreness_retention": 0.0,
            "outputs_keeping_every_fe": 0,
            "mean_fe_score": (0.95 + 0.4 + 0.9) / 3,  # lost FEs are counted, not scored 0
            "verbatim_fes": None,
            "verbatim_agreement": None,
        }
    )


def test_by_name_lists_most_fes_first_with_each_iteration(outputs):
    rows = {row["name"]: row for row in r.by_name(outputs)}
    assert [row["name"] for row in r.by_name(outputs)][:2] == ["Activity", "Agent"]  # 2 each, then by name
    assert "Place" not in rows  # null-instantiated: nothing to carry
    assert rows["Seller"] == pytest.approx(
        {
            "name": "Seller",
            "coreness": "core",
            "fes_to_carry": 2,
            "carried": 1,
            "lost": 1,
            "retention": 0.5,
            "retention_iter1": 1.0,
            "retention_iter2": 0.0,
            "mean_score": 0.7,
        }
    )
    assert rows["Agent"]["coreness"] == "unknown" and rows["Time"]["coreness"] == "non-core"


def test_score_histogram_bins_carried_scores_per_iteration(outputs):
    hist = r.score_histogram(outputs, bins=4)
    assert [h["fes"] for h in hist if h["iteration"] == 1] == [0, 0, 3, 3]  # .5 .6 .7 | .8 .9 1.0 (closed)
    assert [h["fes"] for h in hist if h["iteration"] == 2] == [0, 1, 0, 2]  # .4 | .9 .95
    assert (hist[0]["low"], hist[-1]["high"]) == (0.0, 1.0)


def test_seed_counts_and_whether_outputs_carry_fes(outputs, tmp_path):
    seeds = artifacts.read_table(tmp_path / "seeds.parquet", artifacts.SENTENCES)
    assert r.seed_fe_counts(seeds) == {"seeds": 3, "seeds_with_fes": 2, "overt_fes": 6, "null_instantiated_fes": 1}
    assert r.carries_fes(outputs)
    off = outputs.set_column(
        outputs.schema.get_field_index("frame_elements"),
        "frame_elements",
        pa.array([None] * outputs.num_rows, artifacts.FRAME_ELEMENTS),
    )
    assert not r.carries_fes(off)
    assert r.per_iteration(off)[0]["retention"] is None and r.by_name(off) == []


def _random_fes(rng):
    fes = []
    for k in range(rng.randint(0, 4)):
        kind = rng.choice(["overt", "overt", LOST, "INI"])
        if kind == "overt":
            fes.append(fe(f"F{k}", k, k, score=rng.choice([None, rng.random()])))
        else:
            fes.append(fe(f"F{k}", null_type=kind))
    return rng.choice([fes, fes, None])


def test_lowest_scores_follow_the_pure_rule(tmp_path):
    """Arrow's per-output minimum equals frame_elements.lowest_score on every row (a lost FE 0, an
    unscored carried one 1.0, none to carry: null)."""
    rng = random.Random(7)
    lists = [_random_fes(rng) for _ in range(300)]
    table = artifacts.records_to_table(
        [{"iteration": 1, "frame_elements": fes} for fes in lists],
        pa.schema([artifacts.CHAIN.field("iteration"), artifacts.CHAIN.field("frame_elements")]),
    )
    got = r.lowest_fe_scores(table).to_pylist()
    expected = [fer.lowest_score(fes) for fes in lists]
    assert any(v is None for v in expected) and any(v == 0.0 for v in expected)
    assert got == pytest.approx(expected, abs=1e-6)
    counts = r.output_counts(table)
    assert list(counts["lost"]) == [sum(f["null_type"] == LOST for f in fes or ()) for fes in lists]
