"""Long spans (``align long-spans``): held-out phrase pairs of several words, by length, for both kinds."""

import csv

from conftest import REPO

from spanaug.cli.main import main
from spanaug.core.aligner_settings import AlignerConfig, LongSpanSettings
from spanaug.evaluation.long_spans import copied, long_span_tests, run_long_spans, score_by_bin
from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext
from spanaug.pipeline.aligner.word_aligned import AlignedPair, pairs_from_bitext

PAIR = AlignedPair(
    "p",
    ["the", "old", "man", "bought", "a", "red", "car", "yesterday"],
    ["yesterday", "the", "old", "man", "purchased", "a", "red", "car"],
    {(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 0)},
    set(),
)


def test_long_span_tests_are_consistent_phrases_of_the_asked_lengths():
    tests = long_span_tests([PAIR], LongSpanSettings(min_len=3, max_len=4, per_pair=None), k=5)
    spans = {(i.source_span, i.target_span) for i in tests}
    assert ((0, 2), (1, 3)) in spans  # "the old man", copied and moved
    assert ((3, 5), (4, 6)) in spans  # "bought a red", rewritten
    assert all(3 <= e - s + 1 <= 4 for (s, e), _ in spans)
    # "yesterday" moved to the front: a phrase ending on it links across the sentence, no consistent pair
    assert not any(e == 7 for (s, e), _ in spans)
    capped = long_span_tests([PAIR], LongSpanSettings(min_len=3, max_len=4, per_pair=2), k=5)
    assert len(capped) == 2 and {(i.source_span, i.target_span) for i in capped} <= spans


def test_copied_and_the_bins():
    tests = long_span_tests([PAIR], LongSpanSettings(min_len=3, max_len=4, per_pair=None), k=5)
    by_span = {i.source_span: i for i in tests}
    assert copied(by_span[(0, 2)]) and not copied(by_span[(3, 5)])
    scored = [(i.target_span, 0.9) if copied(i) else (None, 0.2) for i in tests]
    rows = {r["spans"]: r for r in score_by_bin(tests, scored, LongSpanSettings(min_len=3, max_len=4))}
    assert rows["copied"]["exact_f1"] == 1.0 and rows["rewritten"]["exact_f1"] == 0.0
    assert rows["rewritten"]["pred_null_share"] == 1.0
    assert rows["3"]["n"] + rows["4"]["n"] == rows["all"]["n"] == len(tests)
    assert rows["all"]["gold_null_share"] == 0.0


def test_run_writes_both_trainings_of_each_kind(tiny_encoder, tmp_path):
    pairs = list(iter_pairs_from_bitext(REPO / "resources/demo/bitext.tsv"))
    instances = instances_from_bitext(pairs, prefix="b")
    aligned = pairs_from_bitext(pairs, prefix="b")
    setup = LongSpanSettings(min_len=2, max_len=4, epochs=1, test_share=0.3)
    rows = run_long_spans(instances, aligned, setup, AlignerConfig(encoder=tiny_encoder, k=2), ["paper"], tmp_path)
    with open(tmp_path / "long_spans.csv", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert [(r["training"], r["spans"]) for r in written] == [(r["training"], r["spans"]) for r in rows]
    assert {r["training"] for r in rows} == {"spans", "+phrases"} and {r["kind"] for r in rows} == {"paper"}
    all_rows = [r for r in rows if r["spans"] == "all"]
    assert len(all_rows) == 2 and all_rows[0]["n"] == all_rows[1]["n"] > 0
    # beside them, the held-out span instances (trigger-like) of each training
    assert [r["training"] for r in rows if r["spans"] == "span instances"] == ["spans", "+phrases"]
    assert all(0 <= r["exact_f1"] <= r["soft_f1"] + 1e-9 <= 1 + 1e-9 for r in rows)


def test_command_reads_several_files(tiny_encoder, tmp_path, capsys):
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.word_aligned import write_aligned_json

    pairs = list(iter_pairs_from_bitext(REPO / "resources/demo/bitext.tsv"))
    half = len(pairs) // 2
    for n, part in enumerate((pairs[:half], pairs[half:])):
        write_jsonl([i.as_json() for i in instances_from_bitext(part, prefix=f"b{n}")], tmp_path / f"i{n}.jsonl")
        write_aligned_json(pairs_from_bitext(part, prefix=f"b{n}"), tmp_path / f"g{n}.json")
    code = main(
        [
            "align",
            "long-spans",
            "--instances",
            str(tmp_path / "i0.jsonl"),
            str(tmp_path / "i1.jsonl"),
            "--gold-pairs",
            str(tmp_path / "g0.json"),
            str(tmp_path / "g1.json"),
            "--kinds",
            "paper",
            "--encoder",
            tiny_encoder,
            "--k",
            "2",
            "--min-len",
            "2",
            "--max-len",
            "3",
            "--epochs",
            "1",
            "--out-dir",
            str(tmp_path / "out"),
            "--device",
            "cpu",
        ]
    )
    assert code in (0, None)
    assert "| paper | +phrases | all |" in capsys.readouterr().out
    assert (tmp_path / "out/long_spans.json").is_file()
