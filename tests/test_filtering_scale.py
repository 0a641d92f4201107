"""The named filters follow the aligner's score scale, which the pipeline's files record; a filter
that keeps almost nothing says so, in the filter stage and in the augmenters' counts."""

import json
import random
import types

import pytest
from conftest import output, seed

from spanaug.cli.main import main
from spanaug.core import artifacts, score_scale
from spanaug.core.errors import ArtifactError, ConfigError
from spanaug.core.score_scale import CALIBRATED, RAW, Scorers
from spanaug.evaluation.filtering import DEFAULT_FILTERS, default_filters, filter_stage, named_filter
from spanaug.pipeline.aligner.stage import aligner_scorers
from spanaug.pipeline.iterations import assemble, gather, select_stage

CROSS = Scorers("cross", CALIBRATED, "hf decoder-only")
PAPER = Scorers("paper", RAW, "hf seq2seq")


def write_run(tmp_path, scorers, scores=None, n=60):
    """``n`` seeds with three outputs each, the aligner's scores drawn like a calibrated aligner's
    (0.7 to 0.94, never .95 or more) unless ``scores`` gives them; assembled from a chain
    file that records ``scorers`` (None: no record)."""
    rng = random.Random(0)
    seeds, chain = [], []
    for i in range(n):
        seeds.append(seed(f"s{i}", f"w{i} buy it .".split(), 1, 1, "Commerce_buy", "buy.v"))
        for it in (1, 2, 3):
            row = output(f"s{i}", it, f"w{i} x{it} it .".split(), 1, 1, "Commerce_buy", "buy.v", f"x{it}")
            row.update(paraphrase_score=rng.uniform(0.2, 0.7), aligner_score=scores or rng.uniform(0.7, 0.94))
            chain.append(row)
    artifacts.write_table(seeds, tmp_path / "seeds.parquet", artifacts.SENTENCES)
    record = scorers.as_dict() if scorers else None
    artifacts.write_table(chain, tmp_path / "chain.parquet", artifacts.CHAIN, scorers=record)
    assemble([tmp_path / "chain.parquet"], tmp_path / "augmented.parquet")
    return tmp_path


def filter_rows(tmp_path, filters=None):
    filter_stage(tmp_path / "augmented.parquet", tmp_path / "seeds.parquet", tmp_path / "filtering", filters)
    summary = json.loads((tmp_path / "filtering" / "filters.json").read_text())
    return {r["filter"]: r for r in summary["table"]}, summary


# ---------------------------------------------------------------- the record


def test_the_align_stage_records_the_aligners_kind_and_scale(tmp_path):
    para = tmp_path / "para.parquet"
    artifacts.write_table([], para, artifacts.PARAPHRASES)  # no engine record: the paraphraser is unknown
    calibrated = types.SimpleNamespace(kind="cross", config=types.SimpleNamespace(calibration=[0.7, 1.3]))
    plain = types.SimpleNamespace(kind="cross", config=types.SimpleNamespace(calibration=None))
    paper = types.SimpleNamespace(kind="paper", config=types.SimpleNamespace(threshold=0.5))
    assert aligner_scorers(calibrated, para).aligner_scale == CALIBRATED
    assert aligner_scorers(plain, para).aligner_scale == RAW
    assert aligner_scorers(paper, para) == Scorers("paper", RAW, None)


def test_selection_gathering_and_assembly_carry_the_record(tmp_path):
    beam = {
        **output("s1", 1, ["They", "got", "it"], 1, 1, "F", "buy.v", None),
        "source_tokens": ["They", "bought", "it"],
        "source_text": "They bought it",
        "source_span_start": 1,
        "source_span_end": 1,
    }
    artifacts.write_table([beam], tmp_path / "aligned.parquet", artifacts.ALIGNED, scorers=CROSS.as_dict())
    select_stage(tmp_path / "aligned.parquet", tmp_path / "shard.parquet")
    assert score_scale.read(tmp_path / "shard.parquet") == CROSS
    gather([tmp_path / "shard.parquet"], tmp_path / "iter1.parquet", artifacts.CHAIN)
    assert score_scale.read(tmp_path / "iter1.parquet") == CROSS
    # The seeds' chain (iteration 0) records no scorers and holds no scores: it does not count.
    artifacts.write_table(
        [output("s1", 0, ["a"], 0, 0, "F", "buy.v", "a")], tmp_path / "iter0.parquet", artifacts.CHAIN
    )
    assemble([tmp_path / "iter0.parquet", tmp_path / "iter1.parquet"], tmp_path / "augmented.parquet")
    assert score_scale.read(tmp_path / "augmented.parquet") == CROSS
    # Outputs scored by two aligners: no one scale describes them.
    artifacts.write_table(
        [output("s1", 2, ["a"], 0, 0, "F", "buy.v", "a")],
        tmp_path / "iter2.parquet",
        artifacts.CHAIN,
        scorers=PAPER.as_dict(),
    )
    paths = [tmp_path / "iter0.parquet", tmp_path / "iter1.parquet", tmp_path / "iter2.parquet"]
    assemble(paths, tmp_path / "mixed.parquet")
    assert score_scale.read(tmp_path / "mixed.parquet") is None


def test_a_damaged_record_is_an_artifact_error(tmp_path):
    bad = {"aligner_kind": "cross", "aligner_scale": "probability"}
    artifacts.write_table([], tmp_path / "c.parquet", artifacts.CHAIN, scorers=bad)
    with pytest.raises(ArtifactError, match="aligner_scale 'probability'"):
        score_scale.read(tmp_path / "c.parquet")


# ---------------------------------------------------------------- the named filters on each scale


def test_on_a_calibrated_aligners_table_lax_and_strict_keep_a_sensible_share(tmp_path):
    rows, summary = filter_rows(write_run(tmp_path, CROSS))
    aligned = rows["none (all aligned)"]["outputs"]
    assert summary["scorers"] == CROSS.as_dict()
    assert summary["filters"]["lax"]["min_aligner_score"] < 0.95
    # Every aligner score is at least 0.7 and every paraphrase score at most 0.7: lax keeps them all,
    # strict the first iteration's that its probability bound keeps.
    assert rows["lax"]["outputs"] == aligned
    assert 0.1 * aligned < rows["strict"]["outputs"] < aligned / 3
    assert not [w for w in summary["warnings"] if "'lax'" in w["message"] or "'strict'" in w["message"]]
    subset = tmp_path / "filtering" / "subsets" / "lax.parquet"
    assert score_scale.read(subset) == CROSS  # a subset fed to an augmenter keeps its scale


@pytest.mark.parametrize("scorers", [PAPER, None], ids=["raw record", "no record"])
def test_on_a_raw_or_unrecorded_table_the_named_filters_are_the_papers(tmp_path, scorers):
    rows, summary = filter_rows(write_run(tmp_path, scorers))
    assert summary["filters"] == DEFAULT_FILTERS
    assert summary["filters"]["lax"]["min_aligner_score"] == 0.95
    assert rows["lax"]["outputs"] == rows["strict"]["outputs"] == 0  # every score is under .95
    assert named_filter("strict", None, scorers) == DEFAULT_FILTERS["strict"]


def test_filters_a_config_writes_mean_what_they_say_on_any_scale(tmp_path):
    written = {"lax": {"min_aligner_score": 0.95}}
    assert named_filter("lax", written, CROSS) == {"min_aligner_score": 0.95}
    rows, _ = filter_rows(write_run(tmp_path, CROSS), written)
    assert rows["lax"]["outputs"] == 0
    with pytest.raises(ConfigError, match="not defined"):
        named_filter("strict", written, CROSS)


def test_the_calibrated_rows_name_their_own_bounds():
    names = set(default_filters(CROSS))
    assert {"aligner score >= .5", "aligner score >= .8", "lax", "strict"} <= names
    assert not names & {"aligner score >= .95", "aligner score >= .99"}


# ---------------------------------------------------------------- a filter that keeps almost nothing


def test_a_filter_keeping_under_a_tenth_of_the_outputs_is_reported(tmp_path):
    # Unrecorded scale, calibrated-looking scores: the paper's .95 keeps a few of them.
    scores = [0.96] * 5 + [0.8] * 175
    rng = iter(scores)
    run = write_run(tmp_path, None)
    table = artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED).to_pylist()
    for row in table:
        row["aligner_score"] = next(rng)
    artifacts.write_table(table, run / "augmented.parquet", artifacts.AUGMENTED)
    rows, summary = filter_rows(run)
    by_filter = {w["message"].split("'")[1]: w for w in summary["warnings"]}
    assert rows["aligner score >= .95"]["outputs"] == 5
    assert by_filter["aligner score >= .95"]["kind"] == "degraded"
    assert "5 of 180 aligned outputs (2.8%, under 10%)" in by_filter["aligner score >= .95"]["message"]
    assert "does not record its aligner's score scale" in by_filter["aligner score >= .95"]["message"]
    assert by_filter["strict"]["kind"] == "empty"
    # Filters keeping a third or more are not reported.
    assert not {"iter == 1", "iter <= 3", "paraphrase score <= 0.8"} & set(by_filter)


def augment(run, name, *extra):
    counts = run / f"{name}.json"
    args = ["--augmented", str(run / "augmented.parquet"), "--seeds", str(run / "seeds.parquet")]
    assert main(["augment", name, *args, "--out", str(run / f"{name}.out"), "--counts", str(counts), *extra]) == 0
    return json.loads(counts.read_text())


def test_an_augmenter_under_a_filter_that_keeps_almost_nothing_warns(tmp_path):
    run = write_run(tmp_path / "few", None)  # the paper's .95 on calibrated-looking scores
    for name in ("paraphrastic", "graph"):
        counts = augment(run, name, "--filter", "lax")
        assert (counts["filter"], counts["aligned_outputs"], counts["passed_filter"]) == ("lax", 180, 0)
        assert any(w["kind"] == "empty" and "filter 'lax'" in w["message"] for w in counts["warnings"])
    sparse = write_run(tmp_path / "sparse", CROSS, n=60)
    counts = augment(sparse, "paraphrastic", "--filter", "strict")
    assert counts["aligner_scale"] == CALIBRATED and counts["passed_filter"] == counts["examples"] > 0
    assert not counts["warnings"]  # strict keeps more than a tenth on the calibrated scale
    counts = augment(
        sparse, "paraphrastic", "--filter", "thin", "--filters", json.dumps({"thin": {"min_aligner_score": 0.93}})
    )
    assert 0 < counts["passed_filter"] < 18
    assert [w["kind"] for w in counts["warnings"]] == ["degraded"]
    assert f"passes {counts['passed_filter']} of 180 aligned outputs" in counts["warnings"][0]["message"]
