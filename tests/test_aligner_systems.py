"""Aligner kinds and training-data sources on one held-out split (``align systems``), and the data sources."""

import csv
import json

import pytest
from conftest import copy_task, shared_file

from spanaug.cli.main import main
from spanaug.core.aligner_settings import ALIGNER_SYSTEMS, AlignerConfig, AlignerSystemsSettings, CrossTrainSection
from spanaug.core.metrics import expected_calibration_error, prediction_metrics
from spanaug.evaluation.aligner_ablation import split_by_pair
from spanaug.evaluation.aligner_systems import SYSTEMS, run_systems
from spanaug.pipeline.aligner.instances import Instance, pair_key, read_instances
from spanaug.pipeline.aligner.training_data import (
    DataSources,
    chain_instances,
    consistent_phrases,
    extra_training_instances,
    pairs_for,
    phrase_pair_instances,
    restrict_to_pairs,
    synthetic_instances,
)
from spanaug.pipeline.aligner.word_aligned import AlignedPair

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_every_system_name_has_its_recipe():
    # the settings' list of names is the one a config may choose from: each needs a recipe, and a
    # recipe under another name could never be chosen
    assert list(SYSTEMS) == list(ALIGNER_SYSTEMS)
    assert {row.kind for row in SYSTEMS.values()} == {"paper", "cross"}


def test_ece_on_hand_computed_cases():
    assert expected_calibration_error([], []) == 0.0
    assert expected_calibration_error([1.0, 1.0], [True, True]) == 0.0
    assert expected_calibration_error([0.9, 0.9], [True, False]) == pytest.approx(0.4)
    # bins [0.2, 0.3): score 0.25, all wrong -> 0.25; [0.8, 0.9): 0.85, 1 of 2 right -> 0.35; weights 1/3, 2/3
    assert expected_calibration_error([0.25, 0.85, 0.85], [False, True, False]) == pytest.approx(
        0.25 / 3 + 0.35 * 2 / 3
    )
    assert expected_calibration_error([0.05, 0.95], [False, True], bins=1) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        expected_calibration_error([0.5], [])


def test_prediction_metrics_null_shares_and_ece_over_answers():
    gold = [(0, 1), None, (2, 2), None]
    scored = [((0, 1), 0.8), (None, 0.3), ((1, 1), 0.6), ((0, 0), 0.9)]
    m = prediction_metrics(gold, scored)
    assert m["pred_null_share"] == 0.25 and m["gold_null_share"] == 0.5
    # answered: 0.8 right (bin 8), 0.6 wrong (bin 6), 0.9 wrong (bin 9)
    assert m["ece"] == pytest.approx((0.2 + 0.6 + 0.9) / 3)
    assert m["exact_p"] == pytest.approx(1 / 3)


PAIR = AlignedPair(
    "p",
    ["he", "bought", "the", "car", "quickly"],
    ["quickly", "he", "purchased", "a", "car"],
    {(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)},
    set(),
)


def test_consistent_phrases_and_instances():
    phrases = dict(consistent_phrases(PAIR, max_phrase=2))
    assert phrases[(1, 1)] == (2, 2) and phrases[(1, 2)] == (2, 3) and phrases[(2, 3)] == (3, 4)
    assert (3, 4) not in phrases  # 'car quickly' covers target 0..4, whose 'he purchased a' link outside it
    insts = phrase_pair_instances([PAIR], max_phrase=2, null_share=0.0)
    spans = {(i.source_span, i.target_span) for i in insts}
    assert ((1, 1), (2, 2)) in spans and ((2, 2), (3, 3)) in spans
    assert ((0, 0), (1, 1)) not in spans  # 'he' -> 'he' is copied, not rewritten
    with_copies = phrase_pair_instances([PAIR], max_phrase=2, keep_identical=True, null_share=0.0)
    assert ((0, 0), (1, 1)) in {(i.source_span, i.target_span) for i in with_copies}
    content = phrase_pair_instances([PAIR], max_phrase=2, content_bounded=True, null_share=0.0)
    assert all(i.source_tokens[i.source_span[0]] not in ("the", "he") for i in content)


def test_phrase_instances_add_nulls_from_unlinked_words():
    pair = AlignedPair(
        "q", ["she", "quietly", "left", "home"], ["she", "departed", "home"], {(0, 0), (2, 1), (3, 2)}, set()
    )
    insts = phrase_pair_instances([pair], null_share=0.5)
    assert [i.source_span for i in insts if i.target_span is None] == [(1, 1)]


def test_chain_instances_compose_through_a_shared_sentence():
    x = ["he", "bought", "a", "car"]
    y1 = ["he", "purchased", "a", "car"]
    y2 = ["he", "acquired", "a", "car"]
    links = {(0, 0), (1, 1), (2, 2), (3, 3)}
    pairs = [AlignedPair("1", x, y1, links, set()), AlignedPair("2", y2, x, links, set())]
    insts, counts = chain_instances(pairs)
    got = {(tuple(i.source_tokens), i.source_span, tuple(i.target_tokens), i.target_span) for i in insts}
    assert (tuple(y1), (1, 1), tuple(y2), (1, 1)) in got and (tuple(y2), (1, 1), tuple(y1), (1, 1)) in got
    assert counts["shared_sentences"] == 1 and counts["kept"] == len(insts)
    assert all({tuple(i.source_tokens), tuple(i.target_tokens)} == {tuple(y1), tuple(y2)} for i in insts)


def test_restrict_to_pairs_either_way():
    a = Instance("a", ["x"], ["y"], (0, 0), (0, 0))
    b = Instance("b", ["y"], ["x"], (0, 0), (0, 0))
    c = Instance("c", ["z"], ["y"], (0, 0), (0, 0))
    assert restrict_to_pairs([a, b, c], {pair_key(a)}) == [a, b]
    assert restrict_to_pairs([a, b, c], {pair_key(a)}, either_way=False) == [a]
    assert pairs_for([PAIR], {PAIR.key}) == [PAIR] and pairs_for([PAIR], set()) == []


def test_synthetic_instances_rewrite_the_trigger_with_its_frame():
    lexicon = {"Commerce_buy": ["buy.v", "purchase.v"], "Vehicle": ["car.n"]}
    sents = [
        (["She", "bought", "a", "car", "."], (1, 1), "Commerce_buy", ["PRP", "VBD", "DT", "NN", "."]),
        (["A", "car", "."], (1, 1), "Vehicle", ["DT", "NN", "."]),
    ]
    insts = synthetic_instances(sents, lexicon, seed=0, perturbed=False)
    assert len(insts) == 2  # the second has no other unit
    fwd, back = insts
    assert fwd.target_tokens[1] in ("purchased", "bought") and fwd.target_tokens[1] != "bought"
    assert fwd.target_span == (1, 1) and back.source_tokens == fwd.target_tokens and back.target_span == (1, 1)


def test_extra_data_comes_from_training_pairs_only():
    insts = [
        Instance(
            i.id, i.source_tokens, ["so"] + i.target_tokens, i.source_span, (i.target_span[0] + 1, i.target_span[1] + 1)
        )
        for i in copy_task(60, 20)
    ]
    train, dev, test = split_by_pair(insts, dev_share=0.1, test_share=0.2, seed=0)
    gold = [
        AlignedPair(i.id, i.source_tokens, i.target_tokens, {(n, n + 1) for n in range(len(i.source_tokens))}, set())
        for i in insts
    ]
    extra, counts = extra_training_instances(
        ("phrases", "reversed"),
        train,
        DataSources(gold_pairs=gold, phrase_options={"keep_identical": True}),
        held_out=dev + test,
    )
    assert counts["phrases"] > 0 and counts["reversed"] > 0
    train_keys = {pair_key(i) for i in train}
    assert all(pair_key(i) in train_keys or pair_key(i)[::-1] in train_keys for i in extra)
    seen = {(pair_key(i), i.source_span) for i in train}
    assert not any((pair_key(i), i.source_span) in seen for i in extra)


def test_systems_table(tiny_encoder, tmp_path):
    insts = copy_task(120, 21)
    gold = [
        AlignedPair(i.id, i.source_tokens, i.target_tokens, {(n, n) for n in range(len(i.source_tokens))}, set())
        for i in insts
    ]
    cfg = AlignerSystemsSettings(
        rows=["paper", "paper-holdout", "cross", "cross+phrases"], epochs=2, cross=CrossTrainSection(epochs=1)
    )
    summary = run_systems(
        insts,
        cfg,
        AlignerConfig(encoder=tiny_encoder, k=2),
        tmp_path,
        sources=DataSources(gold_pairs=gold, phrase_options={"keep_identical": True, "max_per_pair": 3}),
        device="cpu",
    )
    rows = list(csv.DictReader((tmp_path / "systems.csv").read_text().splitlines()))
    assert [r["system"] for r in rows] == ["paper", "paper-holdout", "cross", "cross+phrases"]
    for col in ("soft_f1", "exact_f1", "ece", "pred_null_share", "gold_null_share", "unseen_soft_f1", "train_s"):
        assert all(float(r[col]) >= 0 for r in rows), col
    assert rows[1]["threshold_source"].startswith("held-out 10%") and rows[0]["threshold_source"] == "dev instances"
    assert summary["test"] == int(rows[0]["n"]) and (tmp_path / "pred" / "cross.jsonl").is_file()
    # a second run keeps the finished rows
    again = run_systems(
        insts,
        AlignerSystemsSettings(rows=["paper", "cross"]),
        AlignerConfig(encoder=tiny_encoder, k=2),
        tmp_path,
        device="cpu",
        resume=True,
    )
    assert [r["soft_f1"] for r in again["table"]] == [float(rows[0]["soft_f1"]), float(rows[2]["soft_f1"])]
    assert json.loads((tmp_path / "systems_summary.json").read_text())["train"] == summary["train"]


@pytest.mark.integration
def test_real_edinburgh_phrase_pairs_stay_on_training_pairs():
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    insts = read_instances(shared_file("edinburgh-train.spans.jsonl"))
    pairs = read_aligned_json(shared_file("edinburgh-train.gold.json"))
    train, dev, test = split_by_pair(insts, dev_share=0.1, test_share=0.2, seed=0)
    train_pairs = pairs_for(pairs, {pair_key(i) for i in train})
    assert len(train_pairs) == len({pair_key(i) for i in train})
    made = phrase_pair_instances(train_pairs)
    held = {pair_key(i) for i in dev + test}
    assert len(made) > 3 * len(train) and not any(pair_key(i) in held for i in made)
    chained, counts = chain_instances(train_pairs)
    assert counts["kept"] == len(chained) and not any(pair_key(i) in held or pair_key(i)[::-1] in held for i in chained)


def test_perturbation_keeps_the_span():
    import random

    from spanaug.pipeline.aligner.training_data import perturb

    toks = ["Yesterday", ",", "the", "old", "man", "bought", "a", "red", "car", "and", "drove", "home", "."]
    rng = random.Random(0)
    for _ in range(30):
        new, (a, b) = perturb(toks, (5, 5), rng)
        assert new[a : b + 1] == ["bought"] and new[-1] == "." and len(new) >= len(toks) - 2


def test_cli_synthetic_and_import_all_phrases(tmp_path):
    from conftest import toy, write_conll

    conll = tmp_path / "train.conll"
    write_conll(toy(6, 0), conll)
    lexicon = tmp_path / "lexicon.json"
    # write_conll tags every word NN: only noun units may replace a trigger
    lexicon.write_text(
        json.dumps({"Commerce_buy": ["buy.v", "purchase.n"], "Giving": ["gift.n"], "Activity_stop": ["stopped.v"]})
    )
    out = tmp_path / "synthetic.jsonl"
    assert main(["align", "synthetic", "--conll", str(conll), "--lexicon", str(lexicon), "--out", str(out)]) == 0
    made = read_instances(out)
    assert made and {i.target_tokens[i.target_span[0]] for i in made if not i.id.endswith("reversed")} <= {
        "purchase",
        "gift",
    }
    # the same triggers from imported sentences (spanaug import of the CoNLL file)
    sentences, again = tmp_path / "sentences.parquet", tmp_path / "again.jsonl"
    assert main(["import", "--inputs", str(conll), "--format", "conll", "--out", str(sentences)]) == 0
    assert (
        main(["align", "synthetic", "--sentences", str(sentences), "--lexicon", str(lexicon), "--out", str(again)]) == 0
    )
    assert [(i.target_tokens, i.target_span) for i in read_instances(again)] == [
        (i.target_tokens, i.target_span) for i in made
    ]
    assert main(["align", "synthetic", "--lexicon", str(lexicon), "--out", str(again)]) == 2
    assert all(i.source_tokens[i.source_span[0]] != i.target_tokens[i.target_span[0]] for i in made)
    pairs = tmp_path / "pairs.json"
    from spanaug.pipeline.aligner.word_aligned import write_aligned_json

    write_aligned_json([PAIR], pairs)
    out = tmp_path / "phrases.jsonl"
    assert (
        main(
            [
                "align",
                "import-aligned",
                "--input",
                str(pairs),
                "--phrases",
                "all",
                "--null-share",
                "0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert {(i.source_span, i.target_span) for i in read_instances(out)} >= {((1, 1), (2, 2)), ((1, 2), (2, 3))}
