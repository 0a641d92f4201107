"""A shortfall (an empty export, fewer items than asked) is a warning on the report's warnings page."""

import json

from conftest import output, seed, write_augmented, write_two_chains

from spanaug.cli.main import main
from spanaug.report.warnings import from_summaries


def test_an_empty_conll_export_reaches_the_warnings_page(tmp_path):
    seeds = [seed("s1", ["They", "quit", "smoking"], 1, 1, "Activity_stop", "quit.v")]
    write_augmented(
        tmp_path, seeds, [output("s1", 1, ["They", "smoking"], None, None, "Activity_stop", "quit.v", None)]
    )
    summary = tmp_path / "release" / "export_conll.json"
    summary.parent.mkdir()
    args = ["export", "conll", "--augmented", str(tmp_path / "augmented.parquet"), "--out", str(tmp_path / "o.conll")]
    assert main([*args, "--summary", str(summary)]) == 0
    counts = json.loads(summary.read_text())
    assert counts["blocks"] == 0 and counts["warnings"][0]["kind"] == "empty"
    [record] = from_summaries([summary])
    assert record["stage"] == "release: CoNLL export" and "holds no block" in record["message"]


def test_an_export_with_blocks_warns_nothing(tmp_path):
    run = write_two_chains(tmp_path)
    summary = tmp_path / "export_conll.json"
    args = ["export", "conll", "--augmented", str(run / "augmented.parquet"), "--out", str(tmp_path / "o.conll")]
    assert main([*args, "--summary", str(summary)]) == 0
    assert json.loads(summary.read_text())["warnings"] == []


def test_fewer_annotation_items_than_asked_reaches_the_warnings_page(tmp_path):
    lus = {"Commerce_buy": ["buy.v", "purchase.v"], "Giving": ["give.v", "hand.v"]}
    seeds, chain = [], []
    for n, frame in enumerate(sorted(lus) * 3):
        for k, unit in enumerate(lus[frame]):
            sid = f"s{n}-{k}"
            seeds.append(seed(sid, ["They", unit.split(".")[0], "it"], 1, 1, frame, unit))
            chain.append(output(sid, 1, ["They", "got", "it"], 1, 1, frame, unit, "get"))
    write_augmented(tmp_path, seeds, chain)
    summary = tmp_path / "human_eval" / "task_summary.json"
    summary.parent.mkdir()
    data = ["--augmented", str(tmp_path / "augmented.parquet"), "--sentences", str(tmp_path / "seeds.parquet")]
    out = ["--out-task", str(tmp_path / "task.csv"), "--out-key", str(tmp_path / "key.csv")]
    assert main(["human", "export", *data, *out, "--n-items", "500", "--summary", str(summary)]) == 0
    counts = json.loads(summary.read_text())
    assert counts["asked"] == 500 and 0 < counts["items"] < 500
    [record] = from_summaries([summary])
    assert record["stage"] == "annotation task (human export)" and "where 500 were asked for" in record["message"]
    assert main(["human", "export", *data, *out, "--n-items", "4", "--summary", str(summary)]) == 0
    assert json.loads(summary.read_text())["warnings"] == []
