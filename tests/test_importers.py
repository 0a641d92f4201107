import json

import pytest
from conftest import REPO, shared_file

from spanaug.core import artifacts
from spanaug.core.config import ImportSettings, SeedSettings
from spanaug.core.errors import InputError
from spanaug.core.text import tokenize_around_span
from spanaug.demo.framenet_writer import write_release
from spanaug.pipeline.importers import (
    ImportStats,
    conll_blocks,
    conll_frame_elements,
    import_corpus,
    read_conll,
    read_framenet,
    read_jsonl_sentences,
)
from spanaug.pipeline.seeds import select_seeds, shard_of

SPEC = {
    "frames": {
        "Commerce_buy": {
            "lexical_units": {
                "buy.v": ["Abby [bought] a car .", "They [buy] bread ."],
                "purchase.v": ["We [purchased] it ."],
                "get.v": ["I [got] milk ."],
            }
        },
        "Activity_stop": {"lexical_units": {"give up.v": ["He [gave up] smoking ."], "stop.v": ["It [stopped] ."]}},
    },
    "fulltext": [
        {
            "corpus": "Demo",
            "document": "d1",
            "sentences": ["She [bought|buy.v|Commerce_buy] bread and [stopped|stop.v|Activity_stop] ."],
        }
    ],
}


def test_tokenize_forces_span_boundaries():
    tokens, _, s, e = tokenize_around_span("re-bought it", 3, 9)
    assert tokens[s : e + 1] == ["bought"]


def test_framenet_release_exemplars_and_fulltext(tmp_path):
    root = write_release(SPEC, tmp_path / "fn")
    stats = ImportStats()
    rows = list(read_framenet(root, stats=stats))
    assert stats.rows_kept == len(rows) == 8
    by_text = {(r["text"], r["lexical_unit"]): r for r in rows}
    multi = by_text[("He gave up smoking .", "give up.v")]
    assert multi["tokens"][multi["span_start"] : multi["span_end"] + 1] == ["gave", "up"]
    full = [r for r in rows if r["corpus_part"] == "fulltext"]
    assert {r["frame"] for r in full} == {"Commerce_buy", "Activity_stop"}
    assert all(r["annotation_date"].startswith("2001-") for r in rows)


def test_framenet_max_tokens_filter_counts(tmp_path):
    root = write_release(SPEC, tmp_path / "fn")
    stats = ImportStats(max_tokens=4)
    rows = list(read_framenet(root, max_tokens=4, stats=stats))
    assert all(len(r["tokens"]) <= 4 for r in rows)
    assert stats.too_long_filtered == 8 - len(rows) > 0


def test_malformed_lu_xml_names_the_file(tmp_path):
    root = write_release(SPEC, tmp_path / "fn")
    lu_file = sorted((root / "lu").glob("*.xml"))[0]
    lu_file.write_text(lu_file.read_text()[:-40])
    with pytest.raises(InputError, match=lu_file.name):
        list(read_framenet(root))


def test_demo_corpus_is_current(tmp_path):
    """The committed release directory is what the YAML spec generates."""
    from spanaug.demo.framenet_writer import write_release_from_yaml

    fresh = write_release_from_yaml(REPO / "resources/demo/corpus.yaml", tmp_path / "fn")
    committed = REPO / "resources/demo/fndata-demo"
    for path in fresh.rglob("*.xml"):
        assert (committed / path.relative_to(fresh)).read_text() == path.read_text(), path


CONLL_BLOCK = """1\tHe\t_\the\tpp\tPRP\t7\t_\t_\t_\t_\t_\t_\t_\tO
2\tgave\t_\tgive\tvvd\tVBD\t7\t_\t_\t_\t_\t_\tgive up.v\tActivity_stop\tO
3\tup\t_\tup\trp\tRP\t7\t_\t_\t_\t_\t_\tgive up.v\tActivity_stop\tO
4\tsmoking\t_\tsmoke\tnn\tNN\t7\t_\t_\t_\t_\t_\t_\t_\tB-Activity
"""


def test_conll_reads_blocks_and_skips_discontiguous(tmp_path):
    gap = CONLL_BLOCK.replace(
        "3\tup\t_\tup\trp\tRP\t7\t_\t_\t_\t_\t_\tgive up.v\tActivity_stop",
        "3\tup\t_\tup\trp\tRP\t7\t_\t_\t_\t_\t_\t_\t_",
    )
    gap = gap.replace(
        "4\tsmoking\t_\tsmoke\tnn\tNN\t7\t_\t_\t_\t_\t_\t_\t_",
        "4\tsmoking\t_\tsmoke\tnn\tNN\t7\t_\t_\t_\t_\t_\tgive up.v\tActivity_stop",
    )
    path = tmp_path / "x.conll"
    path.write_text(CONLL_BLOCK + "\n" + gap + "\n")
    stats = ImportStats()
    rows = list(read_conll(path, stats=stats))
    assert len(rows) == 1 and stats.discontiguous_skipped == 1
    assert (rows[0]["span_start"], rows[0]["span_end"], rows[0]["pos_tags"][1]) == (1, 2, "VBD")


def test_conll_bad_row_names_file_and_line(tmp_path):
    path = tmp_path / "x.conll"
    path.write_text(CONLL_BLOCK + "\n" + "1\tOnly\tthree\n")
    with pytest.raises(InputError, match=r"x\.conll, line 6: expected 15"):
        list(read_conll(path))


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"tokens": ["a"], "span": [0, 3], "frame": "F"}', "out of range"),
        ('{"tokens": [], "span": [0, 0], "frame": "F"}', "tokens"),
        ('{"tokens": ["a"], "span": [0, 0]', "invalid JSON"),
        ('{"tokens": ["a"], "span": [0, 0]}', "frame"),
    ],
)
def test_jsonl_errors_name_line(tmp_path, line, message):
    path = tmp_path / "in.jsonl"
    path.write_text('{"tokens": ["ok"], "span": [0, 0], "frame": "F"}\n' + line + "\n")
    with pytest.raises(InputError, match=rf"in\.jsonl, line 2: .*{message}"):
        list(read_jsonl_sentences(path))


def test_import_failure_keeps_previous_output(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"tokens": ["ok"], "span": [0, 0], "frame": "F"}\n')
    out = tmp_path / "s.parquet"
    import_corpus(ImportSettings(format="jsonl", inputs=[str(good)]), out)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"tokens": ["a", "b"], "span": [0, 0], "frame": "F"}\n{"tokens": ["a"], "span": [2, 2], "frame": "F"}\n'
    )
    with pytest.raises(InputError):
        import_corpus(ImportSettings(format="jsonl", inputs=[str(bad)]), out)
    assert artifacts.read_table(out, artifacts.SENTENCES).num_rows == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "good.jsonl", "s.parquet"]


def test_from_scratch_seed_selection(tmp_path):
    root = write_release(SPEC, tmp_path / "fn")
    out = tmp_path / "s.parquet"
    import_corpus(ImportSettings(inputs=[str(root)]), out)
    table = artifacts.read_table(out, artifacts.SENTENCES)
    seeds, report = select_seeds(
        table, SeedSettings(mode="from_scratch", n_frames=1, lus_per_frame=2, annotations_per_lu=1)
    )
    # Activity_stop sorts first and has 2 LUs; one annotation each, earliest first.
    assert report["frames"] == ["Activity_stop"]
    assert sorted(seeds.column("lexical_unit").to_pylist()) == ["give up.v", "stop.v"]
    assert report["ordering"] == "annotation date"


def test_shards_are_stable():
    assert shard_of("fn:1:2-3", 64) == shard_of("fn:1:2-3", 64)
    assert len({shard_of(f"s{i}", 4) for i in range(100)}) == 4


@pytest.mark.integration
def test_real_conll_dev_split():
    path = shared_file("fn1.7.dev.syntaxnet.conll")
    stats = ImportStats(max_tokens=80)
    rows = list(read_conll(path, max_tokens=80, stats=stats))
    assert stats.rows_read + stats.discontiguous_skipped == 2272
    assert len({r["frame"] for r in rows}) > 300
    assert all(0 <= r["span_start"] <= r["span_end"] < len(r["tokens"]) for r in rows)


@pytest.mark.integration
def test_real_conll_dev_frame_elements(tmp_path):
    """Every B- tag of the shared dev is one FE: 4,029 over its 2,272 frame annotations, 869 of them
    on trigger tokens; the blocks with discontiguous triggers (skipped, counted) hold the rest."""
    path = shared_file("fn1.7.dev.syntaxnet.conll")
    lines = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    b_tags = sum(cols[14].startswith("B-") for cols in lines)
    assert b_tags == 4029
    stats = ImportStats()
    import_corpus(ImportSettings(format="conll", inputs=[str(path)], max_tokens=None), tmp_path / "s.parquet")
    rows = list(read_conll(path, stats=stats))
    assert artifacts.read_table(tmp_path / "s.parquet", artifacts.SENTENCES).num_rows == len(rows)  # all valid
    every_block = [conll_frame_elements(path, block) for block in conll_blocks(path)]
    assert len(every_block) == 2272 and sum(map(len, every_block)) == b_tags
    assert stats.fe_annotated_rows == len(rows) == 2272 - stats.discontiguous_skipped
    in_skipped = b_tags - stats.fe_overt
    assert 0 <= in_skipped < 100 and stats.fe_null_instantiated == 0  # CoNLL marks no null instantiation
    covering = 0
    for block, fes in zip(conll_blocks(path), every_block):
        trigger = {i for i, (_, cols) in enumerate(block) if cols[12] != "_"}
        covering += sum(bool(trigger & set(range(fe["start"], fe["end"] + 1))) for fe in fes)
    assert covering == 869 and stats.fe_covering_trigger <= covering


# ---------------------------------------------------------------- frame elements

FE_SPEC = {
    "frames": {
        "Commerce_buy": {
            "frame_elements": {"Buyer": "Core", "Goods": "Core", "Seller": "Core", "Time": "Peripheral"},
            "lexical_units": {
                "buy.v": [
                    "<Buyer Abby> [bought] <Goods a car> <Seller:INI> <Time last week> .",
                    "<Buyer John>'s <Goods pie> [buy] .",
                    "<Goods The car> , <Buyer Abby> said , was [bought] <Goods cheaply> .",
                    "They [buy] .",
                ]
            },
        },
        "Level_of_force_exertion": {
            "frame_elements": {"Degree": "Extra-Thematic", "Exerter": "Core"},
            "lexical_units": {"strong.a": ["Some of the <Degree [strongest]> <Exerter critics of it> ."]},
        },
    },
    "fulltext": [
        {
            "corpus": "Demo",
            "document": "d1",
            "sentences": [
                "<Buyer She> [bought|buy.v|Commerce_buy] <Goods bread and milk> <Seller:DNI> .",
                "She [bought|buy.v|Commerce_buy] bread and [stopped|stop.v|Activity_stop] .",
            ],
        }
    ],
}
FE_SPEC["frames"]["Activity_stop"] = {"lexical_units": {"stop.v": []}}


def _fes(row):
    return [
        (fe["name"], " ".join(row["tokens"][fe["start"] : fe["end"] + 1]) if fe["start"] is not None else None)
        + (fe["null_type"], fe["coreness"])
        for fe in row["frame_elements"]
    ]


def test_framenet_fe_layers_with_coreness_and_null_instantiations(tmp_path):
    root = write_release(FE_SPEC, tmp_path / "fn")
    stats = ImportStats()
    rows = {r["text"]: r for r in read_framenet(root, stats=stats)}
    assert _fes(rows["Abby bought a car last week ."]) == [
        ("Buyer", "Abby", None, "Core"),
        ("Goods", "a car", None, "Core"),
        ("Time", "last week", None, "Peripheral"),
        ("Seller", None, "INI", "Core"),
    ]
    # An incorporated FE covers the trigger; full text reads the frame file for coreness too.
    strongest = rows["Some of the strongest critics of it ."]
    assert _fes(strongest)[0] == ("Degree", "strongest", None, "Extra-Thematic")
    assert strongest["span_start"] == strongest["frame_elements"][0]["start"]
    assert _fes(rows["She bought bread and milk ."]) == [
        ("Buyer", "She", None, "Core"),
        ("Goods", "bread and milk", None, "Core"),
        ("Seller", None, "DNI", "Core"),
    ]
    # A discontiguous FE stays split: two items of one name.
    split = _fes(rows["The car , Abby said , was bought cheaply ."])
    assert [f[:2] for f in split] == [("Goods", "The car"), ("Buyer", "Abby"), ("Goods", "cheaply")]
    # An FE layer with no label: annotated, none expressed (an empty list, not null).
    assert rows["They buy ."]["frame_elements"] == []
    assert stats.fe_discontiguous == 1 and stats.fe_null_instantiated == 2 and stats.fe_covering_trigger == 1
    assert stats.fe_overt == sum(fe["null_type"] is None for r in rows.values() for fe in r["frame_elements"])


def test_framenet_fe_edge_inside_a_word_cuts_the_token(tmp_path):
    root = write_release(FE_SPEC, tmp_path / "fn")
    row = next(r for r in read_framenet(root) if r["text"].startswith("John"))
    assert row["tokens"][:2] == ["John", "'"] and _fes(row)[0] == ("Buyer", "John", None, "Core")
    assert row["tokens"][row["span_start"]] == "buy"


def test_framenet_overlapping_fe_labels_are_skipped_and_counted(tmp_path):
    spec = {"frames": {"Commerce_buy": {"lexical_units": {"buy.v": ["<Buyer <Goods Abby> x> [bought] ."]}}}}
    stats = ImportStats()
    (row,) = read_framenet(write_release(spec, tmp_path / "fn"), stats=stats)
    assert [f[:2] for f in _fes(row)] == [("Buyer", "Abby x")] and stats.fe_overlapping_skipped == 1


def test_fe_marks_in_the_corpus_spec_are_checked(tmp_path):
    from spanaug.demo.framenet_writer import check_spec

    def spec(line, fes=None):
        frame = {"lexical_units": {"buy.v": [line]}, **({"frame_elements": fes} if fes else {})}
        return {"frames": {"Commerce_buy": frame}}

    check_spec(spec("<Buyer Abby> [bought] <Goods:INI> .", {"Buyer": "Core", "Goods": "Core"}), "c.yaml")
    for line, fes, message in [
        ("<Buyer Abby [bought] .", None, "never closed"),
        ("<Buyer Abby> [bought] .", {"Goods": "Core"}, "not in the frame's frame_elements"),
        ("<Buyer <Goods Abby> x> [bought] .", None, "overlap"),
        ("[bought] .", {"Goods": "core"}, "frame_elements"),
    ]:
        with pytest.raises(InputError, match=rf"c\.yaml.*{message}"):
            check_spec(spec(line, fes), "c.yaml")


def _conll(tags, trigger=(1,)):
    words = ["Some", "strongest", "critics", "of", "it", "."]
    lines = []
    for i, (word, tag) in enumerate(zip(words, tags)):
        lu, frame = ("strong.a", "Level_of_force_exertion") if i in trigger else ("_", "_")
        lines.append("\t".join([str(i + 1), word, "_", word, "x", "X", "0", *"_____", lu, frame, tag]))
    return "\n".join(lines) + "\n"


def test_conll_frame_elements_from_bio_tags(tmp_path):
    path = tmp_path / "x.conll"
    blocks = [
        ["O", "B-Degree", "B-Exerter", "I-Exerter", "I-Exerter", "O"],  # an FE on the trigger, a 3-token FE
        ["B-Exerter", "O", "O", "B-Exerter", "I-Exerter", "O"],  # one FE in two pieces
        ["O"] * 6,  # annotated, no FE
        ["_"] * 6,  # no FE annotation
    ]
    path.write_text("\n".join(_conll(tags) for tags in blocks))
    stats = ImportStats()
    rows = list(read_conll(path, stats=stats))
    spans = [[(fe["name"], fe["start"], fe["end"]) for fe in r["frame_elements"] or ()] for r in rows]
    assert spans[:2] == [[("Degree", 1, 1), ("Exerter", 2, 4)], [("Exerter", 0, 0), ("Exerter", 3, 4)]]
    assert rows[2]["frame_elements"] == [] and rows[3]["frame_elements"] is None
    assert all(fe["coreness"] is None and fe["null_type"] is None for fe in rows[0]["frame_elements"])
    assert (stats.fe_annotated_rows, stats.fe_overt, stats.fe_covering_trigger, stats.fe_discontiguous) == (3, 4, 1, 1)


@pytest.mark.parametrize(
    "tags, message",
    [
        (["O", "I-Degree", "O", "O", "O", "O"], r"line 2: frame-element tag 'I-Degree' continues no B-Degree"),
        (["O", "B-Degree", "I-Exerter", "O", "O", "O"], r"line 3: .*'I-Exerter' continues no B-Exerter"),
        (["O", "O", "Degree", "O", "O", "O"], r"line 3: frame-element tag 'Degree' in column 15"),
        (["O", "O", "B-", "O", "O", "O"], r"line 3: frame-element tag 'B-'"),
    ],
)
def test_conll_bad_fe_tags_name_the_line(tmp_path, tags, message):
    path = tmp_path / "x.conll"
    path.write_text(_conll(tags))
    with pytest.raises(InputError, match=rf"x\.conll, {message}"):
        list(read_conll(path))


def test_jsonl_frame_elements(tmp_path):
    path = tmp_path / "in.jsonl"
    fes = [
        {"name": "Degree", "span": [1, 1], "coreness": "Extra-Thematic"},
        {"name": "Exerter", "span": [2, 4]},
        {"name": "Place", "null": "INI"},
    ]
    path.write_text(
        json.dumps(
            {
                "tokens": ["Some", "strongest", "critics", "of", "it"],
                "span": [1, 1],
                "frame": "F",
                "frame_elements": fes,
            }
        )
        + "\n"
        + json.dumps({"tokens": ["a"], "span": [0, 0], "frame": "F"})
        + "\n"
        + json.dumps({"tokens": ["a"], "span": [0, 0], "frame": "F", "frame_elements": []})
        + "\n"
    )
    rows = list(read_jsonl_sentences(path))
    assert rows[0]["frame_elements"] == [
        {"name": "Degree", "start": 1, "end": 1, "null_type": None, "coreness": "Extra-Thematic"},
        {"name": "Exerter", "start": 2, "end": 4, "null_type": None, "coreness": None},
        {"name": "Place", "start": None, "end": None, "null_type": "INI", "coreness": None},
    ]
    assert rows[1]["frame_elements"] is None and rows[2]["frame_elements"] == []


@pytest.mark.parametrize(
    "fes, message",
    [
        ([{"name": "A", "span": [0, 2]}], "span \\[0, 2\\] out of range for 2 tokens"),
        ([{"name": "A", "span": [0, 1]}, {"name": "B", "span": [1, 1]}], "'A' \\[0, 1\\] and 'B' \\[1, 1\\] overlap"),
        ([{"name": " ", "span": [0, 0]}], "expected"),
        ([{"name": "A", "null": "XNI"}], "'null' is 'XNI'"),
        ([{"name": "A", "span": [0, 0], "null": "INI"}], "expected"),
        ([{"name": "A", "span": [0, 0], "coreness": "core"}], "coreness 'core'"),
        ({"name": "A"}, "expected a list"),
    ],
)
def test_jsonl_bad_frame_elements_name_the_line(tmp_path, fes, message):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"tokens": ["a", "b"], "span": [0, 0], "frame": "F", "frame_elements": fes}) + "\n")
    with pytest.raises(InputError, match=rf"in\.jsonl, line 1: .*{message}"):
        list(read_jsonl_sentences(path))
