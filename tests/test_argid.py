"""Argument identification: open-SESAME's scores, the baseline, constrained decoding, the model on a
toy frame-element task, persistence, and the commands."""

import dataclasses
import itertools
import json
import random
import re

import pytest
from conftest import REPO

from spanaug.cli.main import main
from spanaug.core import artifacts, modeldir
from spanaug.core.argid_settings import ArgIdTrainSettings
from spanaug.downstream.argid.data import Annotation, Inventory, conll_lines, read_annotations
from spanaug.downstream.argid.model import ArgumentIdentifier, constrained_decode
from spanaug.downstream.argid.scoring import MostFrequentRoleBaseline, argument_scores
from spanaug.downstream.argid.training import train_argid

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Trigger word -> (frame, the role of the word before it, the role of all the words after it).
FRAMES = {
    "bought": ("Commerce_buy", "Buyer", "Goods"),
    "gave": ("Giving", "Donor", "Theme"),
    "stopped": ("Activity_stop", "Agent", "Activity"),
}
FILLER = ["the", "a", "man", "woman", "car", "book", "yesterday", "quickly", "old", "city", "to", "from"]


def fe_toy(n: int, seed: int) -> list[Annotation]:
    """Filler words around one trigger: the word before it fills the frame's first role, every word
    after it (one to three) the second."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        word = rng.choice(sorted(FRAMES))
        frame, left, right = FRAMES[word]
        pre, post = rng.sample(FILLER, rng.randint(1, 3)), rng.sample(FILLER, rng.randint(1, 3))
        tokens, t = [*pre, word, *post], len(pre)
        fes = [((t - 1, t - 1), left), ((t + 1, len(tokens) - 1), right)]
        out.append(Annotation(tokens, (t, t), frame, fes, sentence=f"{seed}:{k}", lexical_unit=f"{word}.v"))
    return out


def write_conll(annotations, path):
    path.write_text("".join("\n".join(conll_lines(a, a.fes, i)) + "\n\n" for i, a in enumerate(annotations)))
    return path


FAST = ArgIdTrainSettings(epochs=10, batch_size=8, learning_rate=5e-3, finetune=False, holdout_share=0, null_weight=0.5)


@pytest.fixture(scope="module")
def toy_model(tiny_encoder):
    model, summary = train_argid(fe_toy(80, 0), tiny_encoder, FAST, device="cpu", progress=False)
    return model, summary


def test_scores_follow_open_sesame_roles_and_coreness():
    gold = Annotation(
        list("abcdef"),
        (2, 2),
        "F",
        [((0, 0), "A"), ((4, 4), "B"), ((5, 5), "B")],
        coreness={"A": "Core", "B": "Peripheral"},
    )
    # B is discontiguous: one of its two pieces is no hit; A is right.
    scores = argument_scores([gold], [[((0, 0), "A"), ((4, 4), "B")]])
    # Weighted as open-SESAME: tp = 1 (core A), fp = fn = 0.5 (non-core B).
    assert scores["precision"] == pytest.approx(1 / 1.5)
    assert scores["recall"] == pytest.approx(1 / 1.5)
    assert scores["by_fe_type"]["core"]["f1"] == 1.0
    assert scores["by_fe_type"]["non-core"]["f1"] == 0.0
    assert scores["unlabeled"]["recall"] == 0.5
    # Without coreness every role weighs 1.
    plain = dataclasses.replace(gold, coreness={})
    assert argument_scores([plain], [[((0, 0), "A")]])["recall"] == 0.5
    assert argument_scores([plain], [[((0, 0), "B")]])["f1"] == 0.0


def test_baseline_places_each_frames_frequent_roles_relative_to_the_trigger():
    train = fe_toy(60, 1)
    pred = (
        MostFrequentRoleBaseline()
        .fit(train)
        .predict([Annotation(["the", "man", "bought", "a", "car"], (2, 2), "Commerce_buy", [])])
    )
    assert ((1, 1), "Buyer") in pred[0]
    assert all(role in ("Buyer", "Goods") for _, role in pred[0])


def test_constrained_decoding_keeps_roles_once_and_spans_apart():
    scored = [(0.9, (0, 1), "A"), (0.8, (1, 2), "B"), (0.7, (3, 3), "A"), (0.6, (4, 4), "C"), (0.5, (5, 5), "C")]
    assert constrained_decode(scored, frozenset()) == [((0, 1), "A"), ((4, 4), "C")]
    assert constrained_decode(scored, frozenset({"A", "C"})) == [
        ((0, 1), "A"),
        ((3, 3), "A"),
        ((4, 4), "C"),
        ((5, 5), "C"),
    ]


def test_inventory_restricts_roles_to_the_frames_fes():
    train = [*fe_toy(20, 2), Annotation(list("abcd"), (1, 1), "Giving", [((0, 0), "Donor"), ((2, 2), "Donor")])]
    inv = Inventory.build(train, {"Giving": {"Recipient": "Core"}})
    assert inv.allowed("Giving") == ["Donor", "Recipient", "Theme"]
    assert inv.repeatable == ["Donor"]
    assert inv.coreness["Giving"] == {"Recipient": "Core"}
    assert inv.allowed("Unseen_frame") == inv.roles[1:]  # every role the model knows


def test_model_learns_toy_fes_and_decodes_within_the_frame(toy_model):
    model, summary = toy_model
    assert summary["history"][-1]["loss"] < summary["history"][0]["loss"]
    test = fe_toy(40, 3)
    pred = model.predict(test)
    assert argument_scores(test, pred)["f1"] > 0.8
    # Relabel every test trigger with another frame: only that frame's roles come out, never overlapping.
    moved = [dataclasses.replace(a, frame="Activity_stop") for a in test]
    for _a, fes in zip(moved, model.predict(moved)):
        assert {role for _, role in fes} <= {"Agent", "Activity"}
        spans = sorted(span for span, _ in fes)
        assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(spans))
        assert len({role for _, role in fes}) == len(fes)


def test_save_and_load_give_the_same_predictions(tiny_encoder, tmp_path):
    tcfg = dataclasses.replace(FAST, epochs=2, finetune=True)
    model, _ = train_argid(fe_toy(30, 4), tiny_encoder, tcfg, device="cpu", progress=False)
    model.save_pretrained(tmp_path / "m")
    assert (tmp_path / "m" / modeldir.MANIFEST_FILE).is_file()
    assert (tmp_path / "m" / modeldir.ENCODER_DIR / "config.json").is_file()  # the tuned encoder
    test = fe_toy(15, 5)
    again = ArgumentIdentifier.from_pretrained(tmp_path / "m", device="cpu")
    assert again.predict(test) == model.predict(test)


def test_cli_train_eval_predict_baseline(tiny_encoder, tmp_path, capsys):
    write_conll(fe_toy(60, 6), tmp_path / "train.conll")
    test = write_conll(fe_toy(20, 7), tmp_path / "test.conll")
    out = tmp_path / "model"
    args = ["--epochs", "2", "--no-finetune", "--holdout-share", "0.2", "--threads", "1", "--device", "cpu"]
    assert (
        main(
            [
                "argid",
                "train",
                "--train",
                str(tmp_path / "train.conll"),
                "--out",
                str(out),
                "--encoder",
                tiny_encoder,
                *args,
            ]
        )
        == 0
    )
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["dev"]["annotations"] > 0 and summary["epochs_run"] <= 2
    assert main(["argid", "eval", "--model", str(out), "--test", str(test), "--out", str(tmp_path / "s.json")]) == 0
    scores = json.loads((tmp_path / "s.json").read_text())
    assert {"precision", "recall", "f1", "unlabeled", "by_fe_type", "by_role"} <= scores.keys()
    assert scores["n_gold"] == 40
    assert set(scores["by_fe_type"]) == {"unknown"}  # CoNLL has no coreness
    # A FrameNet release gives the coreness: the demo's Activity_stop has Agent and Activity core.
    demo = str(REPO / "resources/demo/fndata-demo")
    assert (
        main(
            [
                "argid",
                "eval",
                "--model",
                str(out),
                "--test",
                str(test),
                "--framenet",
                demo,
                "--out",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    assert "core" in json.loads((tmp_path / "c.json").read_text())["by_fe_type"]
    assert (
        main(["argid", "predict", "--model", str(out), "--input", str(test), "--out", str(tmp_path / "p.conll")]) == 0
    )
    back = read_annotations(tmp_path / "p.conll")  # column 15 written as open-SESAME reads it
    assert [a.tokens for a in back] == [a.tokens for a in read_annotations(test)]
    assert (
        main(["argid", "predict", "--model", str(out), "--input", str(test), "--out", str(tmp_path / "p.jsonl")]) == 0
    )
    first = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    assert {"tokens", "trigger", "frame", "frame_elements"} <= first.keys()
    capsys.readouterr()
    assert main(["argid", "baseline", "--train", str(tmp_path / "train.conll"), "--test", str(test)]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] > 0.9


def test_parquet_sentences_with_frame_elements_are_read(tmp_path):
    from spanaug.pipeline.importers import read_conll

    conll = write_conll(fe_toy(5, 8), tmp_path / "x.conll")
    artifacts.write_table(list(read_conll(conll)), tmp_path / "x.parquet", artifacts.SENTENCES)
    assert [a.fes for a in read_annotations(tmp_path / "x.parquet")] == [a.fes for a in read_annotations(conll)]


def test_augmented_outputs_train_on_their_carried_fes_and_skip_lost_ones(tmp_path):
    from conftest import output, write_augmented

    seed = {
        "sentence_id": "s1",
        "tokens": ["Abby", "bought", "a", "car"],
        "text": "Abby bought a car",
        "span_start": 1,
        "span_end": 1,
        "frame": "Commerce_buy",
        "lexical_unit": "buy.v",
        "pos_tags": None,
        "source": "t",
        "corpus_part": "fulltext",
        "document": "d",
        "annotation_date": None,
        "order": 0,
        "frame_elements": [],
    }
    kept = output("s1", 1, ["Abby", "purchased", "a", "car"], 1, 1, "Commerce_buy", "buy.v", "purchase")
    kept["frame_elements"] = [
        {"name": "Buyer", "start": 0, "end": 0, "null_type": None, "coreness": "Core", "score": 0.9},
        {"name": "Goods", "start": 2, "end": 3, "null_type": None, "coreness": "Core", "score": 0.8},
    ]
    lost = output("s1", 2, ["Abby", "got", "one"], 1, 1, "Commerce_buy", "buy.v", "get")
    lost["frame_elements"] = [
        {"name": "Buyer", "start": 0, "end": 0, "null_type": None, "coreness": "Core", "score": 0.9},
        {"name": "Goods", "start": None, "end": None, "null_type": "LOST", "coreness": "Core", "score": 0.0},
    ]
    write_augmented(tmp_path, [seed], [kept, lost])
    assert artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED).num_rows == 2
    (only,) = read_annotations(tmp_path / "augmented.parquet")
    assert only.tokens[1] == "purchased" and only.trigger == (1, 1)
    assert only.fes == [((0, 0), "Buyer"), ((2, 3), "Goods")]
    assert only.coreness == {"Buyer": "Core", "Goods": "Core"}


@pytest.mark.parametrize(
    "tag, message",
    [("I-Buyer", r"line 2: frame-element tag 'I-Buyer' continues no B-Buyer"), ("_", "holds no trigger annotated")],
)
def test_bad_input_exits_2_naming_the_file_and_line(tmp_path, capsys, tag, message):
    path = write_conll(
        [Annotation(["He", "bought", "it"], (1, 1), "Commerce_buy", [((0, 0), "Buyer")])], tmp_path / "bad.conll"
    )
    lines = path.read_text().splitlines()
    lines = [
        line.rsplit("\t", 1)[0] + "\t" + (tag if tag == "_" or i == 1 else "O") for i, line in enumerate(lines) if line
    ]
    path.write_text("\n".join(lines) + "\n\n")
    assert main(["argid", "baseline", "--train", str(path), "--test", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spanaug: error: {path}")
    assert re.search(message, err), err


def test_full_parse_pairs_a_wrong_frame_as_misses_and_false_positives():
    from spanaug.downstream.argid.parse import paired

    gold = [Annotation(["he", "bought", "it"], (1, 1), "Commerce_buy", [((0, 0), "Buyer")], sentence="s")]
    right = [dataclasses.replace(gold[0], fes=[])]
    assert argument_scores(*paired(gold, right, [[((0, 0), "Buyer")]]))["f1"] == 1.0
    wrong = [dataclasses.replace(gold[0], frame="Getting", fes=[])]
    scores = argument_scores(*paired(gold, wrong, [[((0, 0), "Recipient")]]))
    assert (scores["f1"], scores["n_gold"], scores["n_pred"]) == (0.0, 1, 1)


def test_cli_eval_on_frame_id_predicted_frames(tiny_encoder, tmp_path, toy_model):
    from spanaug.core.evaluation_settings import FrameIdTrainSettings
    from spanaug.downstream.argid.parse import frame_sentences
    from spanaug.downstream.frameid.training import train_frameid

    model, _ = toy_model
    model.save_pretrained(tmp_path / "argid")
    sentences, _ = frame_sentences(fe_toy(80, 9))
    frameid, _ = train_frameid(
        sentences,
        tiny_encoder,
        FrameIdTrainSettings(epochs=8, batch_size=8, learning_rate=5e-3, holdout_share=0),
        device="cpu",
        progress=False,
    )
    frameid.save_pretrained(tmp_path / "frameid")
    test = write_conll(fe_toy(20, 10), tmp_path / "test.conll")
    common = ["argid", "eval", "--model", str(tmp_path / "argid"), "--test", str(test)]
    assert main([*common, "--out", str(tmp_path / "gold.json")]) == 0
    predicted = [*common, "--frames", "predicted", "--frameid-model", str(tmp_path / "frameid")]
    assert main([*predicted, "--out", str(tmp_path / "pred.json")]) == 0
    gold, pred = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("gold", "pred"))
    assert pred["frames"] == "predicted" and pred["frame_id"]["n_gold"] == 20
    assert pred["n_gold"] == gold["n_gold"] and pred["f1"] <= gold["f1"]
    assert main([*common, "--frames", "predicted"]) == 2  # without its Frame ID model
