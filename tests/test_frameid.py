"""Frame ID: metrics, the lexicon baseline, and the model on a toy trigger task."""

import json

import pytest
from conftest import TRIGGERS, output, shared_file, toy, write_conll

from spanaug.cli.main import main
from spanaug.core.config import FrameIdTrainConfig, SplitSettings
from spanaug.downstream.frameid.baseline import LexiconBaseline, triple_scores
from spanaug.downstream.frameid.data import Sentence, read_training_file, split_conll
from spanaug.downstream.frameid.lexicon import FrameLexicon, lu_lemmas, span_keys
from spanaug.downstream.frameid.model import FrameIdentifier
from spanaug.downstream.frameid.training import train_frameid


def test_triple_scores_need_span_and_frame():
    gold = [Sentence("a b c".split(), {(0, 0): "F", (1, 2): "G"})]
    m = triple_scores(gold, [{(0, 0): "F", (1, 1): "G", (2, 2): "H"}])
    assert (m["precision"], m["recall"], m["n_gold"], m["n_pred"]) == (pytest.approx(1 / 3), 0.5, 2, 3)


def test_lexicon_baseline_learns_nulls_from_full_text():
    train = [Sentence("he ran home".split(), {(1, 1): "Motion"}), Sentence("the ran".split(), {}),
             Sentence("we ran away".split(), {})]  # 'ran' is a trigger once, a non-trigger twice
    assert LexiconBaseline().fit(train).predict([Sentence("they ran".split(), {})]) == [{}]
    train.append(Sentence("she ran fast".split(), {(1, 1): "Motion"}))
    train.append(Sentence("i ran".split(), {(1, 1): "Motion"}))
    assert LexiconBaseline().fit(train).predict([Sentence("they ran".split(), {})]) == [{(1, 1): "Motion"}]


def test_model_learns_toy_triggers(tiny_encoder):
    train, test = toy(120, 0), toy(40, 1)
    model, summary = train_frameid(train, tiny_encoder, FrameIdTrainConfig(epochs=15, batch_size=12, learning_rate=5e-3),
                                   dev=toy(20, 2), device="cpu", progress=False)
    assert summary["history"][-1]["loss"] < summary["history"][0]["loss"]
    scores = triple_scores(test, model.predict(test))
    assert scores["f1"] > 0.8, scores


def test_lexicon_candidates_match_lemmas_and_training_strings():
    assert lu_lemmas("launch (into).v") == {"launch", "launch into"}
    assert lu_lemmas("aid [act].n") == {"aid"}
    assert "give up" in span_keys("they gave up".split(), (1, 2))
    lexicon = FrameLexicon.build([Sentence("he handed it".split(), {(1, 1): "Giving"})],
                                 {"Commerce_buy": {"purchase.v"}, "Quitting": {"give up.v"}})
    assert lexicon.candidates("we purchased it".split(), (1, 1)) == {"Commerce_buy"}
    assert lexicon.candidates("we gave up".split(), (1, 2)) == {"Quitting"}
    assert lexicon.candidates("she handed".split(), (1, 1)) == {"Giving"}
    assert lexicon.candidates("she handed".split(), (0, 0)) == set()


def test_lexicon_labels_triggers_unseen_in_training(tiny_encoder, tmp_path):
    """'purchased' never occurs in training: only the lexicon's purchase.v makes it a candidate."""
    train = [s for s in toy(150, 6) if "purchased" not in s.tokens]
    test = [s for s in toy(80, 7) if "purchased" in s.tokens]
    lexicon = {"Commerce_buy": {"purchase.v", "buy.v"}, "People": {"man.n", "woman.n"}}  # people: never triggers
    model, _ = train_frameid(train, tiny_encoder, FrameIdTrainConfig(epochs=15, batch_size=12, learning_rate=5e-3),
                             device="cpu", progress=False, lexicon=lexicon)
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
    chain = [output("s1", 1, "the man acquired a car".split(), 2, 2, "Commerce_buy", "buy.v", "acquire"),
             output("s2", 1, "nothing aligned".split(), None, None, "Giving", "give.v", None)]
    artifacts.write_table(chain, tmp_path / "chain.parquet", artifacts.CHAIN)
    assemble([tmp_path / "chain.parquet"], tmp_path / "augmented.parquet")
    augmented = read_training_file(tmp_path / "augmented.parquet")
    assert [(s.tokens[2], s.triggers, s.full) for s in augmented] == [("acquired", {(2, 2): "Commerce_buy"}, False)]
    model = tmp_path / "model"
    assert main(["frameid", "train", "--train", str(tmp_path / "train.conll"), str(tmp_path / "augmented.parquet"),
                 "--encoder", tiny_encoder, "--out", str(model), "--epochs", "2", "--device", "cpu"]) == 0
    capsys.readouterr()
    assert main(["frameid", "eval", "--model", str(model), "--test", str(tmp_path / "test.conll"), "--device", "cpu"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"precision", "recall", "f1", "n_gold", "n_pred"} and scores["n_gold"] > 20


def test_split_keeps_sentences_whole_and_contiguous(tmp_path):
    write_conll(toy(50, 5), tmp_path / "all.conll")
    counts = split_conll(tmp_path / "all.conll", tmp_path / "split", SplitSettings(dev_share=0.1, test_share=0.2))
    assert counts == {"train": 35, "dev": 5, "test": 10}
    test = read_training_file(tmp_path / "split/test.conll")
    assert len(test) == 10


@pytest.mark.integration
def test_real_split_beats_nothing():
    conll = shared_file("fn1.7.dev.syntaxnet.conll")
    sents = read_training_file(conll)
    assert len(sents) > 300 and sum(len(s.triggers) for s in sents) > 2000


def test_glove_vectors_are_read_only_for_words_met(tiny_encoder, tmp_path):
    glove = tmp_path / "vectors.txt"
    lines = [f"{w} " + " ".join(f"{(i + j) % 7 / 7:.3f}" for j in range(5)) for i, w in enumerate(sorted(TRIGGERS))]
    lines += [f"unrelated{i} " + " ".join(["0.1"] * 5) for i in range(500)]
    glove.write_text("\n".join(lines) + "\n")
    train = toy(30, 8)
    model, _ = train_frameid(train, tiny_encoder, FrameIdTrainConfig(epochs=1), device="cpu", progress=False,
                             glove=str(glove))
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
    with pytest.raises(InputError, match="line 2|:2"):
        read_glove(glove)
