"""Augmenters (paraphrastic, lexsub, GECA, chain graphs) and the Figure 8 experiment's pieces."""

import json

import pytest
from conftest import fe, output, seed, toy, write_augmented, write_conll

from spanaug.cli.main import main
from spanaug.core import artifacts
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.evaluation_settings import GecaSettings, SplitSettings
from spanaug.core.validation import LOST
from spanaug.downstream.augmenter_comparison import (
    curves,
    curves_stage,
    examples_for,
    plot_curves,
    read_points,
    sample_sentences,
)
from spanaug.downstream.augmenters import chain_members, geca_examples, lexsub_examples, paraphrastic_examples
from spanaug.downstream.frameid.data import Sentence, read_training_file, sentence_key, split_sentences
from spanaug.pipeline.aligner.training_data import graph_instances


class TableTagger:
    """A tagger that looks words up in a fixed table (NOUN otherwise)."""

    def __init__(self, tags):
        self.tags = tags

    def tag(self, tokens):
        return [self.tags.get(t.lower(), "NOUN") for t in tokens]


@pytest.fixture
def dataset(tmp_path):
    seeds = [
        seed("s1", ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v"),
        seed("s2", ["They", "quit", "smoking"], 1, 1, "Activity_stop", "quit.v"),
    ]
    chain = [
        output("s1", 1, ["Abby", "purchased", "a", "car"], 1, 1, "Commerce_buy", "buy.v", "purchase"),
        output("s1", 2, ["Yesterday", "Abby", "got", "a", "car"], 2, 2, "Commerce_buy", "buy.v", "get"),
        output("s1", 3, ["Abby", "paid", "for", "a", "car"], 1, 2, "Commerce_buy", "buy.v", "pay for"),
        output("s2", 1, ["They", "gave", "up", "smoking"], 1, 2, "Activity_stop", "quit.v", "give up"),
        output("s2", 2, ["They", "smoking"], None, None, "Activity_stop", "quit.v", None),
    ]
    chain[2]["aligner_score"] = 0.5
    write_augmented(tmp_path, seeds, chain)
    return (
        artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED),
        artifacts.read_table(tmp_path / "seeds.parquet", artifacts.SENTENCES),
        tmp_path,
    )


def test_paraphrastic_keeps_aligned_outputs_passing_the_filter(dataset):
    augmented, seeds, _ = dataset
    everything = paraphrastic_examples(augmented, seeds)
    assert [r["trigger"] for r in everything] == ["purchased", "got", "paid for", "gave up"]
    assert everything[0]["seed_key"] == sentence_key(["Abby", "bought", "a", "car"]) == "abbyboughtacar"
    strict = paraphrastic_examples(augmented, seeds, {"min_aligner_score": 0.8, "max_iteration": 1})
    assert [r["example_id"] for r in strict] == ["paraphrastic:s1#1", "paraphrastic:s2#1"]


def test_lexsub_puts_the_trigger_back_when_its_pos_matches(dataset):
    augmented, seeds, _ = dataset
    tagger = TableTagger(
        {
            "bought": "VERB",
            "purchased": "VERB",
            "got": "VERB",
            "quit": "VERB",
            "gave": "VERB",
            "paid": "ADJ",
            "up": "ADP",
        }
    )
    rows, counts = lexsub_examples(augmented, seeds, tagger)
    assert [(r["text"], r["span_start"], r["span_end"], r["frame"]) for r in rows] == [
        ("Abby purchased a car", 1, 1, "Commerce_buy"),
        ("Abby got a car", 1, 1, "Commerce_buy"),
        ("They gave up smoking", 1, 2, "Activity_stop"),
    ]
    assert counts == {"candidates": 4, "same_as_seed": 0, "pos_mismatch": 1, "duplicates": 0, "examples": 3}


def test_lexsub_and_paraphrastic_examples_carry_frame_elements(tmp_path):
    """lexsub moves the seed's FEs with the new trigger; paraphrastic keeps the output's carried FEs,
    lost ones included; both validate as EXAMPLES, which may hold LOST FEs as outputs do."""
    s1 = seed("s1", ["Abby", "quit", "smoking", "today"], 1, 1, "Activity_stop", "quit.v")
    s1["frame_elements"] = [fe("Agent", 0, 0), fe("Activity", 2, 2), fe("Time", 3, 3)]
    out = output("s1", 1, ["Abby", "gave", "up", "smoking"], 1, 2, "Activity_stop", "quit.v", "give up")
    out["frame_elements"] = [fe("Agent", 0, 0, score=0.9), fe("Activity", 3, 3, score=0.8), fe("Time", null_type=LOST)]
    write_augmented(tmp_path, [s1], [out])
    augmented = artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED)
    seeds = artifacts.read_table(tmp_path / "seeds.parquet", artifacts.SENTENCES)
    (lex,), _ = lexsub_examples(augmented, seeds, TableTagger({"quit": "VERB", "gave": "VERB"}))
    assert lex["text"] == "Abby gave up smoking today"
    assert [(f["name"], f["start"], f["end"]) for f in lex["frame_elements"]] == [
        ("Agent", 0, 0),
        ("Activity", 3, 3),
        ("Time", 4, 4),
    ]
    (para,) = paraphrastic_examples(augmented, seeds)
    assert [f["null_type"] for f in para["frame_elements"]] == [None, None, LOST]
    path = tmp_path / "examples.parquet"
    artifacts.write_table([lex, para], path, artifacts.EXAMPLES)
    back = artifacts.read_table(path, artifacts.EXAMPLES).column("frame_elements").to_pylist()
    assert back[1][2]["null_type"] == LOST


def test_geca_substitutes_fragments_that_share_an_environment():
    sentences = [
        Sentence(["we", "bought", "a", "car"], {(1, 1): "Commerce_buy"}),
        Sentence(["we", "acquired", "a", "bike"], {(1, 1): "Getting"}),
        Sentence(["they", "bought", "bread"], {(1, 1): "Commerce_buy"}),
        Sentence(["dogs", "bark", "loudly"], {(1, 1): "Make_noise"}),
    ]
    rows, counts = geca_examples(sentences, GecaSettings(window=1))
    # 'bought' and 'acquired' share (we _ a): every sentence of each takes the other, with its frame.
    assert {(r["text"], r["span_start"], r["span_end"], r["frame"], r["source_trigger"]) for r in rows} == {
        ("we acquired a car", 1, 1, "Getting", "bought"),
        ("they acquired bread", 1, 1, "Getting", "bought"),
        ("we bought a bike", 1, 1, "Commerce_buy", "acquired"),
    }
    assert {r["seed_key"] for r in rows if r["text"] == "they acquired bread"} == {"theyboughtbread"}
    assert counts == {"fragments": 3, "environments": 3, "fragment_pairs": 2, "examples": 3}
    assert geca_examples(sentences, GecaSettings(window=2))[0] == []  # (<s> we, a car) vs (<s> we, a bike)
    assert len(geca_examples(sentences, GecaSettings(window=1, max_outputs=2))[0]) == 2


def test_geca_drops_sentences_already_in_the_data():
    sentences = [
        Sentence(["we", "bought", "a", "car"], {(1, 1): "Commerce_buy"}),
        Sentence(["we", "acquired", "a", "car"], {(1, 1): "Commerce_buy"}),
    ]
    assert geca_examples(sentences)[0] == []


def test_geca_multiword_fragment_shifts_the_span():
    sentences = [
        Sentence(["we", "bought", "a", "car"], {(1, 1): "Commerce_buy"}),
        Sentence(["we", "paid", "for", "a", "car"], {(1, 2): "Commerce_pay"}),
        Sentence(["I", "bought", "it"], {(1, 1): "Commerce_buy"}),
    ]
    rows, _ = geca_examples(sentences)
    assert {(r["text"], r["span_start"], r["span_end"]) for r in rows} == {("I paid for it", 1, 2)}


def test_graph_composes_alignments_along_chains_and_cuts_at_a_failing_output(dataset):
    augmented, seeds, _ = dataset
    chains = chain_members(augmented, seeds)
    assert [len(chains["s1"]), len(chains["s2"])] == [4, 2]  # s2's iteration 2 has no aligned span
    instances, counts = graph_instances(chains)
    assert counts == {"chains": 2, "direct": 4, "reversed": 4, "composed": 6, "instances": 14}
    composed = next(i for i in instances if i.id == "graph:s1:0>3")
    assert (composed.source_span, composed.target_span, composed.target_tokens[1:3]) == (
        (1, 1),
        (1, 2),
        ["paid", "for"],
    )
    cut = chain_members(augmented, seeds, {"min_aligner_score": 0.8})
    assert len(cut["s1"]) == 3


def test_cli_augmenters_write_examples_and_counts(dataset, capsys):
    _, _, tmp = dataset
    args = ["--augmented", str(tmp / "augmented.parquet"), "--seeds", str(tmp / "seeds.parquet")]
    assert (
        main(
            [
                "augment",
                "paraphrastic",
                *args,
                "--filter",
                "iter == 1",
                "--out",
                str(tmp / "p.parquet"),
                "--counts",
                str(tmp / "p.json"),
            ]
        )
        == 0
    )
    assert json.loads((tmp / "p.json").read_text())["examples"] == 2
    assert [s.triggers for s in read_training_file(tmp / "p.parquet")] == [
        {(1, 1): "Commerce_buy"},
        {(1, 2): "Activity_stop"},
    ]
    assert main(["augment", "graph", *args, "--out", str(tmp / "g.jsonl"), "--counts", str(tmp / "g.json")]) == 0
    assert len((tmp / "g.jsonl").read_text().splitlines()) == json.loads((tmp / "g.json").read_text())["instances"]
    assert main(["augment", "paraphrastic", *args, "--filter", "no such", "--out", str(tmp / "x.parquet")]) != 0
    assert "no such" in capsys.readouterr().err


def test_split_sentences_keeps_documents_whole(tmp_path):
    rows = [
        dict(
            seed(f"d{d}s{s}", f"doc {d} sentence {s}".split(), 0, 0, "F", "doc.n"),
            corpus_part="fulltext",
            document=f"doc{d}",
        )
        for d in range(10)
        for s in range(3)
    ]
    rows += [seed(f"e{n}", f"exemplar {n}".split(), 0, 0, "F", "exemplar.n") for n in range(5)]
    artifacts.write_table(rows, tmp_path / "s.parquet", artifacts.SENTENCES)
    counts = split_sentences(tmp_path / "s.parquet", tmp_path / "split", SplitSettings(parts=["fulltext"]))
    assert counts == {"train": 21, "dev": 3, "test": 6}
    docs = {
        name: set(
            artifacts.read_table(tmp_path / f"split/{name}.parquet", artifacts.SENTENCES).column("document").to_pylist()
        )
        for name in counts
    }
    assert not (docs["train"] & docs["test"]) and not (docs["dev"] & docs["test"]) and len(docs["test"]) == 2


def test_sample_and_examples_for_the_sample():
    pool = [Sentence([f"w{i}", "x"], {(0, 0): "F"}) for i in range(20)]
    sample = sample_sentences(pool, 0.3, seed=1)
    assert len(sample) == 6 and len({tuple(s.tokens) for s in sample}) == 6
    # the sample depends on the sentences and the seed, not on the pool's order
    assert {tuple(s.tokens) for s in sample} == {tuple(s.tokens) for s in sample_sentences(pool[::-1], 0.3, seed=1)}
    assert {tuple(s.tokens) for s in sample} != {tuple(s.tokens) for s in sample_sentences(pool, 0.3, seed=2)}
    assert sample_sentences(pool, 1.0, seed=3) == pool
    examples = [
        {"seed_key": sentence_key(s.tokens), "tokens": ["new", "x"], "span_start": 0, "span_end": 0, "frame": "G"}
        for s in pool
    ]
    extra = examples_for(sample, "paraphrastic", examples)
    assert len(extra) == 6 and all(not s.full and s.triggers == {(0, 0): "G"} for s in extra)
    assert examples_for(sample, "none", examples) == []
    with pytest.raises(ConfigError):
        examples_for(sample, "lexsub", None)
    with pytest.raises(ConfigError):
        sample_sentences(pool, 0.0, seed=0)


def test_curves_average_over_seeds(tmp_path):
    points = [
        {"augmenter": a, "fraction": f, "seed": s, "f1": f1, "train_sentences": 10, "augmented_examples": n}
        for a, f, s, f1, n in [
            ("none", 0.5, 0, 0.4, 0),
            ("none", 0.5, 1, 0.6, 0),
            ("geca", 0.5, 0, 0.7, 4),
            ("geca", 0.5, 1, 0.7, 6),
        ]
    ]
    rows = curves(points)
    assert [(r["augmenter"], r["f1_mean"], r["f1_std"], r["augmented_examples"]) for r in rows] == [
        ("none", 0.5, pytest.approx(0.1414, abs=1e-4), 0),
        ("geca", 0.7, 0.0, 5),
    ]
    paths = []
    for n, p in enumerate(points):
        paths.append(tmp_path / f"{n}.json")
        paths[-1].write_text(json.dumps(p))
    curves_stage(paths, tmp_path / "c.csv", tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 0 and len((tmp_path / "c.csv").read_text().splitlines()) == 3


def test_points_whose_model_predicts_nothing_are_counted_noted_and_marked(tmp_path, monkeypatch):
    """F1 0 from a model with no prediction is no figure of its augmenter: the curve table counts such
    seeds from the points' prediction counts (not from F1), notes them, and the figure marks them."""
    points = [
        {"augmenter": a, "fraction": f, "seed": s, "f1": f1, "n_pred": n, "n_gold": 9}
        for a, f, s, f1, n in [
            ("none", 0.5, 0, 0.0, 0),
            ("none", 0.5, 1, 0.0, 0),
            ("none", 1.0, 0, 0.0, 4),  # wrong on every prediction: F1 0, but a model that predicts
            ("none", 1.0, 1, 0.2, 6),
            ("paraphrastic", 0.5, 0, 0.3, 7),
            ("paraphrastic", 0.5, 1, 0.0, 0),
        ]
    ]
    points.append({"augmenter": "paraphrastic", "fraction": 1.0, "seed": 0, "f1": 0.0})  # written before n_pred
    rows = {(r["augmenter"], r["fraction"]): r for r in curves(points)}
    silent = {k: r["seeds_predicting_nothing"] for k, r in rows.items()}
    assert silent == {("none", 0.5): 2, ("none", 1.0): 0, ("paraphrastic", 0.5): 1, ("paraphrastic", 1.0): None}
    assert rows[("none", 1.0)]["n_pred"] == 5 and rows[("paraphrastic", 1.0)]["n_pred"] is None
    assert "2 of 2 seeds' models predicted nothing" in rows[("none", 0.5)]["note"]
    assert "1 of 2 seeds'" in rows[("paraphrastic", 0.5)]["note"]
    assert rows[("none", 1.0)]["note"] == rows[("paraphrastic", 1.0)]["note"] == ""
    drawn = {}
    from spanaug.core import plotting

    monkeypatch.setattr(plotting, "save", lambda fig, path: drawn.setdefault("ax", fig.axes[0]))
    plot_curves(list(rows.values()), tmp_path / "c.png")
    ax = drawn["ax"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(legend) == ["model predicts nothing", "no augmentation", "paraphrastic"]
    notes = sorted(t.get_text() for t in ax.texts)
    assert notes == ["no augmentation: 2/2 predict nothing", "paraphrastic: 1/2 predict nothing"]
    for bad in (-1, 2.5, "0", True):
        (tmp_path / "bad.json").write_text(json.dumps({**points[0], "n_pred": bad}))
        with pytest.raises(InputError, match="n_pred"):
            read_points([tmp_path / "bad.json"])


def test_cli_point_trains_with_an_augmenters_examples(tiny_encoder, tmp_path):
    write_conll(toy(30, 0), tmp_path / "train.conll")
    write_conll(toy(10, 1), tmp_path / "test.conll", start=100)
    assert (
        main(
            [
                "frameid",
                "point",
                "--train",
                str(tmp_path / "train.conll"),
                "--test",
                str(tmp_path / "test.conll"),
                "--fraction",
                "0.5",
                "--seed",
                "2",
                "--augmenter",
                "geca",
                "--encoder",
                tiny_encoder,
                "--epochs",
                "1",
                "--device",
                "cpu",
                "--out",
                str(tmp_path / "p.json"),
            ]
        )
        == 0
    )
    point = json.loads((tmp_path / "p.json").read_text())
    assert (point["augmenter"], point["fraction"], point["seed"], point["train_sentences"]) == ("geca", 0.5, 2, 15)
    assert point["augmented_examples"] > 0
    assert point["n_gold"] == sum(len(s.triggers) for s in toy(10, 1))
    # No --dev: the point holds out a share of its sample for early stopping, then refits on all of it.
    assert point["dev"] == "held out: 0.15 of the full-text training sentences (seed 2)"
    assert point["refit"] is True and point["best_epoch"] == 1


def test_outputs_of_unknown_seeds_are_a_clear_error(dataset):
    from spanaug.core.errors import ArtifactError

    augmented, seeds, _ = dataset
    with pytest.raises(ArtifactError, match="'s2'"):
        paraphrastic_examples(augmented, seeds.slice(0, 1))
