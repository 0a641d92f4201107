"""Intrinsic evaluation on a hand-made augmented dataset whose answers are known."""

import json

import pytest
from conftest import write_two_chains

from spanaug.core import artifacts
from spanaug.core.errors import InputError
from spanaug.core.tagging import LexiconTagger, load_tagger
from spanaug.evaluation.statistics import StatsSettings, intrinsic_stats, lexicon_recovery, pos_diversity, with_sources
from spanaug.pipeline.framenet import read_lexicon


@pytest.fixture
def run(tmp_path):
    write_two_chains(tmp_path)
    lexicon = {
        "Commerce_buy": ["buy.v", "purchase.v", "purchase.n"],
        "Activity_stop": ["quit.v", "stop.v", "give up.v"],
    }
    (tmp_path / "lexicon.json").write_text(json.dumps(lexicon))
    return tmp_path


def test_output_ids_and_sources(run):
    aug = artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED)
    assert aug.column("output_id").to_pylist() == ["s1#1", "s1#2", "s2#1", "s2#2"]
    table = with_sources(aug, artifacts.read_table(run / "seeds.parquet", artifacts.SENTENCES))
    # Iteration 1 rewrites the seed's trigger; iteration 2 rewrites iteration 1's aligned span.
    assert table.column("source_tokens").to_pylist()[:2] == [
        ["Abby", "bought", "a", "car"],
        ["Abby", "purchased", "a", "car"],
    ]
    assert table.column("source_start").to_pylist() == [1, 1, 1, 1]
    assert table.column("source_end").to_pylist() == [1, 1, 1, 2]


def test_lexicon_recovery_counts(run):
    aug = artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED)
    seeds = artifacts.read_table(run / "seeds.parquet", artifacts.SENTENCES)
    scores = lexicon_recovery(aug, seeds, read_lexicon(run / "lexicon.json"))
    # Generated: purchase.v (TP), acquire.v (FP), give up.v (TP); held out: purchase.v, purchase.n,
    # stop.v, give up.v, so purchase.n and stop.v are false negatives. Seed LUs count nowhere.
    assert (scores["tp"], scores["fp"], scores["fn"]) == (2, 1, 2)
    assert scores["precision"] == pytest.approx(2 / 3) and scores["recall"] == pytest.approx(1 / 2)


def test_stats_report_every_measure(run):
    cfg = StatsSettings(lexicon=str(run / "lexicon.json"), pos_tagger="lexicon")
    stats, rows, dists = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", cfg)
    assert stats["outputs"] == 4 and stats["aligned_outputs"] == 3
    assert stats["failed_to_align_share"] == pytest.approx(0.25)
    assert stats["unique_frame_lemma_pairs"] == 3 and stats["multiple_over_seeds"] == pytest.approx(1.5)
    assert [r["outputs"] for r in rows] == [2, 2]
    assert dists["span_length"] == {1: 2, 2: 1} and dists["position_difference"] == {0: 2, 1: 1}
    assert 0 < stats["bleu_to_source"] < 100 and stats["lexicon_recovery"]["tp"] == 2
    # bought -> purchased (VERB, VERB), purchased -> acquired (same), quit -> gave up (VERB vs VERB ADP)
    assert stats["pos_diversity"]["not_ext"] == pytest.approx(1 / 3)


def test_missing_spacy_skips_pos_metrics_with_reason(run, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "spacy", None)  # import spacy -> ImportError
    tagger, why = load_tagger("spacy:en_core_web_sm")
    assert tagger is None and "spaCy is not installed" in why
    stats, _, _ = intrinsic_stats(
        run / "augmented.parquet", run / "seeds.parquet", StatsSettings(pos_tagger="spacy:en_core_web_sm")
    )
    assert stats["pos_diversity"]["skipped"] == ["not_ext", "jaccard_distance", "weighted_jaccard_distance"]


def test_pos_distances_by_hand():
    class Fixed:
        name = "fixed"

        def tag(self, tokens):
            return [t.split("/")[1] for t in tokens]

    import pyarrow as pa

    table = pa.table(
        {
            "paraphrase_tokens": [["a/DET", "b/NOUN", "c/NOUN"]],
            "aligned_start": [1],
            "aligned_end": [2],
            "source_tokens": [["x/VERB", "y/NOUN"]],
            "source_start": [0],
            "source_end": [1],
        }
    )
    m = pos_diversity(table, Fixed(), StatsSettings().pos_sample)
    assert m["not_ext"] == 1.0
    assert m["jaccard_distance"] == pytest.approx(1 - 1 / 2)  # {NOUN} vs {VERB, NOUN}
    assert m["weighted_jaccard_distance"] == pytest.approx(1 - 1 / 3)  # min counts 1, max counts 1 + 2


def test_lexicon_tagger_basics():
    assert LexiconTagger().tag(["They", "want", "to", "run", "the", "plant", "."]) == [
        "PRON",
        "VERB",
        "ADP",
        "VERB",
        "DET",
        "NOUN",
        "PUNCT",
    ]


def test_bad_lexicon_names_file(tmp_path):
    path = tmp_path / "lex.json"
    path.write_text('{"Frame": "not a list"}')
    with pytest.raises(InputError, match=r"lex\.json"):
        read_lexicon(path)


def test_stats_count_frame_elements_per_iteration(tmp_path):
    """stats.json's frame_elements: the seeds' annotations and, per iteration, the FEs carried, lost
    and null-instantiated, the outputs keeping every FE and the carried FEs' mean score."""
    from conftest import write_fe_chains

    from spanaug.evaluation.statistics import write_stats

    write_fe_chains(tmp_path)
    write_stats(
        tmp_path / "augmented.parquet",
        tmp_path / "seeds.parquet",
        tmp_path / "stats.json",
        tmp_path / "per_iteration.csv",
        cfg=StatsSettings(pos_tagger="lexicon"),
    )
    fes = json.loads((tmp_path / "stats.json").read_text())["frame_elements"]
    assert {k: v for k, v in fes.items() if k != "per_iteration"} == {
        "seeds_with_fes": 2,
        "seed_overt_fes": 6,
        "seed_null_instantiated_fes": 1,
        "outputs_carry_fes": True,
    }
    counts = [
        (r["iteration"], r["carried"], r["lost"], r["null_instantiated"], r["outputs_keeping_every_fe"])
        for r in fes["per_iteration"]
    ]
    assert counts == [(1, 6, 0, 1, 2), (2, 3, 3, 1, 0)]
    assert [r["mean_fe_score"] for r in fes["per_iteration"]] == pytest.approx([0.75, 0.75])
    assert [r["retention"] for r in fes["per_iteration"]] == [1.0, 0.5]


def test_per_iteration_seed_share_and_lexicon_up_to_each_iteration(run):
    cfg = StatsSettings(lexicon=str(run / "lexicon.json"))
    _, rows, _ = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", cfg)
    # Iteration 1: both seeds aligned; iteration 2: s2's output failed to align.
    assert [r["seeds_with_aligned_share"] for r in rows] == [1.0, 0.5]
    # Up to iteration 1: purchase.v and give up.v (both held out): precision 1, recall 2/4.
    # Up to iteration 2: + acquire.v (not in the lexicon): precision 2/3, recall still 2/4.
    assert [r["lu_precision"] for r in rows] == pytest.approx([1.0, 2 / 3])
    assert [r["lu_recall"] for r in rows] == pytest.approx([0.5, 0.5])


def test_per_iteration_csv_columns_follow_the_settings(run):
    from spanaug.core.files import read_csv
    from spanaug.evaluation.statistics import LEXICON_FIELDS, PER_ITERATION_FIELDS, write_stats

    write_stats(run / "augmented.parquet", run / "seeds.parquet", run / "a.json", run / "a.csv")
    assert [list(row) for _, row in read_csv(run / "a.csv")] == [PER_ITERATION_FIELDS] * 2
    cfg = StatsSettings(lexicon=str(run / "lexicon.json"))
    write_stats(run / "augmented.parquet", run / "seeds.parquet", run / "b.json", run / "b.csv", cfg=cfg)
    assert [list(row) for _, row in read_csv(run / "b.csv")] == [PER_ITERATION_FIELDS + LEXICON_FIELDS] * 2


def test_per_iteration_plot_gains_the_shares_panel_when_measured(run):
    from PIL import Image

    from spanaug.evaluation.statistics import plot_per_iteration

    _, rows, _ = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", StatsSettings())
    bare = [{k: v for k, v in r.items() if k != "seeds_with_aligned_share"} for r in rows]
    plot_per_iteration(bare, run / "a.png")
    plot_per_iteration(rows, run / "b.png")
    two, three = Image.open(run / "a.png").size[0], Image.open(run / "b.png").size[0]
    assert three == pytest.approx(two * 13.5 / 9, rel=0.05)
