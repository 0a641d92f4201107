"""Every reader and every stage's input, fed random bytes, random JSON values and mutated valid records
and rows (hypothesis). The only outcomes allowed: success whose output is itself valid, or the
project's own error (a SpanaugError) naming the file. Anything else (a traceback, a signal, an artifact
the next stage rejects, a file read back different from what was written) fails the test.

Examples are derandomised (the same cases on every run, so CI does not flake); set
SPANAUG_FUZZ_EXAMPLES=1000 SPANAUG_FUZZ_RANDOM=1 to hunt with fresh cases.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO, output, seed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanaug.core import artifacts, files
from spanaug.core.config import ConstraintSettings, ImportSettings, SeedSettings
from spanaug.core.errors import SpanaugError
from spanaug.core.evaluation_settings import SplitSettings
from spanaug.core.text import is_blank
from spanaug.core.validation import validate

EXAMPLES = int(os.environ.get("SPANAUG_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
#: Stages that train or plot run fewer cases.
FEW = settings(FUZZ, max_examples=max(5, EXAMPLES // 4))


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="spanaug-fuzz-") as tmp:
        yield Path(tmp)


def outcome(path: Path | str, run: Callable[[], Any]) -> Any:
    """``run()``'s result, or None when it raised a SpanaugError naming ``path``; any other exception fails."""
    try:
        return run()
    except SpanaugError as exc:
        assert str(path) in str(exc), f"the error does not name {path}: {exc}"
        return None


# ---------------------------------------------------------------- strategies

#: Bytes that break readers: encodings, separators, numbers out of range, JSON oddities.
SPECIAL = [
    b"",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\xff",
    b"\xef\xbb\xbf",
    b"\xed\xa0\x80",
    "\u2028".encode(),
    "\u200b".encode(),
    "²".encode(),
    "٣".encode(),
    b"-1",
    b"0",
    b"999999999999999999999",
    b"1e400",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b'"',
    b",",
    b"NaN",
    b"\\ud800",
    b"|||",
    b" ||| ",
    b"_",
    b"[",
    b"]",
    b"<",
    b"/>",
]


@st.composite
def mutated(draw: st.DrawFn, sample: bytes) -> bytes:
    """``sample`` with a few random insertions, deletions and overwrites."""
    data = bytearray(sample)
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data)))
        piece = draw(st.one_of(st.sampled_from(SPECIAL), st.binary(max_size=4)))
        op = draw(st.sampled_from(["insert", "delete", "overwrite"]))
        if op == "insert":
            data[pos:pos] = piece
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 12))]
        else:
            data[pos : pos + len(piece)] = piece
    return bytes(data)


def file_bytes(sample: str | bytes) -> st.SearchStrategy[bytes]:
    sample = sample.encode() if isinstance(sample, str) else sample
    return st.one_of(st.binary(max_size=300), mutated(sample), st.just(b""))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(["", " ", "\u2028", "\ud800", "_", "a b"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated_records(draw: st.DrawFn, records: list[dict[str, Any]], extra_keys: tuple[str, ...] = ()) -> list[Any]:
    """The records with one field of one of them deleted or set to a random JSON value (or the whole
    record replaced by one)."""
    records = json.loads(json.dumps(records))
    n = draw(st.integers(0, len(records) - 1))
    choice = draw(st.sampled_from(["set", "set", "set", "delete", "replace"]))
    if choice == "replace":
        records[n] = draw(JSON_VALUES)
    else:
        key = draw(st.sampled_from(sorted(records[n]) + list(extra_keys)))
        if choice == "delete":
            records[n].pop(key, None)
        else:
            records[n][key] = draw(JSON_VALUES)
    return records


def jsonl(records: list[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8", "surrogatepass")


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- valid samples


def conll_line(i: int, tok: str, lu: str = "_", frame: str = "_", sent: int = 0) -> str:
    return "\t".join([str(i), tok, "_", tok, "nn", "NN", str(sent), "_", "_", "_", "_", "_", lu, frame, "O"])


CONLL = (
    "\n".join(
        [
            conll_line(1, "He"),
            conll_line(2, "bought", "buy.v", "Commerce_buy"),
            conll_line(3, "it"),
            "",
            conll_line(1, "She", sent=1),
            conll_line(2, "gave", "give.v", "Giving", 1),
            conll_line(3, "up", "give.v", "Giving", 1),
            "",
        ]
    )
    + "\n"
)
SENTENCE_RECORDS = [
    {
        "id": "a",
        "tokens": ["He", "bought", "it"],
        "span": [1, 1],
        "frame": "Commerce_buy",
        "lexical_unit": "buy.v",
        "pos_tags": ["PRP", "VBD", "PRP"],
        "text": "He bought it",
        "document": "d1",
        "annotation_date": None,
        "frame_elements": [{"name": "Buyer", "span": [0, 1], "coreness": "Core"}, {"name": "Goods", "null": "DNI"}],
    },
    {"tokens": ["She", "gave", "up"], "span_start": 1, "span_end": 2, "label": "Giving"},
]
INSTANCE_RECORDS = [
    {
        "id": "i1",
        "source_tokens": ["He", "bought", "it"],
        "target_tokens": ["He", "purchased", "it"],
        "source_span": [1, 1],
        "target_span": [1, 1],
    },
    {
        "id": "i2",
        "source_tokens": ["She", "ran"],
        "target_tokens": ["She", "jogged", "off"],
        "source_span": [1, 1],
        "target_span": None,
    },
]
PREDICTION_RECORDS = [{"id": "i1", "target_span": [1, 1], "score": 0.9}, {"id": "i2", "target_span": None, "score": 0}]
EDINBURGH = [
    {
        "id": "p1",
        "source": "He bought it",
        "target": "He purchased it",
        "sureAlign": "0-0 1-1 2-2",
        "possibleAlign": "",
    },
    {"id": "p2", "source": "She ran", "target": "She jogged", "sureAlign": "0-0"},
]
SPAN_TSV = (
    "source\tss\tse\ttarget\tts\tte\nHe bought it\t1\t2\tHe purchased it\t1\t2\nShe ran\t1\t2\tShe left\t-1\t-1\n"
)
BITEXT = "He bought it\tHe purchased it\n# a comment\nShe ran\tShe jogged\n"
TEXT_PAIRS = "He bought it ||| He purchased it\nShe ran\tShe jogged\n"
GLOVE = "the 0.1 0.2 0.3\nbought 0.5 -0.1 2e-3\nit 1 2 3\n"
LEXICON = {"Commerce_buy": ["buy.v", "purchase.v"], "Giving": ["give.v"]}
KEY = (
    "item_id,candidate,kind,ref_id\nitem00000,1,output,s1#1\nitem00000,2,gold_in_frame,g1\n"
    "item00000,3,gold_out_of_frame,g2\n"
)
RESULTS = (
    "item_id,worker_id,candidate_1_score,candidate_2_score,candidate_3_score\nitem00000,w1,80,90,10\n"
    "item00000,w2,70,85,5\n"
)
JUDGMENTS = "output_id,score\ns1#1,80\ns1#2,0\n"
POINT = {
    "augmenter": "none",
    "fraction": 0.5,
    "seed": 0,
    "f1": 0.4,
    "train_sentences": 3,
    "augmented_examples": 0,
    "n_pred": 3,
}
SPEC = """frames:
  Commerce_buy:
    definition: A Buyer acquires Goods.
    lexical_units:
      buy.v:
        - Abby [bought] a car .
        - They [bought] bread .
  Giving:
    lexical_units:
      give.v:
        - She [gave] him a book .
fulltext:
  - corpus: Demo
    document: shop
    sentences:
      - She [bought|buy.v|Commerce_buy] bread and [gave|give.v|Giving] it away .
"""


def _rows_valid(rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    """A reader's rows must make a valid artifact: a reader that accepts what the artifact refuses
    would blame the output file for the input's fault."""
    if rows:
        validate(artifacts.records_to_table(rows, schema), "reader output")


def _instances_valid(insts: list) -> None:
    for inst in insts:
        for tokens, span in ((inst.source_tokens, inst.source_span), (inst.target_tokens, inst.target_span)):
            assert tokens and all(isinstance(t, str) and t.strip() for t in tokens)
            assert span is None or 0 <= span[0] <= span[1] < len(tokens)


def _read_conll(path: Path) -> None:
    from spanaug.pipeline.importers import read_conll

    _rows_valid(list(read_conll(path)), artifacts.SENTENCES)


def _read_jsonl(path: Path) -> None:
    from spanaug.pipeline.importers import read_jsonl_sentences

    _rows_valid(list(read_jsonl_sentences(path)), artifacts.SENTENCES)


def _import(fmt: str) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        from spanaug.pipeline.importers import import_corpus

        out = path.with_suffix(".parquet")
        import_corpus(ImportSettings(format=fmt, inputs=[str(path)]), out)
        assert artifacts.read_table(out, artifacts.SENTENCES).num_rows > 0

    return run


def _read_instances(path: Path) -> None:
    from spanaug.pipeline.aligner.instances import read_instances

    _instances_valid(read_instances(path))


def _read_predictions(path: Path) -> None:
    from spanaug.pipeline.aligner.instances import read_predictions

    for span, score in read_predictions(path, {"i1": 3, "i2": 3}).values():
        assert span is None or 0 <= span[0] <= span[1]
        assert score is None or isinstance(score, (int, float))


def _read_edinburgh(path: Path) -> None:
    from spanaug.pipeline.aligner.word_aligned import instances_from_alignments, read_aligned_json

    pairs = read_aligned_json(path)
    for p in pairs:
        assert all(0 <= i < len(p.source) and 0 <= j < len(p.target) for i, j in p.possible)
    _instances_valid(instances_from_alignments(pairs))


def _read_span_tsv(path: Path) -> None:
    from spanaug.pipeline.aligner.word_aligned import read_span_tsv

    _instances_valid(read_span_tsv(path))


def _read_bitext(path: Path) -> None:
    from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext

    _instances_valid(instances_from_bitext(iter_pairs_from_bitext(path)))


def _read_text_pairs(path: Path) -> None:
    from spanaug.evaluation.fastalign import check_pairs, read_text_pairs

    check_pairs(read_text_pairs(path), "text pairs")


def _read_glove(path: Path) -> None:
    import math

    from spanaug.downstream.frameid.model import glove_dimension, read_glove

    dim = glove_dimension(path)
    for vec in read_glove(path, None, dim).values():
        assert vec.shape == (dim,) and all(math.isfinite(x) for x in vec.tolist())


def _read_lexicon(path: Path) -> None:
    from spanaug.pipeline.framenet import read_lexicon

    lexicon = read_lexicon(path)
    assert all(isinstance(lu, str) for lus in lexicon.values() for lu in lus)


def _read_key(path: Path) -> None:
    from spanaug.evaluation.human_eval import read_key

    read_key(path)


def _import_results(path: Path) -> None:
    from spanaug.evaluation.human_eval import import_judgments

    key = write(path.with_name("key.csv"), KEY.encode())
    import_judgments(path, key, path.parent / "human")
    files.read_csv(path.parent / "human" / "judgments.csv", ("output_id", "score"))


def _read_judgments(path: Path) -> None:
    from spanaug.evaluation.filtering import read_judgments

    assert set(read_judgments(path).values()) <= {0, 1}


def _read_points(path: Path) -> None:
    from spanaug.downstream.augmenter_comparison import curves, read_points

    curves(read_points([path]))


def _corpus_spec(path: Path) -> None:
    """An accepted spec must give a release that imports: the writer never leaves a broken release."""
    from spanaug.demo.framenet_writer import write_release_from_yaml
    from spanaug.pipeline.importers import read_framenet

    root = write_release_from_yaml(path, path.parent / "release")
    _rows_valid(list(read_framenet(root)), artifacts.SENTENCES)


def _split_conll(path: Path) -> None:
    from spanaug.downstream.frameid.data import read_training_file, split_conll

    counts = split_conll(path, path.parent / "split", SplitSettings(dev_share=0.0, test_share=0.5))
    for name, n in counts.items():
        if n:
            read_training_file(path.parent / "split" / f"{name}.conll")


TEXT_READERS: dict[str, tuple[bytes, Callable[[Path], None], str]] = {
    "conll": (CONLL.encode(), _read_conll, "x.conll"),
    "import conll": (CONLL.encode(), _import("conll"), "x.conll"),
    "frameid conll and its split": (CONLL.encode(), _split_conll, "x.conll"),
    "jsonl sentences": (jsonl(SENTENCE_RECORDS), _read_jsonl, "x.jsonl"),
    "import jsonl": (jsonl(SENTENCE_RECORDS), _import("jsonl"), "x.jsonl"),
    "span instances": (jsonl(INSTANCE_RECORDS), _read_instances, "x.jsonl"),
    "predictions": (jsonl(PREDICTION_RECORDS), _read_predictions, "x.jsonl"),
    "edinburgh json": (json.dumps(EDINBURGH).encode(), _read_edinburgh, "x.json"),
    "span tsv": (SPAN_TSV.encode(), _read_span_tsv, "x.tsv"),
    "bitext tsv": (BITEXT.encode(), _read_bitext, "x.tsv"),
    "fastalign text pairs": (TEXT_PAIRS.encode(), _read_text_pairs, "x.txt"),
    "glove": (GLOVE.encode(), _read_glove, "x.txt"),
    "lexicon json": (json.dumps(LEXICON).encode(), _read_lexicon, "x.json"),
    "task key csv": (KEY.encode(), _read_key, "x.csv"),
    "judgments csv": (JUDGMENTS.encode(), _read_judgments, "x.csv"),
    "point json": (json.dumps(POINT).encode(), _read_points, "x.json"),
    "corpus spec yaml": (SPEC.encode(), _corpus_spec, "x.yaml"),
}


@pytest.mark.parametrize("name", sorted(TEXT_READERS))
def test_text_readers_on_random_and_mutated_bytes(name: str) -> None:
    sample, read, file_name = TEXT_READERS[name]

    @FUZZ
    @given(data=file_bytes(sample))
    def check(data: bytes) -> None:
        with scratch() as tmp:
            path = write(tmp / file_name, data)
            outcome(path, lambda: read(path))

    check()


@FEW
@given(data=file_bytes(RESULTS))
def test_crowd_results_on_random_and_mutated_bytes(data: bytes) -> None:
    with scratch() as tmp:
        path = write(tmp / "results.csv", data)
        outcome(path, lambda: _import_results(path))


JSON_READERS: dict[str, tuple[Callable[..., st.SearchStrategy], Callable[[Path], None], str]] = {
    "jsonl sentences": (
        lambda: mutated_records(SENTENCE_RECORDS, ("span", "frame", "id")).map(jsonl),
        _read_jsonl,
        "x.jsonl",
    ),
    "import jsonl": (lambda: mutated_records(SENTENCE_RECORDS).map(jsonl), _import("jsonl"), "x.jsonl"),
    "span instances": (lambda: mutated_records(INSTANCE_RECORDS).map(jsonl), _read_instances, "x.jsonl"),
    "predictions": (lambda: mutated_records(PREDICTION_RECORDS).map(jsonl), _read_predictions, "x.jsonl"),
    "edinburgh json": (
        lambda: st.one_of(JSON_VALUES, mutated_records(EDINBURGH)).map(
            lambda v: json.dumps(v).encode("utf-8", "surrogatepass")
        ),
        _read_edinburgh,
        "x.json",
    ),
    "lexicon json": (
        lambda: st.one_of(JSON_VALUES, st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=3)).map(
            lambda v: json.dumps(v).encode("utf-8", "surrogatepass")
        ),
        _read_lexicon,
        "x.json",
    ),
    "point json": (
        lambda: mutated_records([POINT]).map(lambda v: json.dumps(v[0]).encode("utf-8", "surrogatepass")),
        _read_points,
        "x.json",
    ),
}


@pytest.mark.parametrize("name", sorted(JSON_READERS))
def test_json_readers_on_random_values(name: str) -> None:
    strategy, read, file_name = JSON_READERS[name]

    @FUZZ
    @given(data=strategy())
    def check(data: bytes) -> None:
        with scratch() as tmp:
            path = write(tmp / file_name, data)
            outcome(path, lambda: read(path))

    check()


@FUZZ
@given(
    filters=st.one_of(
        JSON_VALUES,
        st.dictionaries(
            st.sampled_from(["lax", "x"]),
            st.dictionaries(
                st.sampled_from(["max_iteration", "max_paraphrase_score", "min_aligner_score", "other"]),
                JSON_VALUES,
                max_size=3,
            ),
            max_size=2,
        ),
    )
)
def test_filters_of_any_json_are_checked_before_arrow_sees_them(filters: Any) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.filtering import check_filters, heuristic_mask

    table = artifacts.records_to_table(
        [{"output_id": "s#1", **output("s", 1, ["a", "b"], 0, 0, "F", "a.v", "a")}], artifacts.AUGMENTED
    )
    try:
        checked = check_filters(filters)
    except ConfigError as exc:
        assert str(exc).startswith("filters: ")
        return
    for bounds in checked.values():
        heuristic_mask(table, bounds)


def _float_settings() -> list[tuple[type, str]]:
    """(settings class, field) of every float setting of a section that its defaults make (so one
    field can be changed alone): found from the dataclasses, new ones included."""
    import dataclasses
    import typing

    from spanaug.core.settings import Settings

    def subclasses(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    found = []
    for cls in dict.fromkeys(subclasses(Settings)):
        try:
            cls()
        except Exception:  # a section with required settings: covered by test_config's schema walk
            continue
        hints = typing.get_type_hints(cls)
        found += [
            (cls, f.name) for f in dataclasses.fields(cls) if float in (hints[f.name], *typing.get_args(hints[f.name]))
        ]
    return found


FLOAT_SETTINGS = _float_settings()


@FUZZ
@given(
    where=st.sampled_from(FLOAT_SETTINGS),
    number=st.one_of(st.floats(), st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -0.0])),
)
def test_a_float_setting_is_finite_or_refused_naming_it(where: tuple[type, str], number: float) -> None:
    """Any float, NaN and infinities included, in any float setting: the settings hold a finite number
    or the setting is refused by name (never a NaN that passes every bound)."""
    import math

    from spanaug.core.errors import ConfigError

    cls, name = where
    try:
        made = cls(**{name: number})
    except ConfigError as exc:
        assert str(exc).startswith(f"{name}: "), exc
        assert math.isfinite(number) or "is not a finite number" in str(exc), exc
        return
    assert math.isfinite(getattr(made, name)), (cls.__name__, name, number)


def test_the_float_settings_drawn_from_are_many():
    assert len(FLOAT_SETTINGS) > 30


# ---------------------------------------------------------------- the valid side: well-formed inputs are read

# A reader that refused everything would pass every test above. The tests below hold the other side:
# the unchanged samples that the mutations start from, and well-formed inputs drawn by hypothesis,
# must be read without an error and give back what was written.


@pytest.mark.parametrize("name", sorted(TEXT_READERS))
def test_text_readers_accept_their_valid_sample(name: str) -> None:
    sample, read, file_name = TEXT_READERS[name]
    with scratch() as tmp:
        read(write(tmp / file_name, sample))


def test_crowd_results_accept_their_valid_sample() -> None:
    with scratch() as tmp:
        _import_results(write(tmp / "results.csv", RESULTS.encode()))


#: Tokens as corpora hold them: no whitespace or control characters; '#' would open a CoNLL comment.
TOKEN = st.text(st.characters(categories=("L", "N", "P", "S"), exclude_characters="#_"), min_size=1, max_size=6)
NAME = st.from_regex(r"[A-Z][a-z]{0,6}(_[a-z]{1,5})?", fullmatch=True)
LU = st.from_regex(r"[a-z]{1,6}\.[nvaj]", fullmatch=True)


@st.composite
def sentences(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed annotated sentence: tokens, an inclusive trigger span, a frame and its LU."""
    tokens = draw(st.lists(TOKEN, min_size=1, max_size=8))
    start = draw(st.integers(0, len(tokens) - 1))
    end = draw(st.integers(start, len(tokens) - 1))
    return {"tokens": tokens, "span_start": start, "span_end": end, "frame": draw(NAME), "lexical_unit": draw(LU)}


def _as_read(rows: list[dict[str, Any]]) -> list[tuple]:
    return [(r["tokens"], r["span_start"], r["span_end"], r["frame"], r["lexical_unit"]) for r in rows]


def _conll_text(sents: list[dict[str, Any]]) -> str:
    blocks = []
    for n, sent in enumerate(sents):
        lines = []
        for i, tok in enumerate(sent["tokens"]):
            trigger = sent["span_start"] <= i <= sent["span_end"]
            lu, frame = (sent["lexical_unit"], sent["frame"]) if trigger else ("_", "_")
            lines.append(conll_line(i + 1, tok, lu, frame, n))
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


@FUZZ
@given(sents=st.lists(sentences(), min_size=1, max_size=4))
def test_valid_sentences_round_trip_through_jsonl_conll_and_the_imported_parquet(sents: list[dict[str, Any]]) -> None:
    from spanaug.pipeline.importers import import_corpus, read_conll, read_jsonl_sentences

    records = [
        {"id": f"s{n}", "tokens": s["tokens"], "span": [s["span_start"], s["span_end"]], **s}
        for n, s in enumerate(sents)
    ]
    for record in records:
        del record["span_start"], record["span_end"]
    with scratch() as tmp:
        as_jsonl = write(tmp / "x.jsonl", jsonl(records))
        assert _as_read(list(read_jsonl_sentences(as_jsonl))) == _as_read(sents)
        as_conll = write(tmp / "x.conll", _conll_text(sents).encode())
        assert _as_read(list(read_conll(as_conll))) == _as_read(sents)
        import_corpus(ImportSettings(format="jsonl", inputs=[str(as_jsonl)], max_tokens=None), tmp / "s.parquet")
        assert _as_read(artifacts.read_table(tmp / "s.parquet", artifacts.SENTENCES).to_pylist()) == _as_read(sents)


@st.composite
def instances(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """A well-formed span instance (the target span may be null: no counterpart)."""
    source, target = draw(st.lists(TOKEN, min_size=1, max_size=6)), draw(st.lists(TOKEN, min_size=1, max_size=6))
    s = draw(st.integers(0, len(source) - 1))
    t = draw(st.integers(0, len(target) - 1))
    target_span = draw(st.one_of(st.none(), st.integers(t, len(target) - 1).map(lambda e: [t, e])))
    return {
        "id": f"i{n}",
        "source_tokens": source,
        "target_tokens": target,
        "source_span": [s, draw(st.integers(s, len(source) - 1))],
        "target_span": target_span,
    }


@FUZZ
@given(records=st.integers(1, 4).flatmap(lambda k: st.tuples(*(instances(n) for n in range(k)))))
def test_valid_span_instances_and_predictions_round_trip(records: tuple[dict[str, Any], ...]) -> None:
    from spanaug.pipeline.aligner.instances import read_instances, read_predictions

    with scratch() as tmp:
        assert [i.as_json() for i in read_instances(write(tmp / "x.jsonl", jsonl(list(records))))] == list(records)
        preds = [{"id": r["id"], "target_span": r["target_span"], "score": 0.5} for r in records]
        lengths = {r["id"]: len(r["target_tokens"]) for r in records}
        read = read_predictions(write(tmp / "p.jsonl", jsonl(preds)), lengths)
        assert {k: (list(span) if span else None) for k, (span, _) in read.items()} == {
            r["id"]: r["target_span"] for r in records
        }


@st.composite
def aligned_pairs(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """A well-formed Edinburgh++ record: sure links, and possible ones, inside both sentences."""
    source, target = draw(st.lists(TOKEN, min_size=1, max_size=6)), draw(st.lists(TOKEN, min_size=1, max_size=6))
    link = st.tuples(st.integers(0, len(source) - 1), st.integers(0, len(target) - 1))
    sure, possible = draw(st.sets(link, max_size=4)), draw(st.sets(link, max_size=4))
    return {
        "id": f"p{n}",
        "source": " ".join(source),
        "target": " ".join(target),
        "sureAlign": " ".join(f"{i}-{j}" for i, j in sorted(sure)),
        "possibleAlign": " ".join(f"{i}-{j}" for i, j in sorted(possible)),
    }


@FUZZ
@given(records=st.integers(1, 3).flatmap(lambda k: st.tuples(*(aligned_pairs(n) for n in range(k)))))
def test_valid_word_aligned_pairs_round_trip(records: tuple[dict[str, Any], ...]) -> None:
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    def links(text: str) -> set[tuple[int, int]]:
        return {tuple(map(int, link.split("-"))) for link in text.split()}

    with scratch() as tmp:
        pairs = read_aligned_json(write(tmp / "x.json", json.dumps(list(records)).encode()))
    assert [(p.id, p.source, p.target, p.sure, p.possible) for p in pairs] == [
        (
            r["id"],
            r["source"].split(),
            r["target"].split(),
            links(r["sureAlign"]),
            links(r["possibleAlign"]) | links(r["sureAlign"]),
        )
        for r in records
    ]


@FUZZ
@given(lexicon=st.dictionaries(NAME, st.lists(LU, min_size=1, max_size=4), min_size=1, max_size=4))
def test_a_valid_lexicon_round_trips(lexicon: dict[str, list[str]]) -> None:
    from spanaug.pipeline.framenet import read_lexicon

    with scratch() as tmp:
        assert read_lexicon(write(tmp / "x.json", json.dumps(lexicon).encode())) == {
            frame: set(lus) for frame, lus in lexicon.items()
        }


@FUZZ
@given(
    augmenter=NAME,
    fraction=st.floats(0, 1, exclude_min=True),
    seed_=st.integers(0, 2**31),
    f1=st.floats(0, 1),
)
def test_a_valid_point_result_is_read_back(augmenter: str, fraction: float, seed_: int, f1: float) -> None:
    from spanaug.downstream.augmenter_comparison import read_points

    point = {**POINT, "augmenter": augmenter, "fraction": fraction, "seed": seed_, "f1": f1}
    with scratch() as tmp:
        assert read_points([write(tmp / "x.json", json.dumps(point).encode())]) == [point]


@FUZZ
@given(sents=st.lists(sentences(), min_size=1, max_size=6))
def test_valid_sentences_and_chains_round_trip_through_parquet(sents: list[dict[str, Any]]) -> None:
    seeds = [
        seed(f"s{n}", s["tokens"], s["span_start"], s["span_end"], s["frame"], s["lexical_unit"])
        for n, s in enumerate(sents)
    ]
    chain = [
        output(f"s{n}", 1, s["tokens"], s["span_start"], s["span_end"], s["frame"], s["lexical_unit"], "x")
        for n, s in enumerate(sents)
    ]
    with scratch() as tmp:
        for rows, schema in ((seeds, artifacts.SENTENCES), (chain, artifacts.CHAIN)):
            artifacts.write_table(rows, tmp / "x.parquet", schema)
            # compared as the schema holds the values (scores are float32)
            assert artifacts.read_table(tmp / "x.parquet", schema).equals(artifacts.records_to_table(rows, schema))


# ---------------------------------------------------------------- artifacts and the stages that read them


SEEDS = [seed(f"s{i}", ["They", "bought", "it", str(i)], 1, 1, "Commerce_buy", "buy.v") for i in range(3)]
SEEDS[1]["pos_tags"] = ["PRP", "VBD", "PRP", "CD"]
#: Frame elements: an FE on the trigger next to another, a null instantiation; none; not annotated.
FES = [
    {"name": "Buyer", "start": 0, "end": 0, "null_type": None, "coreness": "Core"},
    {"name": "Manner", "start": 1, "end": 1, "null_type": None, "coreness": None},
    {"name": "Goods", "start": 2, "end": 3, "null_type": None, "coreness": "Core"},
    {"name": "Seller", "start": None, "end": None, "null_type": "INI", "coreness": "Core"},
]
SEEDS[0]["frame_elements"], SEEDS[1]["frame_elements"] = FES, []
CHAIN = [
    output(f"s{i}", 1, ["They", "acquired", "it", str(i)], 1, 1, "Commerce_buy", "buy.v", "acquire") for i in range(3)
]
CHAIN[2].update(aligned_start=None, aligned_end=None, aligned_text=None, aligned_lemma=None)
CHAIN[0]["frame_elements"] = FES
REQUEST = {k: v for k, v in CHAIN[0].items() if k in artifacts.REQUESTS.names}
REQUEST.update(
    source_tokens=["They", "bought", "it"],
    source_text="They bought it",
    source_span_start=1,
    source_span_end=1,
    source_frame_elements=FES[:2],
)
PARAPHRASES = [
    {
        **REQUEST,
        "beam_rank": r,
        "paraphrase_tokens": ["They", "got", "it"],
        "paraphrase_text": "They got it",
        "paraphrase_score": 0.5 + r,
    }
    for r in range(2)
]
ALIGNED = [
    {**p, "aligned_start": 1, "aligned_end": 1, "aligner_score": 0.9 - p["beam_rank"] / 10, "frame_elements": FES[:2]}
    for p in PARAPHRASES
]
AUGMENTED = [{"output_id": f"{r['seed_id']}#1", **r} for r in CHAIN]
EXAMPLE_ROWS = [
    {
        "example_id": "x:1",
        "augmenter": "lexsub",
        "seed_key": "theyboughtit",
        "tokens": ["They", "got", "it"],
        "text": "They got it",
        "span_start": 1,
        "span_end": 1,
        "trigger": "got",
        "frame": "Commerce_buy",
        "source_trigger": "bought",
    }
]
VALID = {
    "sentences": SEEDS,
    "chain": CHAIN,
    "requests": [REQUEST],
    "paraphrases": PARAPHRASES,
    "aligned": ALIGNED,
    "augmented": AUGMENTED,
    "examples": EXAMPLE_ROWS,
}


def many(name: str, copies: int) -> list[dict[str, Any]]:
    """``copies`` of the valid rows of an artifact, with distinct ids (ids must be unique per file)."""
    rows = []
    for k in range(copies):
        for row in json.loads(json.dumps(VALID[name])):
            for key in ("sentence_id", "seed_id", "example_id"):
                if key in row:
                    row[key] = f"{row[key]}-{k}"
            if "output_id" in row:
                row["output_id"] = f"{row['seed_id']}#{row['iteration']}"
            rows.append(row)
    return rows


def cell_values(field: pa.Field) -> st.SearchStrategy:
    """Values of a column's type, the odd ones often: negative and huge indices, blank strings, empty
    lists, NaN, null."""
    t = field.type
    if pa.types.is_integer(t):
        bits = t.bit_width - 1
        values = st.one_of(
            st.sampled_from([-1, 0, 1, 2, 3, 4, 2**bits - 1, -(2**bits)]), st.integers(-(2**bits), 2**bits - 1)
        )
    elif pa.types.is_floating(t):
        values = st.floats(width=32) if t == pa.float32() else st.floats()
    elif pa.types.is_list(t) and pa.types.is_struct(t.value_type):  # frame elements
        index = st.one_of(st.sampled_from([-1, 0, 1, 2, 3, 4]), st.none())
        label = st.one_of(st.sampled_from(["", " ", "\u200b", "Buyer", "INI", "Core", "XNI"]), st.none())
        item = st.fixed_dictionaries(
            {"name": label, "start": index, "end": index, "null_type": label, "coreness": label}
        )
        values = st.lists(st.one_of(item, st.none()), max_size=4)
    elif pa.types.is_list(t):
        values = st.lists(
            st.one_of(st.sampled_from(["", " ", "\t", "a", "b", "bought", "\u2028"]), st.text(max_size=3), st.none()),
            max_size=5,
        )
    else:
        values = st.one_of(st.sampled_from(["", " ", "\u3000", "x", "buy.v", "s1", "s#1"]), st.text(max_size=5))
    return st.one_of(values, st.none())


@st.composite
def mutated_rows(draw: st.DrawFn, name: str) -> list[dict[str, Any]]:
    rows = json.loads(json.dumps(VALID[name]))
    schema = artifacts.SCHEMAS[name]
    for _ in range(draw(st.integers(1, 2))):
        field = draw(st.sampled_from(list(schema)))
        rows[draw(st.integers(0, len(rows) - 1))][field.name] = draw(cell_values(field))
    return rows


def write_unchecked(rows: list[dict[str, Any]], schema: pa.Schema, path: Path) -> Path:
    """Write rows of the schema's types without spanaug's checks (nulls allowed everywhere), as a
    foreign or damaged writer might."""
    loose = pa.schema([f.with_nullable(True) for f in schema])
    pq.write_table(pa.Table.from_pylist(rows, schema=loose), path)
    return path


def _outputs_valid(*paths_and_schemas: tuple[Path, pa.Schema]) -> None:
    for path, schema in paths_and_schemas:
        if path.exists():
            artifacts.read_table(path, schema)


def _sentences_stage(path: Path) -> None:
    from spanaug.downstream.frameid.data import read_training_file
    from spanaug.pipeline.iterations import init_shards
    from spanaug.pipeline.seeds import select_seeds

    shards = [path.with_name(f"shard{j}.parquet") for j in range(2)]
    init_shards(path, shards)
    _outputs_valid(*((s, artifacts.CHAIN) for s in shards))
    select_seeds(artifacts.read_table(path, artifacts.SENTENCES), SeedSettings(mode="from_scratch", lus_per_frame=1))
    read_training_file(path)


def _chain_stage(path: Path) -> None:
    from spanaug.pipeline.constraints import expand_stage
    from spanaug.pipeline.iterations import assemble

    expand_stage(path, path.with_name("req.parquet"), 2, ConstraintSettings())
    assemble([path], path.with_name("aug.parquet"))
    _outputs_valid(
        (path.with_name("req.parquet"), artifacts.REQUESTS), (path.with_name("aug.parquet"), artifacts.AUGMENTED)
    )
    for row in artifacts.read_table(path.with_name("req.parquet"), artifacts.REQUESTS).to_pylist():
        assert row["constraints"]  # never an unconstrained paraphrase


def _aligned_stage(path: Path) -> None:
    from spanaug.pipeline.iterations import select_stage

    select_stage(path, path.with_name("chain.parquet"))
    out = artifacts.read_table(path.with_name("chain.parquet"), artifacts.CHAIN).to_pylist()
    assert all(r["aligned_text"] for r in out if r["aligned_start"] is not None)


def _augmented_stage(path: Path) -> None:
    from spanaug.core.tagging import LexiconTagger
    from spanaug.downstream.augmenters import chain_members, lexsub_examples, paraphrastic_examples
    from spanaug.downstream.frameid.data import read_training_file
    from spanaug.evaluation.filtering import filter_stage
    from spanaug.evaluation.human_eval import export_task
    from spanaug.evaluation.statistics import write_stats
    from spanaug.pipeline.aligner.training_data import graph_instances

    seeds = path.with_name("seeds.parquet")
    artifacts.write_table(SEEDS, seeds, artifacts.SENTENCES)
    filter_stage(path, seeds, path.parent / "filtering")
    aug, seed_table = artifacts.read_table(path, artifacts.AUGMENTED), artifacts.read_table(seeds, artifacts.SENTENCES)
    artifacts.write_table(paraphrastic_examples(aug, seed_table), path.with_name("p.parquet"), artifacts.EXAMPLES)
    artifacts.write_table(
        lexsub_examples(aug, seed_table, LexiconTagger())[0], path.with_name("l.parquet"), artifacts.EXAMPLES
    )
    _instances_valid(graph_instances(chain_members(aug, seed_table))[0])
    read_training_file(path)
    write_stats(path, seeds, path.with_name("stats.json"), path.with_name("stats.csv"))
    with contextlib.suppress(SpanaugError):  # too few outputs for a task is its own (named) error
        export_task(path, seeds, path.with_name("task.csv"), path.with_name("key.csv"), 2, 0)


def _examples_stage(path: Path) -> None:
    from spanaug.downstream.frameid.data import read_training_file

    read_training_file(path)


def _read_only(name: str) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        list(artifacts.iter_batches(path, artifacts.SCHEMAS[name], batch_size=1))

    return run


STAGES = {
    "sentences": _sentences_stage,
    "chain": _chain_stage,
    "aligned": _aligned_stage,
    "augmented": _augmented_stage,
    "examples": _examples_stage,
    "requests": _read_only("requests"),
    "paraphrases": _read_only("paraphrases"),
}


@pytest.mark.parametrize("name", sorted(STAGES))
def test_stages_on_mutated_rows(name: str) -> None:
    stage = STAGES[name]
    few = name == "augmented"  # filters, statistics and augmenters: the slow one

    @(FEW if few else FUZZ)
    @given(rows=mutated_rows(name))
    def check(rows: list[dict[str, Any]]) -> None:
        with scratch() as tmp:
            path = write_unchecked(rows, artifacts.SCHEMAS[name], tmp / f"{name}.parquet")
            outcome(path, lambda: stage(path))

    check()


@FEW
@given(rows=mutated_rows("paraphrases"))
def test_align_stage_on_mutated_rows(rows: list[dict[str, Any]], tiny_aligner: Path) -> None:
    from spanaug.pipeline.aligner.stage import align_stage

    with scratch() as tmp:
        path = write_unchecked(rows, artifacts.PARAPHRASES, tmp / "para.parquet")
        if (
            outcome(
                path,
                lambda: align_stage(
                    tiny_aligner, path, tmp / "al.parquet", device="cpu", stats_path=tmp / "stats.json"
                ),
            )
            is not None
        ):
            _outputs_valid((tmp / "al.parquet", artifacts.ALIGNED))


@pytest.mark.parametrize("name", ["sentences", "chain", "aligned"])
def test_damaged_parquet_is_an_error_or_reads_back_unchanged(name: str) -> None:
    """Bytes overwritten anywhere in a Parquet file: an error naming it, or the same table (page
    checksums catch damaged data; no damage may change values silently)."""
    with scratch() as tmp:
        clean = tmp / "clean.parquet"
        artifacts.write_table(many(name, 50), clean, artifacts.SCHEMAS[name])
        original, expected = clean.read_bytes(), artifacts.read_table(clean, artifacts.SCHEMAS[name])

    @FUZZ
    @given(data=mutated(original) | st.binary(max_size=200).map(lambda b: original[: len(original) // 2] + b))
    def check(data: bytes) -> None:
        with scratch() as tmp:
            path = write(tmp / "damaged.parquet", data)
            table = outcome(path, lambda: artifacts.read_table(path, artifacts.SCHEMAS[name]))
            if table is not None:
                assert table.equals(expected), "a damaged file read back different values without an error"

    check()


# ---------------------------------------------------------------- FrameNet releases


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import yaml

    from spanaug.demo.framenet_writer import write_release

    return write_release(yaml.safe_load(SPEC), tmp_path_factory.mktemp("fuzz_release") / "fndata")


def test_a_damaged_release_file_is_the_file_named(release: Path) -> None:
    """One file of a release damaged: the import succeeds with valid rows, or its error names that
    file (NLTK loads lazily, so frame and index files fail while an LU file is read)."""
    import shutil

    from spanaug.pipeline.importers import read_framenet

    names = sorted(str(p.relative_to(release)) for p in release.rglob("*.xml"))

    @FUZZ
    @given(name=st.sampled_from(names), data=st.data())
    def check(name: str, data: st.DataObject) -> None:
        with scratch() as tmp:
            root = Path(shutil.copytree(release, tmp / "fndata"))
            victim = root / name
            victim.write_bytes(data.draw(file_bytes(victim.read_bytes()), label="bytes"))
            rows = outcome(victim, lambda: list(read_framenet(root)))
            if rows is not None:
                _rows_valid(rows, artifacts.SENTENCES)

    check()


# ---------------------------------------------------------------- fast_align, in a process of its own

_FASTALIGN_WORKER = """
import json, sys
from spanaug.core.errors import SpanaugError
from spanaug.evaluation.fastalign import fast_align
for line in sys.stdin:
    pairs = [tuple(tuple(side) for side in pair) for pair in json.loads(line)]
    try:
        fast_align(pairs, ())
        print("ok", flush=True)
    except SpanaugError as exc:
        print("error", exc, flush=True)
"""


@pytest.fixture(scope="module")
def fastalign_worker() -> Iterator[subprocess.Popen]:
    worker = subprocess.Popen(
        [sys.executable, "-c", _FASTALIGN_WORKER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        encoding="utf-8",
        errors="surrogatepass",
    )
    yield worker
    worker.stdin.close()
    worker.wait(timeout=60)


TOKENS = st.lists(
    st.one_of(
        st.sampled_from(["", " ", "\t", "\n", "\x00", "a\x00b", "|||", "a b", "\u2028", "the", "a"]),
        st.text(max_size=4),
    ),
    max_size=4,
)


@FUZZ
@given(pairs=st.lists(st.tuples(TOKENS, TOKENS), min_size=1, max_size=4))
def test_fast_align_never_crashes_the_process(pairs: list, fastalign_worker: subprocess.Popen) -> None:
    """Tokens of every kind reach fast_align through its checks: an error, or links; never signal 11."""
    good = [[["he", "bought", "it"], ["he", "purchased", "it"]]]
    fastalign_worker.stdin.write(json.dumps(good + [list(p) for p in pairs]) + "\n")
    fastalign_worker.stdin.flush()
    reply = fastalign_worker.stdout.readline()
    assert reply, f"the fast_align process died (exit {fastalign_worker.wait(timeout=30)}) on {pairs!r}"
    blank = any(not side or any(is_blank(t) for t in side) for pair in pairs for side in pair)
    assert reply.startswith("error" if blank else "ok"), reply


# ---------------------------------------------------------------- the command line


def _cli_cases(tmp: Path) -> list[tuple[list[str], Path]]:
    latin1 = write(tmp / "latin1.conll", CONLL.replace("He", "Hé").encode("latin-1"))
    blank = write(tmp / "blank.jsonl", jsonl([{**INSTANCE_RECORDS[0], "source_tokens": [" ", ""]}]))
    damaged = tmp / "aligned.parquet"
    artifacts.write_table(many("aligned", 200), damaged, artifacts.ALIGNED)
    data = bytearray(damaged.read_bytes())
    data[len(data) // 3 : len(data) // 3 + 64] = b"\x00" * 64
    damaged.write_bytes(bytes(data))
    bom = write(tmp / "results.csv", ("\ufeffitem_id,worker_id\nitem00000,w1\n").encode())
    key = write(tmp / "key.csv", KEY.encode())
    return [
        (["import", "--format", "conll", "--inputs", str(latin1), "--out", str(tmp / "s.parquet")], latin1),
        (["baseline", "fastalign", "--instances", str(blank), "--out", str(tmp / "p.jsonl")], blank),
        (["select", "--aligned", str(damaged), "--out", str(tmp / "c.parquet")], damaged),
        (["human", "import", "--results", str(bom), "--key", str(key), "--out-dir", str(tmp / "h")], bom),
        (["align", "eval", "--gold", str(tmp / "missing.jsonl"), "--pred", str(blank)], tmp / "missing.jsonl"),
    ]


@pytest.mark.parametrize("case", range(5))
def test_the_cli_prints_one_line_naming_the_file(case: int, tmp_path: Path) -> None:
    args, path = _cli_cases(tmp_path)[case]
    result = subprocess.run(
        [sys.executable, "-m", "spanaug", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("spanaug: error:")]
    assert 0 < result.returncode < 128, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and f"spanaug: error: {path}" in errors[0], result.stderr
