"""Heuristic and neural filters, and the human-evaluation loop on generated judgments."""

import csv
import random

import pyarrow as pa
import pytest
from conftest import output, seed, write_augmented

from spanaug.cli.main import main
from spanaug.core import artifacts
from spanaug.core.errors import ConfigError, InputError
from spanaug.evaluation.filtering import DEFAULT_FILTERS, check_filters, heuristic_mask, read_judgments
from spanaug.evaluation.human_eval import export_task, fleiss_kappa, import_judgments
from spanaug.pipeline.iterations import assemble

FRAMES = [
    ("Commerce_buy", ["buy.v", "purchase.v"]),
    ("Giving", ["give.v", "hand.v"]),
    ("Activity_stop", ["quit.v", "stop.v"]),
]


@pytest.fixture
def run(tmp_path):
    """60 seeds over three frames, three iterations each, with scores spread over their ranges."""
    rng = random.Random(0)
    seeds, chain = [], []
    for n in range(60):
        frame, lus = FRAMES[n % 3]
        lu = lus[n % 2]
        seeds.append(seed(f"s{n}", f"w{n} {lu.split('.')[0]} it .".split(), 1, 1, frame, lu))
        for it in (1, 2, 3):
            row = output(f"s{n}", it, f"w{n} x{it} it .".split(), 1, 1, frame, lu, f"x{it}")
            row.update(paraphrase_score=rng.uniform(0.3, 1.2), aligner_score=rng.uniform(0.8, 1.0))
            chain.append(row)
    artifacts.write_table(seeds, tmp_path / "seeds.parquet", artifacts.SENTENCES)
    artifacts.write_table(chain, tmp_path / "chain.parquet", artifacts.CHAIN)
    assemble([tmp_path / "chain.parquet"], tmp_path / "augmented.parquet")
    return tmp_path


def test_heuristic_masks_follow_their_bounds(run):
    table = artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED)
    rows = table.to_pylist()
    for name, bounds in DEFAULT_FILTERS.items():
        mask = heuristic_mask(table, bounds).to_pylist()
        expected = [
            r["iteration"] <= bounds.get("max_iteration", 99)
            and r["paraphrase_score"] <= bounds.get("max_paraphrase_score", 99)
            and r["aligner_score"] >= bounds.get("min_aligner_score", -1)
            for r in rows
        ]
        assert mask == expected, name
    with pytest.raises(ConfigError, match="bounds"):
        check_filters({"bad": {"min_score": 1}})


def test_judgments_are_averaged_and_binarised(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text("output_id,score\na,80\na,30\nb,40\nb,45\nc,100\n")
    assert read_judgments(path) == {"a": 1, "b": 0, "c": 1}  # means 55, 42.5, 100
    path.write_text("output_id,score\na,1\na,0\nb,0\n")
    assert read_judgments(path) == {"a": 1, "b": 0}  # 0/1 scale: mean 0.5 passes
    path.write_text("output_id,score\na,1\nb,abc\n")
    with pytest.raises(InputError, match=r"j\.csv, line 3"):
        read_judgments(path)


def test_filter_stage_with_neural_classifiers(run):
    # Annotators accept exactly the outputs the aligner was sure of: the classifiers can learn it.
    table = artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED).to_pylist()
    with open(run / "judgments.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["output_id", "score"])
        for row in table:
            writer.writerow([row["output_id"], 90 if row["aligner_score"] > 0.9 else 10])
    out = run / "filtering"
    assert (
        main(
            [
                "filter",
                "--augmented",
                str(run / "augmented.parquet"),
                "--seeds",
                str(run / "seeds.parquet"),
                "--out-dir",
                str(out),
                "--judgments",
                str(run / "judgments.csv"),
                "--downweight",
                "0.2",
            ]
        )
        == 0
    )
    rows = {r["filter"]: r for r in csv.DictReader((out / "filters.csv").read_text().splitlines())}
    assert float(rows["iter == 1"]["multiple_over_seeds"]) == pytest.approx(1.0)
    assert float(rows["aligner score >= .95"]["precision"]) == 1.0
    scored = artifacts.read_table(out / "scored.parquet", artifacts.SCORED).to_pylist()
    sure = [r["p_classifier"] for r in scored if r["aligner_score"] > 0.95]
    unsure = [r["p_classifier"] for r in scored if r["aligner_score"] < 0.85]
    assert min(sure) > max(unsure)
    # Down-weighting positives makes the P-classifier stricter than the R-classifier.
    assert sum(r["p_classifier"] >= 0.5 for r in scored) < sum(r["r_classifier"] >= 0.5 for r in scored)
    assert (out / "subsets" / "strict.parquet").is_file()


def test_fleiss_kappa_by_hand():
    # Item 1: all three say 1 (P=1); item 2: two 0s and a 1 (P=1/3); P-bar 2/3, Pe = (2/3)^2 + (1/3)^2.
    assert fleiss_kappa([[1, 1, 1], [0, 0, 1]]) == pytest.approx(0.25)
    assert fleiss_kappa([[1, 1], [0, 0]]) == pytest.approx(1.0)


def test_human_loop_export_and_import(run):
    sentences = run / "seeds.parquet"
    counts = export_task(run / "augmented.parquet", sentences, run / "task.csv", run / "key.csv", n_items=12, seed=1)
    assert counts["items"] == 12
    key = list(csv.DictReader((run / "key.csv").read_text().splitlines()))
    task = {r["item_id"]: r for r in csv.DictReader((run / "task.csv").read_text().splitlines())}
    gold = {r["sentence_id"]: r for r in artifacts.read_table(sentences, artifacts.SENTENCES).to_pylist()}
    aug = {r["output_id"]: r for r in artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED).to_pylist()}
    for item_id, row in task.items():
        kinds = {k["kind"]: k["ref_id"] for k in key if k["item_id"] == item_id}
        assert set(kinds) == {"output", "gold_in_frame", "gold_out_of_frame"}
        out, gin, gout = aug[kinds["output"]], gold[kinds["gold_in_frame"]], gold[kinds["gold_out_of_frame"]]
        assert gin["frame"] == out["frame"] == row["frame"] and gin["lexical_unit"] != out["lexical_unit"]
        assert gout["frame"] != out["frame"]
        assert "<b>" in row["candidate_1"] and row["example_3"]
    # Synthetic crowd results: two workers; outputs 70/20 (accepted on average: 45 -> rejected),
    # in-frame controls 90/80, out-of-frame 10/0.
    score = {"output": (70, 20), "gold_in_frame": (90, 80), "gold_out_of_frame": (10, 0)}
    with open(run / "results.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker_id", "candidate_1_score", "candidate_2_score", "candidate_3_score"])
        for item_id in task:
            kinds = {int(k["candidate"]): k["kind"] for k in key if k["item_id"] == item_id}
            for w in (0, 1):
                writer.writerow([item_id, f"w{w}", *(score[kinds[n]][w] for n in (1, 2, 3))])
    summary = import_judgments(run / "results.csv", run / "key.csv", run / "imported")
    assert summary["output_acceptance"] == 0.0 and summary["gold_in_frame_acceptance"] == 1.0
    assert summary["gold_out_of_frame_acceptance"] == 0.0
    assert summary["all_agree_rate"] == pytest.approx(2 / 3)  # outputs split 1/0; controls agree
    judgments = read_judgments(run / "imported" / "judgments.csv")
    assert len(judgments) == 12 and set(judgments.values()) == {0}
    assert (run / "imported" / "score_histogram.png").is_file()


def test_export_without_any_aligned_output_says_why(tmp_path):
    # Every output failed to align (an aligner whose null threshold is above all its scores): the
    # error names the aligner's threshold, not the frames, as the reason there is nothing to judge.
    seeds = [seed(f"s{n}", f"w{n} buy it .".split(), 1, 1, frame, lus[0]) for n, (frame, lus) in enumerate(FRAMES)]
    chain = [
        output(f"s{n}", 1, f"w{n} got it .".split(), None, None, frame, lus[0], None)
        for n, (frame, lus) in enumerate(FRAMES)
    ]
    write_augmented(tmp_path, seeds, chain)
    with pytest.raises(
        InputError, match=r"augmented\.parquet: none of its 3 outputs has an aligned span.*null threshold"
    ):
        export_task(
            tmp_path / "augmented.parquet",
            tmp_path / "seeds.parquet",
            tmp_path / "t.csv",
            tmp_path / "k.csv",
            n_items=2,
            seed=0,
        )


def test_import_rejects_unknown_items(run, tmp_path):
    export_task(run / "augmented.parquet", run / "seeds.parquet", run / "task.csv", run / "key.csv", n_items=2, seed=0)
    (tmp_path / "r.csv").write_text("item_id,worker_id,candidate_1_score\nnope,w,50\n")
    with pytest.raises(InputError, match=r"r\.csv, line 2: item 'nope'"):
        import_judgments(tmp_path / "r.csv", run / "key.csv", tmp_path / "o")


def test_min_fe_score_bounds_the_lowest_carried_fe(tmp_path):
    """An output passes when every FE it carries scored at least the bound (a lost FE scores 0); one
    with no FE to carry (s3: none annotated) passes. With no output carrying FEs, the filter stage
    says that the bound passes everything."""
    import json

    from conftest import write_fe_chains

    from spanaug.evaluation.filtering import filter_stage

    write_fe_chains(tmp_path)
    table = artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED)
    ids = table.column("output_id").to_pylist()

    def passing(bounds):
        return [i for i, ok in zip(ids, heuristic_mask(table, bounds).to_pylist()) if ok]

    # Lowest scores: s1#1 0.6, s1#2 0 (Seller lost), s2#1 0.5, s2#2 unaligned (fails any filter), s3#1 none.
    assert passing({"min_fe_score": 0.55}) == ["s1#1", "s3#1"]
    assert passing({"min_fe_score": 0.5}) == ["s1#1", "s2#1", "s3#1"]
    assert passing({"min_fe_score": 0.0}) == ["s1#1", "s1#2", "s2#1", "s3#1"]
    assert passing({"min_fe_score": 0.5, "max_iteration": 1}) == ["s1#1", "s2#1", "s3#1"]
    assert check_filters({"fe": {"min_fe_score": 0.5, "max_iteration": None}}) == {"fe": {"min_fe_score": 0.5}}
    with pytest.raises(ConfigError, match="min_fe_score"):
        check_filters({"fe": {"min_fe_score": "high"}})
    filters = {"FEs 0.5": {"min_fe_score": 0.5}}
    rows = filter_stage(tmp_path / "augmented.parquet", tmp_path / "seeds.parquet", tmp_path / "f", filters)
    assert [r["outputs"] for r in rows] == [4, 3]
    subset = artifacts.read_table(tmp_path / "f/subsets/FEs_0_5.parquet", artifacts.AUGMENTED)
    assert subset.column("output_id").to_pylist() == ["s1#1", "s2#1", "s3#1"]
    assert json.loads((tmp_path / "f/filters.json").read_text())["warnings"] == []
    # FEs off: no output carries any, and the bound is said to pass every output.
    off = table.set_column(
        table.schema.get_field_index("frame_elements"),
        "frame_elements",
        pa.array([None] * table.num_rows, artifacts.FRAME_ELEMENTS),
    )
    artifacts.write_table(off, tmp_path / "off.parquet", artifacts.AUGMENTED)
    filter_stage(tmp_path / "off.parquet", tmp_path / "seeds.parquet", tmp_path / "g", filters)
    (warning,) = json.loads((tmp_path / "g/filters.json").read_text())["warnings"]
    assert "no output carries frame elements" in warning["message"] and "FEs 0.5" in warning["message"]


def test_min_fe_score_from_a_config_reaches_the_filter_command(tmp_path):
    """filtering.filters in a config (schema-checked, 0-1) passed as the workflow passes it."""
    import dataclasses
    import json

    from conftest import write_fe_chains

    from spanaug.core.config import load_run_config

    write_fe_chains(tmp_path)
    data = {"inputs": ["corpus"]}
    with pytest.raises(ConfigError, match="min_fe_score"):
        load_run_config({"data": data, "filtering": {"filters": {"fe": {"min_fe_score": 1.5}}}})
    section = dataclasses.asdict(
        load_run_config({"data": data, "filtering": {"filters": {"fe": {"min_fe_score": 0.55}}}})
    )
    filters = json.dumps(section["filtering"]["filters"])
    args = ["filter", "--augmented", str(tmp_path / "augmented.parquet"), "--seeds", str(tmp_path / "seeds.parquet")]
    assert main([*args, "--out-dir", str(tmp_path / "f"), "--filters", filters]) == 0
    table = json.loads((tmp_path / "f/filters.json").read_text())["table"]
    assert [(r["filter"], r["outputs"]) for r in table] == [("none (all aligned)", 4), ("fe", 2)]


def test_the_filters_table_is_made_of_pure_rows(run):
    """heuristic_rows and classifier_split read their inputs and return rows; nothing is written."""
    from spanaug.core.evaluation_settings import ClassifierSettings
    from spanaug.evaluation.filtering import classifier_row, classifier_split, heuristic_rows

    table = artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED)
    masks = {name: heuristic_mask(table, bounds) for name, bounds in DEFAULT_FILTERS.items()}
    judged, gold = [0, 1, 2, 3], [1, 0, 1, 0]
    rows = heuristic_rows(table, masks, 60, judged, gold)
    assert [r["filter"] for r in rows] == ["none (all aligned)", *DEFAULT_FILTERS]
    assert rows[0]["outputs"] == table.num_rows and rows[0]["multiple_over_seeds"] == 3.0
    assert rows[0]["precision"] == 0.5 and rows[0]["recall"] == 1.0  # every judged output passes
    assert not (run / "subsets").exists()
    train, test = classifier_split(4, ClassifierSettings(test_share=0.01, seed=3))
    assert len(test) == 1 and sorted(train + test) == judged  # at least one held out, each output once
    assert classifier_split(4, ClassifierSettings(test_share=0.01, seed=3)) == (train, test)
    scores = [0.9 if i == judged[test[0]] else 0.1 for i in range(table.num_rows)]
    row = classifier_row("p_classifier", scores, 60, judged, gold, test)
    assert row["filter"] == "p_classifier >= 0.5 (held-out judged)" and row["outputs"] == 1 and row["judged"] == 1
