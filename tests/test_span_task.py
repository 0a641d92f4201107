"""The span-alignment annotation task (§4.1): export, answers in, agreement and aligner instances out."""

import csv
import json

import pytest
from conftest import output, seed, write_augmented

from spanaug.cli.main import main
from spanaug.evaluation.span_task import exact_agreement, export_span_task, import_span_answers, read_task, token_alpha
from spanaug.pipeline.aligner.instances import read_instances


@pytest.fixture
def task(tmp_path):
    seeds = [
        seed("s1", ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v"),
        seed("s2", ["They", "quit", "smoking"], 1, 1, "Activity_stop", "quit.v"),
    ]
    chain = [
        output("s1", 1, ["Abby", "purchased", "a", "car"], 1, 1, "Commerce_buy", "buy.v", "purchase"),
        output("s1", 2, ["Yesterday", "Abby", "acquired", "a", "car"], 2, 2, "Commerce_buy", "buy.v", "acquire"),
        output("s2", 1, ["They", "gave", "up", "smoking"], 1, 2, "Activity_stop", "quit.v", "give up"),
    ]
    write_augmented(tmp_path, seeds, chain)
    counts = export_span_task(
        tmp_path / "augmented.parquet",
        tmp_path / "seeds.parquet",
        tmp_path / "task.csv",
        tmp_path / "key.csv",
        n_items=10,
        seed=0,
    )
    assert counts == {"items": 3, "outputs": 3}
    return tmp_path


def _rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _answers(path, answers):
    """answers: (item, worker, span or None)."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "worker_id", "target_start", "target_end"])
        for item, worker, span in answers:
            writer.writerow([item, worker, *(span if span else ("", ""))])


def test_export_shows_the_rewritten_span_and_numbered_tokens(task):
    rows = {r["item_id"]: r for r in _rows(task / "task.csv")}
    key = {r["item_id"]: r for r in _rows(task / "key.csv")}
    by_output = {key[i]["output_id"]: rows[i] for i in rows}
    # Iteration 2 paraphrases iteration 1's output, whose aligned span was "purchased".
    assert by_output["s1#2"]["source"] == "Abby <b>purchased</b> a car"
    assert by_output["s1#1"]["source"] == "Abby <b>bought</b> a car"
    assert by_output["s2#1"]["paraphrase_tokens_indexed"] == "0:They 1:gave 2:up 3:smoking"
    assert "aligned_start" not in rows["span00000"]  # the system's answer stays in the key
    items = read_task(task / "task.csv")
    assert items["span00000"]["source_span"] == (1, 1)


def test_import_agreement_majority_and_instances(task):
    ids = {r["output_id"]: r["item_id"] for r in _rows(task / "key.csv")}
    a, b, c = ids["s1#1"], ids["s1#2"], ids["s2#1"]
    _answers(
        task / "answers.csv",
        [
            (a, "w1", (1, 1)),
            (a, "w2", (1, 1)),
            (a, "w3", (1, 1)),  # all agree with the aligner
            (b, "w1", (2, 2)),
            (b, "w2", (2, 2)),
            (b, "w3", None),  # majority (2, 2)
            (c, "w1", (1, 2)),
            (c, "w2", (1, 1)),  # no majority
        ],
    )
    summary = import_span_answers(
        task / "answers.csv", task / "task.csv", task / "key.csv", task / "spans.jsonl", task / "agreement.json"
    )
    assert summary["items_answered"] == 3 and summary["answers"] == 8 and summary["workers"] == 3
    # Pairs: a 3/3, b 1/3, c 0/1.
    assert summary["pairwise_exact_agreement"] == pytest.approx(4 / 7)
    assert summary["all_agree_rate"] == pytest.approx(1 / 3)
    assert summary["instances"] == 2 and summary["items_without_majority"] == 1
    instances = {i.id: i for i in read_instances(task / "spans.jsonl")}
    assert instances["span-task:s1#2"].target_span == (2, 2)
    assert instances["span-task:s1#2"].source_tokens == ["Abby", "purchased", "a", "car"]
    # The aligner's own answers match both majorities.
    assert summary["aligner_vs_majority"]["exact_f1"] == 1.0
    assert json.loads((task / "agreement.json").read_text())["instances"] == 2


def test_token_alpha_known_values():
    items = {"i": {"target_tokens": ["a", "b", "c", "d"]}, "j": {"target_tokens": ["a", "b"]}}
    same = {"i": {"w1": (1, 2), "w2": (1, 2)}, "j": {"w1": (0, 0), "w2": (0, 0)}}
    assert token_alpha(same, items) == pytest.approx(1.0)
    # Units (tokens) and values of two coders: i: 0110 vs 0100, j: 10 vs 10. One disagreeing unit
    # of six; nominal alpha = 1 - D_o / D_e with n = 12 values, 5 ones and 7 zeros:
    # D_o = 2/12 (one disagreeing pair counted both ways), D_e = 2*5*7 / (12*11).
    off = {"i": {"w1": (1, 2), "w2": (1, 1)}, "j": {"w1": (0, 0), "w2": (0, 0)}}
    assert token_alpha(off, items) == pytest.approx(1 - (2 / 12) / (2 * 5 * 7 / (12 * 11)))
    assert exact_agreement(off) == {
        "items_with_two_or_more_answers": 2,
        "pairwise_exact_agreement": 0.5,
        "all_agree_rate": 0.5,
    }


def test_bad_answers_name_the_line(task, capsys):
    item = _rows(task / "task.csv")[0]["item_id"]
    _answers(task / "bad.csv", [(item, "w1", (1, 1)), (item, "w2", (0, 9))])
    args = [
        "human",
        "span-task",
        "import",
        "--results",
        str(task / "bad.csv"),
        "--task",
        str(task / "task.csv"),
        "--key",
        str(task / "key.csv"),
        "--out",
        str(task / "o.jsonl"),
        "--out-summary",
        str(task / "o.json"),
    ]
    assert main(args) == 2
    assert "bad.csv, line 3: span [0, 9] out of range" in capsys.readouterr().err
    _answers(task / "bad.csv", [(item, "w1", (1, 1)), (item, "w1", (1, 1))])
    assert main(args) == 2 and "answered item" in capsys.readouterr().err
    _answers(task / "bad.csv", [("nope", "w1", (1, 1))])
    assert main(args) == 2 and "line 2: item 'nope' is not in the task" in capsys.readouterr().err
    assert not (task / "o.jsonl").exists()


def test_simulated_answers_run_the_loop_and_are_flagged_by_agreement(task):
    base = ["--task", str(task / "task.csv"), "--key", str(task / "key.csv")]
    assert main(["human", "span-task", "simulate", *base, "--out", str(task / "sim.csv"), "--raters", "3"]) == 0
    assert len(_rows(task / "sim.csv")) == 9
    assert (
        main(
            [
                "human",
                "span-task",
                "import",
                "--results",
                str(task / "sim.csv"),
                *base,
                "--out",
                str(task / "s.jsonl"),
                "--out-summary",
                str(task / "s.json"),
            ]
        )
        == 0
    )
    summary = json.loads((task / "s.json").read_text())
    assert summary["answers"] == 9 and summary["krippendorff_alpha_tokens"] is not None
    assert len(read_instances(task / "s.jsonl")) == summary["instances"]
