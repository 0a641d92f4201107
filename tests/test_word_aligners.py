import csv
import json
import random
import stat
import sys

import pytest

from spanaug.cli.main import main
from spanaug.core.aligner_settings import FastAlignSettings
from spanaug.core.errors import ConfigError
from spanaug.core.metrics import span_metrics
from spanaug.evaluation.discalign import DiscAlignConfig, DiscAligner
from spanaug.evaluation.fastalign import fast_align
from spanaug.evaluation.word_alignment import alignment_scores, grow_diag_final_and, project_span
from spanaug.pipeline.aligner.instances import Instance, read_predictions
from spanaug.pipeline.aligner.word_aligned import AlignedPair

WORDS = [
    "Abby",
    "bought",
    "a",
    "car",
    "from",
    "Robin",
    "last",
    "week",
    "the",
    "company",
    "purchased",
    "steel",
    "three",
    "suppliers",
    "children",
    "walked",
]


def test_projection_takes_the_maximal_covered_span():
    links = {(0, 3), (1, 1), (2, 5), (4, 0), (4, 6)}
    assert project_span(links, (0, 1)) == (1, 3)  # reversed order
    assert project_span(links, (4, 4)) == (0, 6)  # a gap inside
    assert project_span(links, (3, 3)) is None  # no link
    assert project_span(links, (0, 4)) == (0, 6)


def test_grow_diag_final_and_by_hand():
    # Intersection {(0,0)}; (1,1) grows diagonally from it, then (1,2) because target 2 is unaligned.
    assert grow_diag_final_and({(0, 0), (1, 1)}, {(0, 0), (1, 2)}, 2, 3) == {(0, 0), (1, 1), (1, 2)}
    # Nothing grows; final-and adds the forward (3,3) whose ends are both unaligned, but not the
    # backward (2,3), since target 3 is aligned by then (grow-diag-final would add it).
    forward, backward = {(0, 0), (1, 1), (3, 3)}, {(0, 0), (1, 1), (2, 3)}
    assert grow_diag_final_and(forward, backward, 4, 4) == {(0, 0), (1, 1), (3, 3)}


def copy_pairs(n, seed):
    rng = random.Random(seed)
    return [tuple(rng.sample(WORDS, rng.randint(4, 8))) for _ in range(n)]


def test_fastalign_in_process_aligns_copies():
    sents = copy_pairs(150, 0)
    links = fast_align([(s, s) for s in sents[:20]], [(s, s) for s in sents[20:]])
    gold = [
        AlignedPair(str(n), list(s), list(s), {(i, i) for i in range(len(s))}, set()) for n, s in enumerate(sents[:20])
    ]
    scores = alignment_scores(gold, [links[g.key] for g in gold])
    assert scores["f1"] > 0.9, scores


def test_fastalign_subprocess_path_and_missing_binary(tmp_path):
    # A stand-in fast_align: aligns each line monotonically, and in reverse mode (-r) misses the last
    # word, so that symmetrisation has something to do.
    fake = tmp_path / "fast_align"
    fake.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
for line in open(args[args.index("-i") + 1]):
    src, tgt = (side.split() for side in line.split(" ||| "))
    n = min(len(src), len(tgt)) - ("-r" in args)
    print(" ".join(f"{{i}}-{{i}}" for i in range(n)))
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    sent = ("a", "b", "c")
    links = fast_align([(sent, sent)], cfg=FastAlignSettings(fast_align_bin=str(fake)))
    assert links[(sent, sent)] == {(0, 0), (1, 1), (2, 2)}  # the last link comes back in final-and
    with pytest.raises(ConfigError, match="fast_align_bin"):
        fast_align([(sent, sent)], cfg=FastAlignSettings(fast_align_bin=str(tmp_path / "missing")))


def test_discalign_learns_copy_alignment(tiny_encoder, tmp_path):
    train = [
        AlignedPair(str(n), list(s), list(s), {(i, i) for i in range(len(s))}, set())
        for n, s in enumerate(copy_pairs(120, 1))
    ]
    model = DiscAligner(DiscAlignConfig(encoder=tiny_encoder, projection=32), device="cpu")
    history = model.train(train, epochs=15, seed=0, learning_rate=3e-3, progress=False)
    assert history[-1] < history[0]
    test = [
        AlignedPair(str(n), list(s), list(s), {(i, i) for i in range(len(s))}, set())
        for n, s in enumerate(copy_pairs(30, 2))
    ]
    links = model.align([p.key for p in test])
    scores = alignment_scores(test, [links[p.key] for p in test])
    assert scores["f1"] > 0.8, scores
    model.save_pretrained(tmp_path / "m")
    again = DiscAligner.from_pretrained(tmp_path / "m", device="cpu")
    assert again.align(list(links)) == links


def write_copy_data(tmp_path, n, seed):
    """Gold word-aligned copy pairs and one-word span instances made from them."""
    sents = copy_pairs(n, seed)
    gold = [
        {
            "id": str(k),
            "source": " ".join(s),
            "target": " ".join(s),
            "sureAlign": " ".join(f"{i}-{i}" for i in range(len(s))),
            "possibleAlign": "",
        }
        for k, s in enumerate(sents)
    ]
    insts = [Instance(f"{k}:{i}", list(s), list(s), (i, i), (i, i)) for k, s in enumerate(sents) for i in (0, 2)]
    (tmp_path / "gold.json").write_text(json.dumps(gold))
    (tmp_path / "inst.jsonl").write_text("".join(json.dumps(i.as_json()) + "\n" for i in insts))
    return insts


def test_cli_discalign_and_fastalign_predictions(tiny_encoder, tmp_path):
    insts = write_copy_data(tmp_path, 60, 3)
    model = tmp_path / "disc"
    assert (
        main(
            [
                "baseline",
                "discalign",
                "train",
                "--gold",
                str(tmp_path / "gold.json"),
                "--encoder",
                tiny_encoder,
                "--out",
                str(model),
                "--epochs",
                "3",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    for argv in (["baseline", "discalign", "predict", "--model", str(model)], ["baseline", "fastalign"]):
        out = tmp_path / "pred.jsonl"
        assert (
            main(
                [
                    *argv,
                    "--instances",
                    str(tmp_path / "inst.jsonl"),
                    "--out",
                    str(out),
                    "--links-out",
                    str(tmp_path / "links.json"),
                ]
            )
            == 0
        )
        preds = read_predictions(out)
        assert set(preds) == {i.id for i in insts}
        assert len(json.loads((tmp_path / "links.json").read_text())) == 60
    fa = span_metrics([i.target_span for i in insts], [preds[i.id][0] for i in insts])
    assert fa["exact_f1"] > 0.8, fa


def test_compare_writes_tables_one_and_two(tiny_encoder, tmp_path):
    write_copy_data(tmp_path, 80, 4)
    out = tmp_path / "cmp"
    assert (
        main(
            [
                "baseline",
                "compare",
                "--instances",
                str(tmp_path / "inst.jsonl"),
                "--gold-pairs",
                str(tmp_path / "gold.json"),
                "--encoder",
                tiny_encoder,
                "--out-dir",
                str(out),
                "--epochs",
                "2",
                "--k",
                "1",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader((out / "comparison.csv").read_text().splitlines()))
    assert [r["system"] for r in rows] == ["FastAlign", "DiscAlign", "span aligner (ours)"]
    assert rows[0]["aer"] and rows[1]["aer"] and not rows[2]["aer"]
    assert (out / "comparison.png").is_file()
    summary = json.loads((out / "comparison.json").read_text())
    assert summary["gold_test_pairs"] == 16 and summary["test"] == 32
