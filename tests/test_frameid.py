"""Frame ID: metrics, the lexicon baseline, and the model on a toy trigger task."""

import dataclasses
import json

import pytest
from conftest import TRIGGERS, output, shared_file, toy, write_conll

from spanaug.cli.main import main
from spanaug.core.evaluation_settings import FrameIdTrainSettings, SplitSettings
from spanaug.downstream.frameid.baseline import LexiconBaseline, triple_scores
from spanaug.downstream.frameid.data import Sentence, hold_out_dev, read_training_file, split_conll
from spanaug.downstream.frameid.lexicon import FrameLexicon, lu_lemmas, span_keys
from spanaug.downstream.frameid.model import FrameIdentifier
from spanaug.downstream.frameid.training import build_config, train_frameid

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_triple_scores_need_span_and_frame():
    gold = [Sentence(["a", "b", "c"], {(0, 0): "F", (1, 2): "G"})]
    m = triple_scores(gold, [{(0, 0): "F", (1, 1): "G", (2, 2): "H"}])
    assert (m["precision"], m["recall"], m["n_gold"], m["n_pred"]) == (pytest.approx(1 / 3), 0.5, 2, 3)


def test_lexicon_baseline_learns_nulls_from_full_text():
    train = [
        Sentence(["he", "ran", "home"], {(1, 1): "Motion"}),
        Sentence(["the", "ran"], {}),
        Sentence(["we", "ran", "away"], {}),
    ]  # 'ran' is a trigger once, a non-trigger twice
    assert LexiconBaseline().fit(train).predict([Sentence(["they", "ran"], {})]) == [{}]
    train.append(Sentence(["she", "ran", "fast"], {(1, 1): "Motion"}))
    train.append(Sentence(["i", "ran"], {(1, 1): "Motion"}))
    assert LexiconBaseline().fit(train).predict([Sentence(["they", "ran"], {})]) == [{(1, 1): "Motion"}]


def test_model_learns_toy_triggers(tiny_encoder):
    train, test = toy(120, 0), toy(40, 1)
    model, summary = train_frameid(
        train,
        tiny_encoder,
        FrameIdTrainSettings(epochs=15, batch_size=12, learning_rate=5e-3),
        dev=toy(20, 2),
        device="cpu",
        progress=False,
    )
    assert summary["history"][-1]["loss"] < summary["history"][0]["loss"]
    scores = triple_scores(test, model.predict(test))
    assert scores["f1"] > 0.8, scores


def test_lexicon_candidates_match_lemmas_and_training_strings():
    assert lu_lemmas("launch (into).v") == {"launch", "launch into"}
    assert lu_lemmas("aid [act].n") == {"aid"}
    assert "give up" in span_keys(["they", "gave", "up"], (1, 2))
    lexicon = FrameLexicon.build(
        [Sentence(["he", "handed", "it"], {(1, 1): "Giving"})],
        {"Commerce_buy": {"purchase.v"}, "Quitting": {"give up.v"}},
    )
    assert lexicon.candidates(["we", "purchased", "it"], (1, 1)) == {"Commerce_buy"}
    assert lexicon.candidates(["we", "gave", "up"], (1, 2)) == {"Quitting"}
    assert lexicon.candidates(["she", "handed"], (1, 1)) == {"Giving"}
    assert lexicon.candidates(["she", "handed"], (0, 0)) == set()


def test_lexicon_labels_triggers_unseen_in_training(tiny_encoder, tmp_path):
    """'purchased' never occurs in training: only the lexicon's purchase.v makes it a candidate."""
    train = [s for s in toy(150, 6) if "purchased" not in s.tokens]
    test = [s for s in toy(80, 7) if "purchased" in s.tokens]
    lexicon = {"Commerce_buy": {"purchase.v", "buy.v"}, "People": {"man.n", "woman.n"}}  # people: never triggers
    model, _ = train_frameid(
        train,
        tiny_encoder,
        FrameIdTrainSettings(epochs=15, batch_size=12, learning_rate=5e-3),
        device="cpu",
        progress=False,
        lexicon=lexicon,
    )
    model.save_pretrained(tmp_path / "m")
    predictions = FrameIdentifier.from_pretrained(tmp_path / "m", device="cpu").predict(test)
    found = [p.get((s.tokens.index("purchased"),) * 2) for s, p in zip(test, predictions)]
    assert found.count("Commerce_buy") >= 0.8 * len(test), found
    assert not any("People" in p.values() for p in predictions)
    assert triple_scores(test, predictions)["f1"] > 0.8


def test_cli_train_eval_and_augmented_input(tiny_encoder, tmp_path, capsys):

    from spanaug.core import artifacts
    from spanaug.pipeline.iterations import assemble

    write_conll(toy(60, 3), tmp_path / "train.conll")
    write_conll(toy(20, 4), tmp_path / "test.conll", start=100)
    chain = [
        output("s1", 1, ["the", "man", "acquired", "a", "car"], 2, 2, "Commerce_buy", "buy.v", "acquire"),
        output("s2", 1, ["nothing", "aligned"], None, None, "Giving", "give.v", None),
    ]
    artifacts.write_table(chain, tmp_path / "chain.parquet", artifacts.CHAIN)
    assemble([tmp_path / "chain.parquet"], tmp_path / "augmented.parquet")
    augmented = read_training_file(tmp_path / "augmented.parquet")
    assert [(s.tokens[2], s.triggers, s.full) for s in augmented] == [("acquired", {(2, 2): "Commerce_buy"}, False)]
    model = tmp_path / "model"
    assert (
        main(
            [
                "frameid",
                "train",
                "--train",
                str(tmp_path / "train.conll"),
                str(tmp_path / "augmented.parquet"),
                "--encoder",
                tiny_encoder,
                "--out",
                str(model),
                "--epochs",
                "2",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    capsys.readouterr()
    summary = json.loads((model / "training_summary.json").read_text())
    # No --dev: 15% of the 60 full-text sentences held out, then a refit on all 61 for the best epoch's count.
    assert summary["dev"] == {"source": "held out: 0.15 of the full-text training sentences (seed 0)", "sentences": 9}
    assert summary["train_sentences"] == 52 and summary["best_epoch"] in (1, 2) and summary["epochs_run"] == 2
    assert summary["refit"]["train_sentences"] == 61 and summary["refit"]["epochs"] == summary["best_epoch"]
    assert summary["seconds_per_epoch"] > 0 and summary["config"] == dataclasses.asdict(FrameIdTrainSettings(epochs=2))
    assert (
        main(["frameid", "eval", "--model", str(model), "--test", str(tmp_path / "test.conll"), "--device", "cpu"]) == 0
    )
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"precision", "recall", "f1", "n_gold", "n_pred"} and scores["n_gold"] > 20


def test_split_keeps_sentences_whole_and_contiguous(tmp_path):
    write_conll(toy(50, 5), tmp_path / "all.conll")
    counts = split_conll(tmp_path / "all.conll", tmp_path / "split", SplitSettings(dev_share=0.1, test_share=0.2))
    assert counts == {"train": 35, "dev": 5, "test": 10}
    test = read_training_file(tmp_path / "split/test.conll")
    assert len(test) == 10


@pytest.mark.integration
def test_real_split_training_candidates_reach_unseen_inflections(tmp_path):
    """On the shared FrameNet split, the no-lexicon candidates (training triggers keyed by lemma)
    cover more test triggers with their gold frame than the exact training strings do."""
    conll = shared_file("fn1.7.dev.syntaxnet.conll")
    assert split_conll(conll, tmp_path, SplitSettings()) == {"train": 228, "dev": 33, "test": 65}
    train, test = read_training_file(tmp_path / "train.conll"), read_training_file(tmp_path / "test.conll")
    lexicon = FrameLexicon(build_config(train, "unused").frame_lexicon)
    seen = {(" ".join(s.tokens[a : b + 1]).lower(), f) for s in train for (a, b), f in s.triggers.items()}
    gold = [(s, span, f) for s in test for span, f in s.triggers.items()]
    exact = sum((" ".join(s.tokens[a : b + 1]).lower(), f) in seen for s, (a, b), f in gold)
    reached = sum(f in lexicon.candidates(s.tokens, span) for s, span, f in gold)
    assert len(gold) == 512 and reached > exact + 10, (reached, exact)


def test_without_lexicon_candidates_are_the_training_lemma_frame_pairs(tiny_encoder):
    """No --lexicon: 'buys' (never in training) is scored as Commerce_buy through the lemma of
    'bought'; 'car' and 'purchase', never training triggers, are never scored."""
    train = [s for s in toy(150, 10) if "purchased" not in s.tokens]
    cfg = build_config(train, tiny_encoder)
    assert "Commerce_buy" in cfg.frames and cfg.frame_lexicon is not None
    model, _ = train_frameid(
        train,
        tiny_encoder,
        FrameIdTrainSettings(epochs=15, batch_size=12, learning_rate=5e-3),
        device="cpu",
        progress=False,
    )
    tokens = ["the", "woman", "buys", "a", "car", "and", "a", "purchase"]
    candidates = model._candidates(tokens)
    assert {span: {model.cfg.frames[i] for i in frames} for span, frames in candidates.items()} == {
        (2, 2): {"Commerce_buy"}
    }
    test = [Sentence(s.tokens, s.triggers) for s in toy(60, 11) if "bought" in s.tokens and "purchased" not in s.tokens]
    for sent in test:  # 'bought' -> 'buys' in the test sentences
        i = sent.tokens.index("bought")
        sent.tokens[i] = "buys"
    predictions = model.predict(test)
    found = [p.get((s.tokens.index("buys"),) * 2) for s, p in zip(test, predictions)]
    assert found.count("Commerce_buy") >= 0.8 * len(test), found
    allowed = {w for w in TRIGGERS if w != "purchased"} | {"buys"}
    assert all(s.tokens[a] in allowed and a == b for s, p in zip(test, predictions) for a, b in p)


def test_dev_is_held_out_from_full_text_sentences_and_recorded(tiny_encoder):
    train = toy(40, 12) + [Sentence(["he", "handed", "it"], {(1, 1): "Giving"}, full=False)] * 3
    rest, dev = hold_out_dev(train, 0.25, seed=3)
    assert len(dev) == 10 and all(s.full for s in dev) and len(rest) == 33
    assert hold_out_dev(train, 0.25, seed=3) == (rest, dev) and hold_out_dev(train, 0.25, seed=4)[1] != dev
    assert hold_out_dev(train, 0.0, seed=3) == (train, [])
    # A trigger only the held-out sentences have: a candidate after the refit on all sentences only.
    dev[0].tokens.append("acquired")
    dev[0].triggers[(len(dev[0].tokens) - 1,) * 2] = "Commerce_buy"
    tcfg = FrameIdTrainSettings(epochs=2, batch_size=12, learning_rate=5e-3, holdout_share=0.25, seed=3, refit=False)
    model, summary = train_frameid(train, tiny_encoder, tcfg, device="cpu", progress=False)
    assert summary["dev"] == {"source": "held out: 0.25 of the full-text training sentences (seed 3)", "sentences": 10}
    assert summary["train_sentences"] == 33 and summary["refit"] is None and "acquired" not in model.cfg.frame_lexicon
    assert all("dev" in h for h in summary["history"]) and summary["best_dev_f1"] == max(
        h["dev"]["f1"] for h in summary["history"]
    )
    refit, summary = train_frameid(
        train, tiny_encoder, dataclasses.replace(tcfg, refit=True), device="cpu", progress=False
    )
    assert summary["refit"]["train_sentences"] == 43 and summary["refit"]["epochs"] == summary["best_epoch"]
    assert refit.cfg.frame_lexicon["acquired"] == ["Commerce_buy"]
    _, summary = train_frameid(train, tiny_encoder, tcfg, dev=toy(5, 13), device="cpu", progress=False)
    assert summary["dev"] == {"source": "given", "sentences": 5} and summary["train_sentences"] == 43
    _, summary = train_frameid(
        train, tiny_encoder, dataclasses.replace(tcfg, holdout_share=0.0), device="cpu", progress=False
    )
    assert summary["dev"] == {"source": "none: holdout_share is 0", "sentences": 0}
    assert summary["best_epoch"] == summary["epochs_run"] == 2 and summary["best_dev_f1"] is None


@pytest.mark.parametrize(
    "dev_f1, patience, best, run",
    [
        ([0.2, 0.5, 0.4, 0.3, 0.6, 0.1, 0.1, 0.1], 2, 2, 4),  # stops 2 epochs after the best, keeps epoch 2
        ([0.0, 0.0, 0.0, 0.3, 0.2, 0.1, 0.9, 0.1], 2, 4, 6),  # F1 0 (nothing learnt yet) does not use up patience
        ([0.2, 0.5, 0.4, 0.3, 0.6, 0.1, 0.1, 0.1], 0, 5, 8),  # patience 0: every epoch, still the best one kept
    ],
)
def test_early_stopping_keeps_the_best_epoch(tiny_encoder, monkeypatch, dev_f1, patience, best, run):
    """Dev F1 scripted per epoch; the weights after each epoch are recorded when dev is scored."""
    import torch

    from spanaug.downstream.frameid import training

    scripted, snapshots = iter(dev_f1), []
    real_predict = FrameIdentifier.predict

    def predict(self, sentences, batch_size=32):
        snapshots.append({k: v.clone() for k, v in self.net.state_dict().items()})
        return real_predict(self, sentences, batch_size)

    monkeypatch.setattr(FrameIdentifier, "predict", predict)
    monkeypatch.setattr(training, "triple_scores", lambda gold, pred: {"f1": next(scripted)})
    tcfg = FrameIdTrainSettings(epochs=len(dev_f1), batch_size=12, learning_rate=5e-3, patience=patience)
    model, summary = train_frameid(toy(30, 14), tiny_encoder, tcfg, dev=toy(5, 15), device="cpu", progress=False)
    assert (summary["best_epoch"], summary["epochs_run"], len(snapshots)) == (best, run, run)
    assert summary["stopped_early"] == (run < len(dev_f1)) and summary["best_dev_f1"] == dev_f1[best - 1]
    final = model.net.state_dict()
    assert all(torch.equal(final[k], v) for k, v in snapshots[best - 1].items())
    assert not all(torch.equal(final[k], v) for k, v in snapshots[-1].items())


def test_cli_training_defaults_are_the_dataclass_defaults(tmp_path, monkeypatch):
    """`frameid train`/`point` with only their required options train with FrameIdTrainSettings() itself."""
    from spanaug.downstream import augmenter_comparison
    from spanaug.downstream.frameid import training

    seen = []

    class Stop(Exception):
        pass

    def record(*args):
        seen.append(next(a for a in args if isinstance(a, FrameIdTrainSettings)))
        raise Stop

    monkeypatch.setattr(training, "train_frameid", lambda *a, **k: record(*a))
    monkeypatch.setattr(augmenter_comparison, "run_point", lambda *a, **k: record(*a))
    write_conll(toy(5, 16), tmp_path / "t.conll")
    train = ["frameid", "train", "--train", str(tmp_path / "t.conll"), "--encoder", "e", "--out", str(tmp_path / "m")]
    point = [
        "frameid",
        "point",
        "--train",
        str(tmp_path / "t.conll"),
        "--test",
        str(tmp_path / "t.conll"),
        "--fraction",
        "0.5",
        "--encoder",
        "e",
        "--out",
        str(tmp_path / "p.json"),
        "--seed",
        "3",
    ]
    changed = [*train, "--no-refit", "--learning-rate", "0.01", "--patience", "0", "--holdout-share", "0.2"]
    for argv in (train, point, changed):  # the CLI turns Stop into its one-line error
        assert main(argv) != 0
    assert seen == [
        FrameIdTrainSettings(),
        FrameIdTrainSettings(seed=3),
        FrameIdTrainSettings(learning_rate=0.01, patience=0, holdout_share=0.2, refit=False),
    ]


def test_defaults_recover_a_trigger_seen_in_training(tiny_encoder, tmp_path, capsys):
    """The README's `frameid train` with only its required options must not regress to a model that
    predicts nothing: each test sentence's trigger words all occur as triggers in training."""
    write_conll(toy(80, 17), tmp_path / "train.conll")
    write_conll(toy(30, 18), tmp_path / "test.conll", start=100)
    model = tmp_path / "model"
    assert (
        main(
            [
                "frameid",
                "train",
                "--train",
                str(tmp_path / "train.conll"),
                "--encoder",
                tiny_encoder,
                "--out",
                str(model),
                # the F1 bars below were measured on the CPU in float32; the defaults tested are the
                # training's, not the device's
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    test = str(tmp_path / "test.conll")
    assert main(["frameid", "eval", "--model", str(model), "--test", test, "--device", "cpu"]) == 0
    scores = json.loads(capsys.readouterr().out)
    summary = json.loads((model / "training_summary.json").read_text())
    assert scores["n_pred"] > 0.8 * scores["n_gold"] and scores["f1"] > 0.8, (scores, summary["history"])
    assert summary["refit"] is not None and summary["best_dev_f1"] > 0.8


def test_glove_vectors_are_read_only_for_words_met(tiny_encoder, tmp_path):
    glove = tmp_path / "vectors.txt"
    lines = [f"{w} " + " ".join(f"{(i + j) % 7 / 7:.3f}" for j in range(5)) for i, w in enumerate(sorted(TRIGGERS))]
    lines += [f"unrelated{i} " + " ".join(["0.1"] * 5) for i in range(500)]
    glove.write_text("\n".join(lines) + "\n")
    train = toy(30, 8)
    model, _ = train_frameid(
        train, tiny_encoder, FrameIdTrainSettings(epochs=1), device="cpu", progress=False, glove=str(glove)
    )
    assert model.cfg.glove_dim == 5
    assert set(model.glove) == {w for s in train for w in s.tokens} & set(TRIGGERS)
    model.save_pretrained(tmp_path / "m")
    loaded = FrameIdentifier.from_pretrained(tmp_path / "m", device="cpu")
    assert loaded.glove == {} and len(loaded.predict(toy(3, 9))) == 3
    assert set(loaded.glove) <= set(TRIGGERS)


def test_malformed_glove_line_names_the_line(tmp_path):
    from spanaug.core.errors import InputError
    from spanaug.downstream.frameid.model import read_glove

    glove = tmp_path / "vectors.txt"
    glove.write_text("good 0.1 0.2\nbad 0.1 x\n")
    with pytest.raises(InputError, match=r"line 2|:2"):
        read_glove(glove)
