"""The release: open-SESAME CoNLL that our importer reads back, and a dataset card that datasets loads."""

import json

import pytest
import yaml
from conftest import output, seed, write_augmented, write_fe_chains, write_two_chains

from spanaug.cli.main import main
from spanaug.core import artifacts
from spanaug.downstream.card import licences, write_card
from spanaug.downstream.export import export_conll, output_lexical_unit
from spanaug.downstream.frameid.data import read_sentences
from spanaug.evaluation.filtering import filter_stage
from spanaug.pipeline.importers import read_conll


@pytest.fixture
def run(tmp_path):
    write_two_chains(tmp_path)
    return tmp_path


def test_conll_round_trips_through_the_importer(run, tmp_path):
    counts = export_conll(run / "augmented.parquet", tmp_path / "out.conll", tmp_path / "out.ids.tsv")
    assert counts == {
        "blocks": 3,
        "unaligned_left_out": 1,
        "null_instantiated_fes_left_out": 0,
        "lost_fes_left_out": 0,
        "warnings": [],
    }
    lines = [line for line in (tmp_path / "out.conll").read_text().splitlines() if line]
    assert all(len(line.split("\t")) == 15 for line in lines)
    assert lines[1].split("\t") == [
        "2",
        "purchased",
        "_",
        "_",
        "_",
        "_",
        "0",
        "_",
        "_",
        "_",
        "_",
        "_",
        "purchase.v",
        "Commerce_buy",
        "O",
    ]
    rows = list(read_conll(tmp_path / "out.conll"))
    aligned = [
        r
        for r in artifacts.read_table(run / "augmented.parquet", artifacts.AUGMENTED).to_pylist()
        if r["aligned_start"] is not None
    ]
    assert len(rows) == len(aligned) == 3
    for back, row in zip(rows, aligned):
        assert back["tokens"] == row["paraphrase_tokens"]
        assert (back["span_start"], back["span_end"]) == (row["aligned_start"], row["aligned_end"])
        assert back["frame"] == row["frame"]
        assert back["lexical_unit"] == output_lexical_unit(
            row["aligned_lemma"], row["aligned_text"], row["lexical_unit"]
        )
    assert [r["lexical_unit"] for r in rows] == ["purchase.v", "acquire.v", "give up.v"]
    ids = (tmp_path / "out.ids.tsv").read_text().splitlines()
    assert ids[0].split("\t")[:2] == ["sentence", "output_id"] and ids[3].split("\t")[:2] == ["2", "s2#1"]
    # Our Frame ID model reads it too: one sentence per output, its trigger labelled.
    sentences = read_sentences([tmp_path / "out.conll"])
    assert [s.triggers for s in sentences] == [
        {(1, 1): "Commerce_buy"},
        {(2, 2): "Commerce_buy"},
        {(1, 2): "Activity_stop"},
    ]


def test_conll_pos_columns_from_a_tagger(run, tmp_path):
    assert (
        main(
            [
                "export",
                "conll",
                "--augmented",
                str(run / "augmented.parquet"),
                "--out",
                str(tmp_path / "t.conll"),
                "--pos-tagger",
                "lexicon",
            ]
        )
        == 0
    )
    first = (tmp_path / "t.conll").read_text().splitlines()[1].split("\t")
    assert first[1:6] == ["purchased", "_", "purchase", "VERB", "VERB"]
    assert next(iter(read_conll(tmp_path / "t.conll")))["pos_tags"][1] == "VERB"


def test_conll_refuses_tokens_it_cannot_carry(tmp_path):
    seeds = [seed("s1", ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v")]
    write_augmented(
        tmp_path, seeds, [output("s1", 1, ["Abby", "bought it", "x"], 1, 1, "Commerce_buy", "buy.v", "buy")]
    )
    assert (
        main(
            ["export", "conll", "--augmented", str(tmp_path / "augmented.parquet"), "--out", str(tmp_path / "x.conll")]
        )
        == 2
    )
    assert not (tmp_path / "x.conll").exists()


def test_card_front_matter_counts_and_licences(run, tmp_path):
    filter_stage(run / "augmented.parquet", run / "seeds.parquet", tmp_path / "filtering")
    run_info = {
        "run_name": "fn",
        "inputs": ["/data/fndata-1.7"],
        "format": "framenet",
        "iterations": 2,
        "paraphraser": "humarin/chatgpt_paraphraser_on_T5_base",
        "paraphraser_model": "humarin/x",
        "encoder": "bert-base-cased",
        "demo": False,
    }
    counts = write_card(
        run / "augmented.parquet",
        run / "seeds.parquet",
        tmp_path / "release",
        run_info,
        tmp_path / "filtering/filters.json",
    )
    assert counts == {"outputs": 4, "aligned": 3, "seeds": 2, "frames": 2}
    text = (tmp_path / "release/README.md").read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert front["license"] == "other" and front["license_name"] == "framenet-cc-by"
    assert [c["data_files"][0]["path"] for c in front["configs"]] == ["data/augmented.parquet", "data/seeds.parquet"]
    assert "| 1 | 2 | 2 | 2 |" in text and "| 2 | 2 | 1 | 2 |" in text  # iteration, outputs, aligned, frames
    assert "FrameNet (Berkeley FrameNet Project, ICSI)" in text and "@article{culkin-etal-2021-iterative" in text
    assert "| lax | max_iteration 3, max_paraphrase_score 0.8, min_aligner_score 0.95 | 0 |" in text
    assert "Demo data" not in text
    copied = artifacts.read_table(tmp_path / "release/data/augmented.parquet", artifacts.AUGMENTED)
    assert copied.num_rows == 4


def test_card_licence_follows_the_corpus():
    assert licences({"inputs": ["resources/demo/fndata-demo"], "format": "framenet"})[0] == "mit"
    licence, lines = licences({"inputs": ["corpus.jsonl"], "format": "jsonl"})
    assert licence == "other" and "not known to spanaug" in lines[0]


def test_release_folder_loads_with_datasets(run, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    release = tmp_path / "release"
    export_conll(run / "augmented.parquet", release / "augmented.conll")
    assert (
        main(
            [
                "export",
                "card",
                "--augmented",
                str(run / "augmented.parquet"),
                "--seeds",
                str(run / "seeds.parquet"),
                "--out-dir",
                str(release),
                "--conll",
                str(release / "augmented.conll"),
                "--run",
                json.dumps({"run_name": "demo", "inputs": ["resources/demo/fndata-demo"], "demo": True}),
            ]
        )
        == 0
    )
    assert "Demo data" in (release / "README.md").read_text()
    outputs = datasets.load_dataset(str(release), split="train", cache_dir=str(tmp_path / "cache"))
    assert outputs.num_rows == 4 and outputs[0]["output_id"] == "s1#1" and outputs[0]["aligned_start"] == 1
    seeds = datasets.load_dataset(str(release), "seeds", split="train", cache_dir=str(tmp_path / "cache"))
    assert sorted(seeds["sentence_id"]) == ["s1", "s2"]
    direct = datasets.load_dataset(
        "parquet", data_files=str(release / "data/augmented.parquet"), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert direct["paraphrase_tokens"][2] == ["They", "gave", "up", "smoking"]


def test_conll_carries_frame_elements_and_the_importer_reads_them_back(tmp_path):
    """Seeds with FEs become iteration-0 chain rows; as outputs (iteration 1, as aligned FEs will be)
    they export to column 15 and read back unchanged: an FE on the trigger, a multi-token FE, an FE
    in two pieces. A null instantiation has no place in CoNLL: left out and counted."""
    from spanaug.pipeline.iterations import seed_rows

    def fe(name, start=None, end=None, null_type=None):
        return {"name": name, "start": start, "end": end, "null_type": null_type, "coreness": None}

    seeds = [
        {
            **seed("s1", ["Some", "of", "the", "strongest", "critics", "of", "it", "."], 3, 3, "Level", "strong.a"),
            "frame_elements": [fe("Degree", 3, 3), fe("Exerter", 4, 6), fe("Place", null_type="INI")],
        },
        {
            **seed("s2", ["The", "car", ",", "Abby", "said", ",", "was", "bought", "cheaply"], 7, 7, "Buy", "buy.v"),
            "frame_elements": [fe("Goods", 0, 1), fe("Buyer", 3, 3), fe("Goods", 8, 8)],
        },
        {**seed("s3", ["They", "buy", "."], 1, 1, "Buy", "buy.v"), "frame_elements": []},
        seed("s4", ["We", "buy", "."], 1, 1, "Buy", "buy.v"),
    ]
    chain = [{**row, "iteration": 1, "constraints": ["x"]} for row in seed_rows(seeds)]
    assert [r["frame_elements"] for r in chain] == [s.get("frame_elements") for s in seeds]
    write_augmented(tmp_path, seeds, chain)
    counts = export_conll(tmp_path / "augmented.parquet", tmp_path / "out.conll")
    assert counts == {
        "blocks": 4,
        "unaligned_left_out": 0,
        "null_instantiated_fes_left_out": 1,
        "lost_fes_left_out": 0,
        "warnings": [],
    }
    column_15 = [line.split("\t")[14] for line in (tmp_path / "out.conll").read_text().split("\n\n")[0].splitlines()]
    assert column_15 == ["O", "O", "O", "B-Degree", "B-Exerter", "I-Exerter", "I-Exerter", "O"]
    back = list(read_conll(tmp_path / "out.conll"))
    overt = [[f for f in s.get("frame_elements") or () if f["null_type"] is None] for s in seeds]
    assert [r["frame_elements"] for r in back] == overt[:3] + [[]]  # no FE annotation: all O, read as none
    assert [r["tokens"] for r in back] == [s["tokens"] for s in seeds]


def test_lost_fes_leave_nothing_in_column_15_and_are_counted_apart(tmp_path):
    """Outputs as align mode makes them: carried FEs (scored), LOST ones and a null instantiation.
    Column 15 tags the carried FEs only; the summary counts lost FEs apart from null instantiations
    (the unaligned output, whose FEs are all LOST, is left out whole); the importer reads back the
    overt FEs of every output exported, and nothing else."""
    write_fe_chains(tmp_path)
    counts = export_conll(tmp_path / "augmented.parquet", tmp_path / "out.conll", tmp_path / "ids.tsv")
    assert counts == {
        "blocks": 4,
        "unaligned_left_out": 1,
        "null_instantiated_fes_left_out": 2,  # s1's Place (INI) in iterations 1 and 2
        "lost_fes_left_out": 1,  # s1's Seller in iteration 2
        "warnings": [],
    }
    blocks = (tmp_path / "out.conll").read_text().strip().split("\n\n")
    tags = [[line.split("\t")[14] for line in block.splitlines()] for block in blocks]
    assert tags[0] == ["B-Time", "B-Buyer", "O", "B-Goods", "I-Goods", "B-Seller", "I-Seller"]
    assert tags[1] == ["B-Buyer", "O", "B-Goods", "I-Goods", "B-Time"]  # Seller LOST: no tag anywhere
    back = list(read_conll(tmp_path / "out.conll"))
    exported = [
        r
        for r in artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED).to_pylist()
        if r["aligned_start"] is not None
    ]
    assert len(back) == len(exported) == 4
    for read, row in zip(back, exported):
        overt = {(f["name"], f["start"], f["end"]) for f in row["frame_elements"] or () if f["null_type"] is None}
        assert {(f["name"], f["start"], f["end"]) for f in read["frame_elements"]} == overt
        assert all(f["null_type"] is None for f in read["frame_elements"])
        assert read["tokens"] == row["paraphrase_tokens"]
    assert [len(r["frame_elements"]) for r in back] == [4, 3, 2, 0]


def test_card_gives_fe_retention_per_iteration_and_the_fe_settings(tmp_path):
    write_fe_chains(tmp_path)
    run_info = {
        "run_name": "fe",
        "inputs": ["resources/demo/fndata-demo"],
        "frame_elements": {"mode": "align", "select": "joint", "require": "none"},
    }
    write_card(tmp_path / "augmented.parquet", tmp_path / "seeds.parquet", tmp_path / "release", run_info)
    text = (tmp_path / "release/README.md").read_text()
    section = text.split("## Frame elements")[1].split("\n## ")[0]
    assert "The seeds hold 6 overt frame elements in 2 of 3 seeds (and 1 null instantiations)" in section
    assert "placed by the span aligner" in section and "mode align, select joint, require none" in section
    # iteration, outputs with FEs, seed FEs, carried, lost, retention: all, core, non-core, unknown coreness
    assert "| 1 | 2 | 6 | 6 | 0 | 100.0% | 100.0% | 100.0% | 100.0% | 2 | 0.750 |" in section
    assert "| 2 | 2 | 6 | 3 | 3 | 50.0% | 66.7% | 100.0% | 0.0% | 0 | 0.750 |" in section
    assert "- frame elements: mode align, select joint, require none" in text  # provenance


def test_card_says_when_the_outputs_carry_no_fes(tmp_path):
    import pyarrow as pa

    write_fe_chains(tmp_path)
    table = artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED)
    off = table.set_column(
        table.schema.get_field_index("frame_elements"),
        "frame_elements",
        pa.array([None] * table.num_rows, artifacts.FRAME_ELEMENTS),
    )
    artifacts.write_table(off, tmp_path / "off.parquet", artifacts.AUGMENTED)
    run_info = {"run_name": "off", "inputs": ["x"], "frame_elements": {"mode": "off", "select": "trigger"}}
    write_card(tmp_path / "off.parquet", tmp_path / "seeds.parquet", tmp_path / "release", run_info)
    section = (tmp_path / "release/README.md").read_text().split("## Frame elements")[1].split("\n## ")[0]
    assert "6 overt frame elements" in section and "`frame_elements.mode` was off" in section
    assert "retention" not in section.lower()


def _sesame_problems(text: str) -> list[str]:
    """What open-SESAME's CoNLL reader would not take (its conventions, as its preprocessed
    fn1.7.*.syntaxnet.conll files follow them): 15 tab-separated columns; tokens numbered 1..n; one
    sentence number per block; the lexical unit (column 13) and frame (column 14) on the target's
    tokens only, one LU and one frame per block; column 15 BIO tags, each I- continuing its FE."""
    problems = []
    for b, block in enumerate(part for part in text.split("\n\n") if part.strip()):
        rows = [line.split("\t") for line in block.strip("\n").split("\n")]
        if any(len(r) != 15 for r in rows):
            problems.append(f"block {b}: a line without 15 columns")
            continue
        if [r[0] for r in rows] != [str(i) for i in range(1, len(rows) + 1)]:
            problems.append(f"block {b}: tokens not numbered 1..n")
        if len({r[6] for r in rows}) != 1:
            problems.append(f"block {b}: more than one sentence number")
        targets = {(r[12], r[13]) for r in rows if r[13] != "_"}
        if len(targets) != 1 or "_" in next(iter(targets), ("_",)):
            problems.append(f"block {b}: {len(targets)} (LU, frame) pairs (expected one)")
        previous = "O"
        for r in rows:
            tag = r[14]
            if not (tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2)):
                problems.append(f"block {b}: tag {tag!r}")
            elif tag.startswith("I-") and previous[2:] != tag[2:]:
                problems.append(f"block {b}: {tag} does not continue an FE")
            previous = tag
    return problems


def test_the_export_follows_open_sesames_reader_conventions(tmp_path):
    from conftest import shared_file

    # The checker takes open-SESAME's own preprocessed file (so it checks its conventions, not ours) ...
    reference = shared_file("fn1.7.dev.syntaxnet.conll").read_text(encoding="utf-8")
    assert _sesame_problems("\n\n".join(reference.split("\n\n")[:400])) == []
    # ... refuses what its reader would misread ...
    bad = "1\tA\t_\t_\t_\t_\t0\t_\t_\t_\t_\t_\t_\t_\tI-Goods\n2\tbuys\t_\t_\t_\t_\t0\t_\t_\t_\t_\t_\tbuy.v\tBuy\tO\n"
    assert _sesame_problems(bad) == ["block 0: I-Goods does not continue an FE"]
    assert _sesame_problems(bad.replace("\tBuy\t", "\t_\t")) == [
        "block 0: 0 (LU, frame) pairs (expected one)",
        "block 0: I-Goods does not continue an FE",
    ]
    # ... and takes the export, FEs in column 15 included.
    write_fe_chains(tmp_path)
    export_conll(tmp_path / "augmented.parquet", tmp_path / "out.conll")
    text = (tmp_path / "out.conll").read_text()
    assert "B-" in text and _sesame_problems(text) == []
