import csv
import json

import pytest
from conftest import copy_task

from spanaug.core.aligner_settings import AblationSettings, AlignerConfig
from spanaug.evaluation.aligner_ablation import position_difference, run_ablation, split_by_pair, unseen_in_training
from spanaug.pipeline.aligner.instances import Instance, pair_key

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_split_keeps_pairs_together():
    insts = copy_task(120, 5)
    insts += [Instance(i.id + "b", i.source_tokens, i.target_tokens, i.source_span, i.target_span) for i in insts[:40]]
    train, dev, test = split_by_pair(insts, dev_share=0.1, test_share=0.2, seed=1)
    keys = [{pair_key(i) for i in part} for part in (train, dev, test)]
    assert not (keys[0] & keys[1]) and not (keys[0] & keys[2]) and not (keys[1] & keys[2])
    assert len(train) + len(dev) + len(test) == len(insts) and test and dev


def test_split_shares_come_from_the_settings():
    insts = copy_task(200, 6)
    default = AblationSettings()
    _, dev, test = split_by_pair(insts, dev_share=default.dev_share, test_share=default.test_share, seed=default.seed)
    assert len(test) == round(default.test_share * len(insts)) and len(dev) == round(default.dev_share * len(insts))
    _, dev, test = split_by_pair(insts, dev_share=0.0, test_share=0.5, seed=default.seed)
    assert dev == [] and len(test) == 100


def test_unseen_source_spans():
    a = Instance("a", ["x", "buy", "y"], ["x", "get", "y"], (1, 1), (1, 1))
    b = Instance("b", ["Buy", "it"], ["Get", "it"], (0, 0), (0, 0))
    c = Instance("c", ["sell", "it"], ["give", "it"], (0, 0), (0, 0))
    assert unseen_in_training([a], [b, c]) == [c]
    assert position_difference(Instance("d", ["a"] * 20, ["a"] * 20, (0, 0), (15, 15))) == 10
    assert position_difference(Instance("e", ["a"], ["a"], (0, 0), None)) == "null"


def test_ablation_writes_tables(tiny_encoder, tmp_path):
    summary = run_ablation(
        copy_task(150, 6),
        AblationSettings(epochs=3, finetune_layers=1, extra_reversed=True),
        AlignerConfig(encoder=tiny_encoder, k=2),
        tmp_path,
        device="cpu",
        systems=["Cue", "Df+Mx+Cue+SBCE"],
    )
    rows = list(csv.DictReader((tmp_path / "ablation.csv").read_text().splitlines()))
    assert [r["system"] for r in rows] == [
        "cosine (untrained)",
        "Cue",
        "Df+Mx+Cue+SBCE",
        "+SBCE +reversed instances",
        "+SBCE +tuned top 1 layers",
    ]
    assert all(int(r["n"]) == summary["test"] for r in rows)
    assert {r["system"]: float(r["soft_f1"]) for r in summary["table"]} == {
        r["system"]: float(r["soft_f1"]) for r in rows
    }
    for name in [
        "memorisation.csv",
        "by_span_length.csv",
        "by_position_difference.csv",
        "ablation.png",
        "breakdowns.png",
    ]:
        assert (tmp_path / name).is_file(), name
    assert json.loads((tmp_path / "summary.json").read_text())["test"] == summary["test"] > 0
