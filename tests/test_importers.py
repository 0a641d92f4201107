import pytest
from conftest import REPO, shared_file

from spanaug.core import artifacts
from spanaug.core.config import ImportSettings, SeedSettings
from spanaug.core.errors import InputError
from spanaug.core.text import tokenize_around_span
from spanaug.demo.framenet_writer import write_release
from spanaug.pipeline.importers import ImportStats, import_corpus, read_conll, read_framenet, read_jsonl_sentences
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
