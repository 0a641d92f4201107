import json

import pytest
from conftest import shared_file

from spanaug.cli.main import main
from spanaug.core.errors import InputError
from spanaug.evaluation.word_alignment import alignment_scores
from spanaug.pipeline.aligner.instances import read_instances
from spanaug.pipeline.aligner.word_aligned import (
    AlignedPair,
    instances_from_alignments,
    read_aligned_json,
    read_span_tsv,
)


def pair(src, tgt, sure, possible="", pid="p"):
    return {"id": pid, "source": src, "target": tgt, "sureAlign": sure, "possibleAlign": possible}


def spans(insts):
    return {(i.source_span, i.target_span) for i in insts}


def test_phrase_rule(tmp_path):
    # "bought" -> "purchased" (1:1, rewritten); "car" -> "car" (same text: no instance);
    # "last week" -> "seven days ago" is one block; "quickly" has no link (null instance).
    path = tmp_path / "a.json"
    path.write_text(
        json.dumps(
            [
                pair(
                    "Abby bought the car quickly last week",
                    "Abby purchased the car seven days ago",
                    "0-0 1-1 2-2 3-3 5-4 5-5 6-6 6-4",
                )
            ]
        )
    )
    insts = instances_from_alignments(read_aligned_json(path), null_share=0.5)
    assert spans(insts) == {((1, 1), (1, 1)), ((5, 6), (4, 6)), ((4, 4), None)}


def test_phrase_must_not_share_its_block_and_shorter_pairs_win(tmp_path):
    # "week" alone also lands on "days", which "last" links into: "last" and "week" only align as
    # the phrase; "big red" contains "big" -> "large", so the two-word phrase is dropped.
    path = tmp_path / "a.json"
    path.write_text(json.dumps([pair("big red last week", "large crimson final days", "0-0 1-1 2-2 2-3 3-3")]))
    insts = instances_from_alignments(read_aligned_json(path), null_share=0.0)
    assert spans(insts) == {((0, 0), (0, 0)), ((1, 1), (1, 1)), ((2, 3), (2, 3))}


def test_function_words_do_not_bound_phrases(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([pair("the dog", "a hound", "0-0 1-1")]))
    assert spans(instances_from_alignments(read_aligned_json(path), null_share=0.0)) == {((1, 1), (1, 1))}


def test_bad_links_name_the_item(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([pair("a b", "c d", "0-0"), pair("a b", "c d", "0-5", pid="q")]))
    with pytest.raises(InputError, match=r"a\.json, item 1: link '0-5' out of range"):
        read_aligned_json(path)


def test_alignment_scores_by_hand():
    gold = [AlignedPair("p", ["a", "b"], ["c", "d"], sure={(0, 0)}, possible={(0, 0), (1, 1)})]
    m = alignment_scores(gold, [{(0, 0), (1, 1), (1, 0)}])
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == 1.0
    assert m["aer"] == pytest.approx(1 - (1 + 2) / (3 + 1))


def test_span_tsv_exclusive_ends(tmp_path):
    path = tmp_path / "s.tsv"
    path.write_text(
        "source\ts\te\ttarget\ta\tb\nAbby bought a car\t1\t2\tAbby purchased a car\t1\t2\n"
        "Abby left\t1\t2\tAbby stayed\t-1\t-1\nx y\t1\t3\tz\t0\t1\n"
    )
    with pytest.raises(InputError, match=r"s\.tsv, line 4: source span"):
        read_span_tsv(path)
    path.write_text("\n".join(path.read_text().splitlines()[:3]) + "\n")
    assert spans(read_span_tsv(path)) == {((1, 1), (1, 1)), ((1, 1), None)}


@pytest.mark.integration
def test_cli_reproduces_shared_instances(tmp_path):
    gold = shared_file("edinburgh-train.gold.json")
    out = tmp_path / "i.jsonl"
    assert main(["align", "import-aligned", "--input", str(gold), "--out", str(out)]) == 0
    mine, ref = read_instances(out), read_instances(shared_file("edinburgh-train.spans.jsonl"))

    def key(i):
        return i.id.split(":", 1)[1], i.target_span

    aligned = {key(i) for i in mine if i.target_span}
    agreement = len(aligned & {key(i) for i in ref if i.target_span}) / len(aligned)
    assert agreement > 0.95
    assert sum(i.target_span is None for i in mine) / len(mine) == pytest.approx(0.10, abs=0.01)
