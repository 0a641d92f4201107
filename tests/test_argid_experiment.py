"""The argument-identification experiment: a point samples whole sentences, adds an augmenter's examples
of them with the FEs they carry (those that lost one left out, or trained on the rest), trains and
scores; curves average the points (Frame ID's curve code)."""

import csv
import json

import pytest
from conftest import output, seed, write_augmented
from test_argid import fe_toy

from spanaug.cli.main import main
from spanaug.core import artifacts
from spanaug.downstream.argid.experiment import by_sentence, example_annotations, sample_annotations
from spanaug.downstream.augmenters import paraphrastic_examples

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def fe_item(name, span):
    start, end = span if span else (None, None)
    null = None if span else "LOST"
    return {"name": name, "start": start, "end": end, "null_type": null, "coreness": "Core", "score": 0.9}


def seeds_and_outputs(annotations):
    """Each annotation as a seed (SENTENCES with its FEs) and one output: the trigger word doubled
    (the FEs after it shift by one); every fourth output lost its second FE."""
    seeds, chain = [], []
    for k, a in enumerate(annotations):
        (t, _), sid = a.trigger, f"s{k}"
        row = seed(sid, a.tokens, t, t, a.frame, a.lexical_unit)
        row["frame_elements"] = [fe_item(role, span) for span, role in a.fes]
        seeds.append(row)
        tokens = [*a.tokens[: t + 1], a.tokens[t], *a.tokens[t + 1 :]]
        out = output(sid, 1, tokens, t, t + 1, a.frame, a.lexical_unit, "x")
        (left, l_role), (right, r_role) = a.fes
        out["frame_elements"] = [
            fe_item(l_role, left),
            fe_item(r_role, None if k % 4 == 3 else (right[0] + 1, right[1] + 1)),
        ]
        chain.append(out)
    return seeds, chain


def test_a_sample_holds_whole_sentences_drawn_independently_of_input_order():
    pool = fe_toy(30, 1)
    pool += list(pool[:5])  # a second trigger annotation of five sentences
    sample = sample_annotations(pool, 0.4, seed=3)
    groups = by_sentence(pool)
    keys = set(by_sentence(sample))
    assert len(keys) == round(0.4 * len(groups))
    assert sum(len(groups[k]) for k in keys) == len(sample)  # every annotation of a drawn sentence
    assert keys == set(by_sentence(sample_annotations(pool[::-1], 0.4, seed=3)))
    assert keys != set(by_sentence(sample_annotations(pool, 0.4, seed=4)))
    assert len(sample_annotations(pool, 1.0, seed=0)) == len(pool)


def examples_of(tmp_path, seeds, chain):
    """The paraphrastic augmenter's examples (EXAMPLES rows) of the seeds' outputs, written to disk."""
    write_augmented(tmp_path, seeds, chain)
    rows = paraphrastic_examples(
        artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED),
        artifacts.read_table(tmp_path / "seeds.parquet", artifacts.SENTENCES),
    )
    artifacts.write_table(rows, tmp_path / "examples.parquet", artifacts.EXAMPLES)
    return rows


def test_examples_are_the_sampled_sentences_with_their_fes_and_lost_ones_drop_or_keep(tmp_path):
    pool = fe_toy(8, 2)
    rows = examples_of(tmp_path, *seeds_and_outputs(pool))
    keys = set(by_sentence(pool[:4]))
    kept, skipped = example_annotations(rows, keys)
    assert skipped == 1  # s3 lost its second FE
    assert [a.tokens for a in kept] == [r["tokens"] for r in rows[:3]]
    assert kept[0].fes[1][0] == (pool[0].fes[1][0][0] + 1, pool[0].fes[1][0][1] + 1)
    every, skipped = example_annotations(rows, keys, "keep_example")
    assert skipped == 0 and len(every) == 4
    assert every[3].fes == [pool[3].fes[0]]  # trained on the FE it kept; the lost one is no span


def test_cli_points_and_curves(tiny_encoder, tmp_path):
    pool = fe_toy(40, 3)
    seeds, chain = seeds_and_outputs(pool)
    examples_of(tmp_path, seeds, chain)
    artifacts.write_table(seeds, tmp_path / "pool.parquet", artifacts.SENTENCES)
    artifacts.write_table(seeds_and_outputs(fe_toy(10, 4))[0], tmp_path / "test.parquet", artifacts.SENTENCES)
    common = ["--train", str(tmp_path / "pool.parquet"), "--test", str(tmp_path / "test.parquet")]
    common += ["--encoder", tiny_encoder, "--epochs", "2", "--no-finetune", "--device", "cpu"]
    points = []
    for augmenter in ("none", "paraphrastic"):
        for fraction in (0.5, 1.0):
            out = tmp_path / f"{augmenter}.{fraction}.json"
            extra = ["--examples", str(tmp_path / "examples.parquet")]
            args = ["argid", "point", *common, "--fraction", str(fraction), "--seed", "1", "--out", str(out)]
            assert main([*args, "--augmenter", augmenter, *(extra if augmenter != "none" else [])]) == 0
            points.append(out)
    none, para = (json.loads(p.read_text()) for p in (points[1], points[3]))
    assert none["train_sentences"] == para["train_sentences"] == 40
    assert none["augmented_examples"] == 0
    assert para["augmented_examples"] == 30 and para["augmented_left_out"] == 10
    assert 0 <= para["f1"] <= 1 and {"precision", "recall", "by_fe_type"} <= para.keys()
    half = json.loads(points[0].read_text())
    assert half["train_sentences"] == 20 and half["dev"] == "held out"
    table, plot = tmp_path / "curves.csv", tmp_path / "curves.png"
    args = ["argid", "curves", "--points", *map(str, points), "--out-table", str(table), "--out-plot", str(plot)]
    assert main(args) == 0
    rows = list(csv.DictReader(table.open()))
    assert [(r["augmenter"], float(r["fraction"])) for r in rows] == [
        ("none", 0.5),
        ("none", 1.0),
        ("paraphrastic", 0.5),
        ("paraphrastic", 1.0),
    ]
    assert plot.stat().st_size > 0
    # Each row counts its point's predictions (one seed each), so the report can tell a silent model.
    for row, point in zip(rows, (json.loads(p.read_text()) for p in points)):
        assert float(row["n_pred"]) == point["n_pred"]
        assert int(row["seeds_predicting_nothing"]) == (point["n_pred"] == 0)


def test_paraphrastic_point_without_its_files_is_refused(tmp_path, capsys):
    pool = fe_toy(6, 5)
    seeds, _ = seeds_and_outputs(pool)
    artifacts.write_table(seeds, tmp_path / "pool.parquet", artifacts.SENTENCES)
    path = str(tmp_path / "pool.parquet")
    args = ["argid", "point", "--train", path, "--test", path, "--out", str(tmp_path / "p.json")]
    assert main([*args, "--fraction", "1", "--augmenter", "paraphrastic", "--device", "cpu"]) == 2
    assert "needs its examples file" in capsys.readouterr().err


def test_an_empty_dev_part_leaves_early_stopping_to_the_held_out_share(tiny_encoder, tmp_path):
    seeds, _ = seeds_and_outputs(fe_toy(20, 6))
    artifacts.write_table(seeds, tmp_path / "pool.parquet", artifacts.SENTENCES)
    artifacts.write_table([], tmp_path / "dev.parquet", artifacts.SENTENCES)  # frameid split with dev_share 0
    path, out = str(tmp_path / "pool.parquet"), tmp_path / "p.json"
    args = ["argid", "point", "--train", path, "--test", path, "--dev", str(tmp_path / "dev.parquet")]
    args += ["--encoder", tiny_encoder, "--epochs", "1", "--no-finetune", "--device", "cpu"]
    assert main([*args, "--fraction", "1", "--holdout-share", "0.2", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["dev"] == "held out"
