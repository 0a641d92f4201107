"""The bad inputs of issue 14, one by one: each once crashed, printed a traceback or passed silently."""

import json
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO, output, seed

from spanaug.core import artifacts
from spanaug.core.config import ImportSettings
from spanaug.core.errors import ArtifactError, ConfigError, InputError


def _conll(path, token="bought", token_id="2"):
    rows = [["1", "He"], [token_id, token], ["3", "it"]]
    lines = []
    for n, (i, tok) in enumerate(rows):
        lu, frame = ("buy.v", "Commerce_buy") if n == 1 else ("_", "_")
        lines.append("\t".join([i, tok, "_", tok, "nn", "NN", "0", "_", "_", "_", "_", "_", lu, frame, "O"]))
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def test_a_non_utf8_corpus_names_the_line(tmp_path):
    from spanaug.pipeline.importers import read_conll

    path = _conll(tmp_path / "x.conll")
    path.write_bytes(path.read_bytes().replace(b"bought", "boüght".encode("latin-1")))
    with pytest.raises(InputError, match=r"x\.conll, line 2: not UTF-8 text \(byte 0xfc"):
        list(read_conll(path))


def test_a_token_id_of_a_non_ascii_digit_is_an_error_not_a_traceback(tmp_path):
    from spanaug.pipeline.importers import read_conll

    with pytest.raises(InputError, match=r"line 2: token id '²' should be 2"):
        list(read_conll(_conll(tmp_path / "x.conll", token_id="²")))


@pytest.mark.parametrize(
    "field, value",
    [
        ("text", 3),
        ("lexical_unit", 1.5),
        ("span", [True, False]),
        ("pos_tags", "PRP VBD PRP"),
        ("pos_tags", ["PRP"]),
        ("tokens", ["He", " "]),
    ],
)
def test_jsonl_fields_of_the_wrong_type_or_length_are_named(tmp_path, field, value):
    from spanaug.pipeline.importers import read_jsonl_sentences

    rec = {"tokens": ["He", "bought", "it"], "span": [1, 1], "frame": "Commerce_buy", field: value}
    (tmp_path / "x.jsonl").write_text(json.dumps(rec) + "\n")
    with pytest.raises(InputError, match=rf"x\.jsonl, line 1: '{field}'"):
        list(read_jsonl_sentences(tmp_path / "x.jsonl"))


def test_an_empty_input_is_an_error_not_an_empty_dataset(tmp_path):
    from spanaug.pipeline.importers import import_corpus

    (tmp_path / "x.jsonl").write_text("\n")
    with pytest.raises(InputError, match=r"x\.jsonl: holds no annotated sentence"):
        import_corpus(ImportSettings(format="jsonl", inputs=[str(tmp_path / "x.jsonl")]), tmp_path / "s.parquet")
    assert not (tmp_path / "s.parquet").exists()


def test_same_named_inputs_in_different_folders_get_distinct_ids(tmp_path):
    from spanaug.pipeline.importers import import_corpus

    paths = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        paths.append(_conll(tmp_path / folder / "dev.conll"))
    import_corpus(ImportSettings(format="conll", inputs=[str(p) for p in paths]), tmp_path / "s.parquet")
    ids = artifacts.read_table(tmp_path / "s.parquet", artifacts.SENTENCES).column("sentence_id").to_pylist()
    assert ids == ["a/dev:1", "b/dev:1"]


@pytest.mark.parametrize("victim", ["frame/Commerce_buy.xml", "frameIndex.xml", "frRelation.xml", "lu/lu1000.xml"])
def test_a_corrupt_framenet_file_is_the_file_named(tmp_path, victim):
    from spanaug.pipeline.importers import read_framenet

    root = shutil.copytree(REPO / "resources/demo/fndata-demo", tmp_path / "fndata")
    path = root / victim
    path.write_bytes(path.read_bytes()[:150])  # cut mid-tag
    with pytest.raises(InputError) as err:
        list(read_framenet(root))
    assert str(err.value).startswith(f"{path}: malformed FrameNet XML")


def _chain(tmp_path, **changes):
    row = output("s1", 1, ["He", "purchased", "it"], 1, 1, "Commerce_buy", "buy.v", "purchase")
    row.update(changes)
    loose = pa.schema([f.with_nullable(True) for f in artifacts.CHAIN])
    pq.write_table(
        pa.Table.from_pylist([output("s0", 1, ["He", "got", "it"], 1, 1, "F", "get.v", "get"), row], schema=loose),
        tmp_path / "chain.parquet",
    )
    return tmp_path / "chain.parquet"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"aligned_start": 2, "aligned_end": 1}, r"\[aligned_start, aligned_end\] = \[2, 1\] is not inside"),
        ({"aligned_end": 7}, r"\[1, 7\] is not inside the 3 tokens"),
        ({"aligned_start": -1}, r"\[-1, 1\]"),
        ({"aligned_end": None}, r"aligned_start is 1 but aligned_end is None"),
        ({"constraints": []}, r"constraints are empty at iteration 1"),
        ({"paraphrase_tokens": ["He", "", "it"]}, r"token 1 is ''"),
    ],
)
def test_a_chain_row_that_would_run_the_paraphraser_unconstrained_is_named(tmp_path, changes, message):
    from spanaug.core.config import ConstraintSettings
    from spanaug.pipeline.constraints import expand_stage

    path = _chain(tmp_path, **changes)
    with pytest.raises(ArtifactError, match=rf"chain\.parquet, row 1: .*{message}"):
        expand_stage(path, tmp_path / "req.parquet", 2, ConstraintSettings())
    assert not (tmp_path / "req.parquet").exists()


def test_a_parquet_file_damaged_mid_file_names_it(tmp_path):
    path = tmp_path / "s.parquet"
    artifacts.write_table(
        [seed(f"s{i}", ["They", "bought", "it", str(i)], 1, 1, "F", "buy.v") for i in range(500)],
        path,
        artifacts.SENTENCES,
    )
    data = bytearray(path.read_bytes())
    data[len(data) // 3 : len(data) // 3 + 32] = b"\x00" * 32
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=rf"^{path}: not a readable Parquet file"):
        artifacts.read_table(path, artifacts.SENTENCES)


def test_predictions_out_of_range_or_repeated_are_errors(tmp_path):
    from spanaug.pipeline.aligner.instances import read_predictions

    pred = tmp_path / "pred.jsonl"
    pred.write_text('{"id": "a", "target_span": [0, 5], "score": 1}\n')
    with pytest.raises(InputError, match=r"line 1: 'target_span' \[0, 5\] out of range for 3 tokens"):
        read_predictions(pred, {"a": 3})
    pred.write_text('{"id": "a", "target_span": [0, 1]}\n{"id": "a", "target_span": null}\n')
    with pytest.raises(InputError, match=r"line 2: duplicate prediction for id 'a' \(first on line 1\)"):
        read_predictions(pred, {"a": 3})
    pred.write_text('{"id": "a", "target_span": [0]}\n')
    with pytest.raises(InputError, match=r"line 1: 'target_span' is \[0\]"):
        read_predictions(pred)


def test_crowd_csvs_with_a_bom_read_and_a_missing_column_is_named(tmp_path):
    from spanaug.evaluation.human_eval import read_key

    key = tmp_path / "key.csv"
    key.write_text("\ufeffitem_id,candidate,kind,ref_id\ni1,1,output,s#1\n", encoding="utf-8")
    assert read_key(key) == {("i1", 1): ("output", "s#1")}
    key.write_text("item_id,candidate,ref_id\ni1,1,s#1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"key\.csv, line 1: the header lacks column\(s\) \['kind'\]"):
        read_key(key)


def test_filter_bounds_are_checked_and_a_null_bound_is_no_bound():
    from spanaug.evaluation.filtering import check_filters, heuristic_mask

    with pytest.raises(ConfigError, match=r"filters: filter 'lax': max_iteration is '3' \(expected an integer\)"):
        check_filters({"lax": {"max_iteration": "3"}})
    table = artifacts.records_to_table(
        [{"output_id": "s#1", **output("s", 1, ["a"], 0, 0, "F", "a.v", "a")}], artifacts.AUGMENTED
    )
    bounds = check_filters({"lax": {"max_iteration": 3, "max_paraphrase_score": None}})["lax"]
    assert heuristic_mask(table, bounds).to_pylist() == [True]


def test_fast_align_refuses_blank_tokens_before_the_library_sees_them(tmp_path):
    from spanaug.evaluation.fastalign import fast_align

    with pytest.raises(InputError, match=r"instances\.jsonl, sentence pair 1: source tokens \[' ', ''\]"):
        fast_align([(("a", "b"), ("a", "c")), ((" ", ""), ("a",))], origin=str(tmp_path / "instances.jsonl"))
    # Whitespace or NUL inside a token, and the separator token, are escaped (each crashed the library).
    pairs = [(("he", "bought", "it"), ("he", "purchased", "it")), (("a b", "|||", "x\x00y"), ("a", "b", "c"))]
    assert set(fast_align(pairs)) == set(pairs)


def test_a_pair_over_the_encoder_limit_is_windowed_not_given_zero_vectors(tiny_encoder):
    import torch

    from spanaug.pipeline.aligner.pair_encoder import PairEncoder

    enc = PairEncoder(tiny_encoder, max_length=24)
    short = (["Abby", "bought", "a", "car"], ["Abby", "purchased", "a", "car"])
    long = (["Abby", "bought", "a", "car", "from", "Robin", "last", "week"] * 3, ["The", "company", "\u200b", "steel"])
    (s_src, s_tgt), (l_src, l_tgt) = enc.encode_batch([short, long])
    assert enc.windowed == 1
    assert (l_src.shape[0], l_tgt.shape[0]) == (24, 4) and (s_src.shape[0], s_tgt.shape[0]) == (4, 4)
    # Every word has a vector, the zero-width space (which the tokenizer drops) included.
    assert all(bool(v.abs().sum() > 0) for v in torch.cat([s_src, s_tgt, l_src, l_tgt]))


def test_the_align_stage_counts_pairs_over_the_limit_and_an_empty_shard(tiny_encoder, tmp_path):
    from spanaug.core.aligner_settings import AlignerConfig
    from spanaug.pipeline.aligner.model import SpanAligner
    from spanaug.pipeline.aligner.stage import align_stage

    SpanAligner(AlignerConfig(encoder=tiny_encoder, k=2, hidden=8, max_length=24), device="cpu").save_pretrained(
        tmp_path / "aligner"
    )
    request = {
        "seed_id": "s",
        "frame": "F",
        "lexical_unit": "buy.v",
        "seed_trigger": "bought",
        "iteration": 1,
        "source_tokens": ["Abby", "bought", "a", "car"] * 4,
        "source_text": "x",
        "source_span_start": 1,
        "source_span_end": 1,
        "constraints": ["bought"],
        "beam_rank": 0,
        "paraphrase_tokens": ["Abby", "purchased", "a", "car"] * 4,
        "paraphrase_text": "y",
        "paraphrase_score": 0.5,
    }
    artifacts.write_table([request], tmp_path / "p.parquet", artifacts.PARAPHRASES)
    align_stage(
        tmp_path / "aligner",
        tmp_path / "p.parquet",
        tmp_path / "a.parquet",
        device="cpu",
        stats_path=tmp_path / "stats.json",
    )
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["pairs_over_encoder_limit"] == 1 and stats["beams"] == 1 and not stats["empty_shard"]
    artifacts.write_table([], tmp_path / "p.parquet", artifacts.PARAPHRASES)
    assert (
        align_stage(
            tmp_path / "aligner",
            tmp_path / "p.parquet",
            tmp_path / "a.parquet",
            device="cpu",
            stats_path=tmp_path / "stats.json",
        )
        == 0
    )
    assert json.loads((tmp_path / "stats.json").read_text())["empty_shard"]


def test_a_lone_surrogate_and_a_missing_file_are_named(tmp_path):
    from spanaug.pipeline.importers import read_conll, read_jsonl_sentences

    (tmp_path / "x.jsonl").write_text('{"tokens": ["He", "\\ud800"], "span": [0, 0], "frame": "F"}\n')
    with pytest.raises(InputError, match=r"x\.jsonl, line 1: .*surrogate"):
        list(read_jsonl_sentences(tmp_path / "x.jsonl"))
    with pytest.raises(InputError, match=rf"^{tmp_path / 'missing.conll'}: no such file$"):
        list(read_conll(tmp_path / "missing.conll"))


def test_select_refuses_an_aligned_span_outside_the_paraphrase(tmp_path):
    from spanaug.pipeline.iterations import select_stage

    request = {
        "seed_id": "s",
        "frame": "F",
        "lexical_unit": "buy.v",
        "seed_trigger": "bought",
        "iteration": 1,
        "source_tokens": ["He", "bought", "it"],
        "source_text": "He bought it",
        "source_span_start": 1,
        "source_span_end": 1,
        "constraints": ["bought"],
        "beam_rank": 0,
        "paraphrase_tokens": ["He", "purchased", "it"],
        "paraphrase_text": "He purchased it",
        "paraphrase_score": 0.5,
        "aligned_start": 3,
        "aligned_end": 4,
        "aligner_score": 0.9,
    }
    loose = pa.schema([f.with_nullable(True) for f in artifacts.ALIGNED])
    pq.write_table(pa.Table.from_pylist([request], schema=loose), tmp_path / "aligned.parquet")
    with pytest.raises(ArtifactError, match=r"aligned\.parquet, row 0: .*\[3, 4\] is not inside the 3 tokens"):
        select_stage(tmp_path / "aligned.parquet", tmp_path / "chain.parquet")  # it wrote an empty aligned text
    assert not (tmp_path / "chain.parquet").exists()


def test_an_empty_shard_is_written_with_a_warning(tmp_path, caplog):
    from spanaug.core.config import ConstraintSettings
    from spanaug.pipeline.constraints import expand_stage
    from spanaug.pipeline.iterations import select_stage

    artifacts.write_table([], tmp_path / "aligned.parquet", artifacts.ALIGNED)
    assert select_stage(tmp_path / "aligned.parquet", tmp_path / "chain.parquet") == 0
    expand_stage(tmp_path / "chain.parquet", tmp_path / "req.parquet", 2, ConstraintSettings())
    assert artifacts.read_table(tmp_path / "req.parquet", artifacts.REQUESTS).num_rows == 0
    assert "empty shard" in caplog.text and "shard is empty" in caplog.text


def test_the_cli_turns_an_unexpected_exception_into_one_line(tmp_path, capsys, monkeypatch):
    import spanaug.pipeline.importers
    from spanaug.cli.main import main

    def boom(*args, **kwargs):
        raise RuntimeError("a library fault")

    monkeypatch.setattr(spanaug.pipeline.importers, "import_corpus", boom)
    assert (
        main(
            ["import", "--format", "jsonl", "--inputs", str(tmp_path / "x.jsonl"), "--out", str(tmp_path / "s.parquet")]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err == "spanaug: error: import: RuntimeError: a library fault (rerun with -v for the traceback)\n"


def test_frame_id_windows_a_sentence_over_the_encoder_limit(tiny_encoder):
    import torch

    from spanaug.downstream.frameid.data import Sentence
    from spanaug.downstream.frameid.model import FrameIdConfig, FrameIdentifier

    model = FrameIdentifier(
        FrameIdConfig(encoder=tiny_encoder, frames=["NULL", "F"], pos_tags=["?"], chars=["", "?", "A"], max_length=24),
        device="cpu",
    )
    long = Sentence(["Abby", "bought", "a", "car", "from", "Robin", "last", "week"] * 4, {(1, 1): "F"})
    model.encode([long, Sentence(["Abby", "bought", "it"], {(1, 1): "F"})])
    vectors = model._cache[tuple(long.tokens)]
    assert model.windowed == 1 and vectors.shape[0] == 32
    assert all(bool(v.abs().sum() > 0) for v in vectors)  # no word past a cut left with a zero vector
    assert torch.isfinite(vectors).all()


@pytest.mark.parametrize("form", ["\u200b", "\u200d\u200d", "\ufeff", " \u200b ", "\u00a0", "\u200b \u2060"])
def test_invisible_word_forms_count_as_blank(tmp_path, form):
    """A word form of only format characters (Unicode Cf) and whitespace is blank: refused by the
    readers and the artifact check, and never expanded into constraints."""
    from spanaug.core.text import is_blank
    from spanaug.core.validation import validate
    from spanaug.pipeline.constraints import expand
    from spanaug.pipeline.importers import read_jsonl_sentences

    assert is_blank(form) and not is_blank(f"a{form}")
    assert expand([form]) == set()
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"tokens": ["He", form, "it"], "span": [1, 1], "frame": "F"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"in\.jsonl, line 1: 'tokens'"):
        list(read_jsonl_sentences(path))
    table = pa.table({"tokens": [["He", form]]})
    with pytest.raises(ArtifactError, match="token 1"):
        validate(table, tmp_path / "t.parquet")


def test_ctrl_c_ends_with_one_line_and_exit_130(monkeypatch, capsys):
    """Ctrl-C anywhere in a command: one line on stderr, exit 130, no traceback."""
    from spanaug.cli import main as entry

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(entry, "run", interrupted)
    assert entry.main(["config", "schema"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("spanaug: interrupted") and len(err.strip().splitlines()) == 1


def test_out_naming_a_folder_is_refused_naming_it(tmp_path, capsys):
    from spanaug.cli.main import main

    run = tmp_path / "run"
    run.mkdir()
    (run / "seeds.parquet").mkdir()  # --out names a folder
    artifacts.write_table([seed("s1", ["a", "b"], 0, 0, "F", "a.n")], tmp_path / "s.parquet", artifacts.SENTENCES)
    code = main(["seeds", "--sentences", str(tmp_path / "s.parquet"), "--out", str(run / "seeds.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and f"{run / 'seeds.parquet'}: is a folder" in err, err


def test_a_full_disk_names_the_destination_and_keeps_it(tmp_path, monkeypatch):
    """ENOSPC mid-write: one error naming the file the command was writing; its old content stays."""
    import errno
    import os

    from spanaug.core import files

    dest = tmp_path / "out.json"
    dest.write_text("old")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(files.json, "dumps", full)
        with pytest.raises(InputError, match=r"out\.json: cannot be written \(no space left on the device\)"):
            files.write_json({"a": 1}, dest)
    assert dest.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary left behind


def test_a_device_the_machine_lacks_is_named_not_the_model(tmp_path, capsys, monkeypatch):
    """--device cuda on a CPU machine: the device is the problem, not the aligner's folder."""
    import torch

    from spanaug.cli.main import main
    from spanaug.core.devices import choose_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ConfigError, match=r"device: 'cuda:1', but \S+ has 1 CUDA device\(s\)"):
        choose_device("cuda:1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=r"device: cuda: the config names CUDA, but torch cannot use CUDA on host"):
        choose_device("cuda")
    assert choose_device("cpu").type == "cpu"
    instances = tmp_path / "in.jsonl"
    instances.write_text(
        json.dumps({"id": "a", "source_tokens": ["x"], "target_tokens": ["y"], "source_span": [0, 0]}) + "\n"
    )
    out = tmp_path / "p.jsonl"
    code = main(
        [
            "align",
            "predict",
            "--model",
            str(tmp_path),
            "--instances",
            str(instances),
            "--out",
            str(out),
            "--device",
            "cuda:1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "device" in err and "torch cannot use CUDA" in err, err


@pytest.mark.parametrize(
    "fes, message",
    [
        ([{"name": "Goods", "start": 2, "end": 5}], r"FE 'Goods' at \[2, 5\] is not inside the 3 tokens"),
        (
            [{"name": "Buyer", "start": 0, "end": 1}, {"name": "Goods", "start": 1, "end": 2}],
            r"FE 'Buyer' at \[0, 1\] overlaps FE 'Goods' at \[1, 2\]",
        ),
        ([{"name": "\t", "start": 0, "end": 0}], r"an FE's name is '\\t'"),
    ],
)
def test_seeds_with_bad_frame_elements_are_refused_by_the_cli(tmp_path, capsys, fes, message):
    """A seeds file of another writer (no spanaug checks) whose FEs are wrong: one line, exit 2."""
    from spanaug.cli.main import main

    row = {
        "sentence_id": "s1",
        "tokens": ["He", "bought", "it"],
        "text": "He bought it",
        "span_start": 1,
        "span_end": 1,
        "frame": "Commerce_buy",
        "lexical_unit": "buy.v",
        "source": "x",
        "corpus_part": "jsonl",
        "order": 0,
        "frame_elements": [{"null_type": None, "coreness": None, **fe} for fe in fes],
    }
    loose = pa.schema([f.with_nullable(True) for f in artifacts.SENTENCES])
    seeds = tmp_path / "seeds.parquet"
    pq.write_table(pa.Table.from_pylist([row], schema=loose), seeds)
    assert main(["shard", "--seeds", str(seeds), "--out", str(tmp_path / "c0.parquet")]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(rf"spanaug: error: {re.escape(str(seeds))}, row 0: frame_elements: {message}.*\n", err), err
    assert not (tmp_path / "c0.parquet").exists()


def _paraphrase_row():
    return {
        "seed_id": "s",
        "frame": "Commerce_buy",
        "lexical_unit": "buy.v",
        "seed_trigger": "bought",
        "iteration": 1,
        "source_tokens": ["Abby", "bought", "a", "car"],
        "source_text": "Abby bought a car",
        "source_span_start": 1,
        "source_span_end": 1,
        "constraints": ["bought"],
        "beam_rank": 0,
        "paraphrase_tokens": ["Abby", "purchased", "a", "car"],
        "paraphrase_text": "Abby purchased a car",
        "paraphrase_score": 0.5,
    }


def test_align_refuses_an_already_aligned_shard_naming_its_stage(tiny_encoder, tmp_path, capsys):
    """The aligned shard has every column of the paraphrases it extends: only its record tells them apart."""
    from spanaug.cli.main import main
    from spanaug.core.aligner_settings import AlignerConfig
    from spanaug.pipeline.aligner.model import SpanAligner

    SpanAligner(AlignerConfig(encoder=tiny_encoder, k=2, hidden=8, max_length=24), device="cpu").save_pretrained(
        tmp_path / "aligner"
    )
    artifacts.write_table([_paraphrase_row()], tmp_path / "p.parquet", artifacts.PARAPHRASES)

    def align(paraphrases, out):
        args = ["--model", str(tmp_path / "aligner"), "--paraphrases", str(paraphrases), "--out", str(out)]
        return main(["align", "paraphrases", *args, "--device", "cpu"])

    assert align(tmp_path / "p.parquet", tmp_path / "a.parquet") == 0
    assert artifacts.read_artifact_record(tmp_path / "a.parquet") == {
        "artifact": "aligned",
        "stage": "align paraphrases",
    }
    capsys.readouterr()
    assert align(tmp_path / "a.parquet", tmp_path / "a2.parquet") == 2
    err = capsys.readouterr().err.splitlines()[-1]  # the model's loading bar comes first
    assert err == (
        f"spanaug: error: {tmp_path / 'a.parquet'}: holds the 'aligned' artifact (stage align paraphrases), "
        "expected 'paraphrases'"
    )
    assert not (tmp_path / "a2.parquet").exists()


def test_assemble_refuses_the_augmented_dataset(tmp_path, capsys):
    from spanaug.cli.main import main

    row = output("s1", 1, ["He", "purchased", "it"], 1, 1, "Commerce_buy", "buy.v", "purchase")
    artifacts.write_table([row], tmp_path / "c1.parquet", artifacts.CHAIN)
    assert main(["assemble", "--inputs", str(tmp_path / "c1.parquet"), "--out", str(tmp_path / "aug.parquet")]) == 0
    capsys.readouterr()
    assert main(["assemble", "--inputs", str(tmp_path / "aug.parquet"), "--out", str(tmp_path / "again.parquet")]) == 2
    err = capsys.readouterr().err
    aug = tmp_path / "aug.parquet"
    assert err == f"spanaug: error: {aug}: holds the 'augmented' artifact (stage assemble), expected 'chain'\n"
    assert not (tmp_path / "again.parquet").exists()


def _unrecorded(path, rows, schema):
    """``rows`` written as another tool (or a spanaug before the record) would: no metadata at all."""
    loose = pa.schema([f.with_nullable(True) for f in schema])
    pq.write_table(pa.Table.from_pylist(rows, schema=loose), path)
    assert artifacts.read_artifact_record(path) is None
    return path


def test_a_file_without_the_record_reads_unless_its_columns_are_a_later_stages(tmp_path):
    """Decision: a file without the record still reads as before, judged by its columns; one with every
    column of a later artifact is refused, since that is the mistake the record exists to catch."""
    row = _paraphrase_row()
    plain = _unrecorded(tmp_path / "p.parquet", [row], artifacts.PARAPHRASES)
    assert artifacts.read_table(plain, artifacts.PARAPHRASES).num_rows == 1
    extra = pq.read_table(plain).append_column("note", pa.array(["another tool's column"]))
    pq.write_table(extra, tmp_path / "extra.parquet")
    assert next(artifacts.iter_batches(tmp_path / "extra.parquet", artifacts.PARAPHRASES)).num_rows == 1
    aligned = {**row, "aligned_start": 1, "aligned_end": 1, "aligner_score": 0.9, "frame_elements": None}
    _unrecorded(tmp_path / "a.parquet", [aligned], artifacts.ALIGNED)
    with pytest.raises(ArtifactError) as err:
        artifacts.iter_batches(tmp_path / "a.parquet", artifacts.PARAPHRASES)  # refused at the call
    assert str(err.value) == (
        f"{tmp_path / 'a.parquet'}: has the columns of the 'aligned' artifact, expected 'paraphrases' "
        "(the file does not record its stage: written by another tool or an older spanaug)"
    )
    assert artifacts.read_table(tmp_path / "a.parquet", artifacts.ALIGNED).num_rows == 1


def test_the_scored_dataset_serves_as_the_augmented_one_but_not_the_reverse(tmp_path):
    row = output("s1", 1, ["He", "purchased", "it"], 1, 1, "Commerce_buy", "buy.v", "purchase")
    row["output_id"] = "s1#1"
    artifacts.write_table([{**row, "p_classifier": 0.5}], tmp_path / "scored.parquet", artifacts.SCORED)
    assert artifacts.read_table(tmp_path / "scored.parquet", artifacts.AUGMENTED).num_rows == 1
    with pytest.raises(ArtifactError, match=r"holds the 'scored' artifact, expected 'chain'"):
        artifacts.read_columns(tmp_path / "scored.parquet", artifacts.CHAIN, ["iteration", "seed_id"])


def test_a_damaged_artifact_record_is_named(tmp_path):
    table = pa.Table.from_pylist([_paraphrase_row()], schema=artifacts.PARAPHRASES)
    pq.write_table(table.replace_schema_metadata({artifacts.ARTIFACT_KEY: "{not json"}), tmp_path / "p.parquet")
    with pytest.raises(ArtifactError, match=rf"p\.parquet: its {artifacts.ARTIFACT_KEY} metadata is not JSON"):
        artifacts.read_table(tmp_path / "p.parquet", artifacts.PARAPHRASES)


# ---------------------------------------------------------------- model saves honour the umask (issue 49)


@pytest.fixture(params=[0o022, 0o027], ids=["umask022", "umask027"])
def umask(request):
    import os

    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _wrong_modes(root, umask):
    """Every folder and file under ``root`` whose permissions are not what the umask gives; and the files."""
    import stat

    paths = [root, *root.rglob("*")]
    wrong = {
        p.relative_to(root).as_posix() or ".": oct(stat.S_IMODE(p.stat().st_mode))
        for p in paths
        if stat.S_IMODE(p.stat().st_mode) != (0o777 if p.is_dir() else 0o666) & ~umask
    }
    return wrong, {p.name for p in paths if p.is_file()}


def test_a_saved_model_folder_gets_the_umasks_permissions(tiny_encoder, tmp_path, umask):
    """safetensors writes its weights through a private temporary (0600): a saved aligner, and the
    demo's stand-in models, get the umask's permissions in every file and folder, weights included."""
    from conftest import save_copy_aligner

    from spanaug.demo.standins import save_encoder_standin

    save_copy_aligner(tiny_encoder, tmp_path / "aligner", pairs=8)
    wrong, names = _wrong_modes(tmp_path / "aligner", umask)
    assert "model.safetensors" in names and wrong == {}
    save_encoder_standin(tmp_path / "encoder", ["Abby bought a car", "The company purchased steel"], vocab_size=60)
    wrong, names = _wrong_modes(tmp_path / "encoder", umask)
    assert "model.safetensors" in names and wrong == {}


def test_a_trained_paraphraser_and_its_checkpoints_get_the_umasks_permissions(tmp_path, umask):
    from conftest import CORPUS

    from spanaug.core.config import ParaphraserTrainSettings
    from spanaug.pipeline.paraphraser.training import train_paraphraser

    bitext = tmp_path / "b.tsv"
    bitext.write_text("".join(f"{a}\t{b}\n" for a, b in zip(CORPUS, CORPUS[1:] + CORPUS[:1])))
    cfg = ParaphraserTrainSettings(
        bitext=str(bitext),
        vocab_size=100,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        attention_heads=2,
        ffn_dim=32,
        batch_size=8,
        max_steps=2,
        checkpoint_every=1,
        warmup_steps=1,
    )
    train_paraphraser(cfg, tmp_path / "model", device="cpu", progress=False)
    wrong, names = _wrong_modes(tmp_path / "model", umask)
    assert {"model.safetensors", "optimizer.pt"} <= names and wrong == {}


# ---------------------------------------------------------------- clear errors for model folders (issue 49)


HUB = "NAME or ORG/NAME"


@pytest.mark.parametrize("backend", ["hf", "static"])
@pytest.mark.parametrize("model", ["./no-such-paraphraser", "ABSOLUTE", "~/no-such-paraphraser"])
def test_a_missing_local_paraphraser_folder_is_named_as_such(tmp_path, capsys, model, backend):
    """Not "Repo id must use alphanumeric chars": a path that can be no hub name is a missing folder."""
    from test_devices import _requests

    from spanaug.cli.main import main

    model = str(tmp_path / "no-such-paraphraser") if model == "ABSOLUTE" else model
    requests = _requests(tmp_path)
    args = ["paraphrase", "--requests", str(requests), "--out", str(tmp_path / "p.parquet"), "--backend", backend]
    assert main([*args, "--model", model]) == 2
    err = capsys.readouterr().err
    assert err == f"spanaug: error: {model}: no such folder (a local model folder; a Hugging Face hub name is {HUB})\n"
    assert not (tmp_path / "p.parquet").exists()


def test_a_file_given_as_a_paraphraser_folder_is_named_as_a_file(tmp_path, capsys):
    from test_devices import _requests

    from spanaug.cli.main import main

    requests = _requests(tmp_path)
    args = ["paraphrase", "--requests", str(requests), "--out", str(tmp_path / "p.parquet"), "--backend", "hf"]
    assert main([*args, "--model", str(requests)]) == 2
    assert capsys.readouterr().err == f"spanaug: error: {requests}: a file, not a model folder\n"


def test_iterate_with_an_iterations_dir_that_is_a_file_exits_2_naming_it(tmp_path, capsys):
    """Not the unforeseen-error path (exit 1) naming the writer's temporary folder."""
    from spanaug.cli.main import main
    from spanaug.pipeline.iterations import init_shards

    artifacts.write_table(
        [seed("s1", ["He", "bought", "it"], 1, 1, "Commerce_buy", "buy.v")], tmp_path / "s.parquet", artifacts.SENTENCES
    )
    chain = tmp_path / "c0.parquet"
    init_shards(tmp_path / "s.parquet", [chain])
    taken = tmp_path / "iterations"
    taken.write_text("not a folder")
    args = ["iterate", "--chain", str(chain), "--iterations-dir", str(taken), "--shard", "000", "--iterations", "1"]
    assert main([*args, "--align", "--model nowhere"]) == 2
    err = capsys.readouterr().err
    # Found by the command's checks before any model loads, naming the option.
    assert err.startswith(f"spanaug: error: --iterations-dir {taken}: {taken} is a file, not a folder")
    assert ".spanaug-tmp" not in err and len(err.strip().splitlines()) == 1
    assert taken.read_text() == "not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c0.parquet", "iterations", "s.parquet"]


@pytest.fixture(scope="module")
def model_folders(tiny_encoder, tiny_aligner, tmp_path_factory):
    """A folder of each kind of trained model (one epoch each), a transformers encoder, and an
    argument identifier saved before folders recorded their kind."""
    from test_argid import fe_toy

    from spanaug.core import modeldir
    from spanaug.core.argid_settings import ArgIdTrainSettings
    from spanaug.core.evaluation_settings import FrameIdTrainSettings
    from spanaug.downstream.argid.parse import frame_sentences
    from spanaug.downstream.argid.training import train_argid
    from spanaug.downstream.frameid.training import train_frameid

    root = tmp_path_factory.mktemp("kinds")
    argid, _ = train_argid(
        fe_toy(12, 0),
        tiny_encoder,
        ArgIdTrainSettings(epochs=1, batch_size=8, finetune=False, holdout_share=0),
        device="cpu",
        progress=False,
    )
    argid.save_pretrained(root / "argid")
    frameid, _ = train_frameid(
        frame_sentences(fe_toy(12, 1))[0],
        tiny_encoder,
        FrameIdTrainSettings(epochs=1, batch_size=8, holdout_share=0),
        device="cpu",
        progress=False,
    )
    frameid.save_pretrained(root / "frameid")
    shutil.copytree(root / "argid", root / "old-argid")
    modeldir.write_manifest(root / "old-argid")  # as an older spanaug wrote it: no kind recorded
    from test_argid import write_conll

    return {
        "argid": root / "argid",
        "frameid": root / "frameid",
        "aligner": tiny_aligner,
        "encoder": tiny_encoder,
        "old-argid": root / "old-argid",
        "conll": write_conll(fe_toy(4, 2), root / "test.conll"),
    }


@pytest.fixture
def no_weights_load(monkeypatch):
    """Any weights loaded through huggingface_hub's mixin fail the test: the kind is checked first."""
    from huggingface_hub import PyTorchModelHubMixin

    def loaded(*args, **kwargs):
        raise AssertionError("weights were loaded before the folder's kind was checked")

    monkeypatch.setattr(PyTorchModelHubMixin, "_load_as_safetensor", classmethod(loaded))


@pytest.mark.parametrize(
    ("command", "given", "message"),
    [
        (["argid", "eval"], "frameid", "holds a Frame ID model, not an argument identifier"),
        (["argid", "eval"], "aligner", "holds a paper aligner, not an argument identifier"),
        (["argid", "eval"], "encoder", "holds a transformers bert model, not an argument identifier"),
        (["argid", "predict"], "frameid", "holds a Frame ID model, not an argument identifier"),
        (["frameid", "eval"], "argid", "holds an argument identifier, not a Frame ID model"),
        (["frameid", "eval"], "old-argid", "not a Frame ID model: its config.json has settings a Frame ID model has"),
        (["align", "predict"], "argid", "holds an argument identifier, not a paper aligner"),
        (["align", "predict"], "frameid", "holds a Frame ID model, not a paper aligner"),
    ],
)
def test_a_model_folder_of_another_kind_is_named_before_its_weights_load(
    model_folders, no_weights_load, tmp_path, capsys, command, given, message
):
    from spanaug.cli.main import main

    folder, conll = model_folders[given], model_folders["conll"]
    inputs = {
        "argid eval": ["--test", str(conll)],
        "argid predict": ["--input", str(conll), "--out", str(tmp_path / "o.jsonl")],
        "frameid eval": ["--test", str(conll)],
        "align predict": ["--instances", str(tmp_path / "i.jsonl"), "--out", str(tmp_path / "o.jsonl")],
    }[" ".join(command)]
    assert main([*command, "--model", str(folder), *inputs, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spanaug: error: {folder}: {message}"), err
    assert len(err.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


def test_argid_eval_refuses_another_kind_as_its_frame_id_model(model_folders, no_weights_load, capsys):
    from spanaug.cli.main import main

    args = ["argid", "eval", "--model", str(model_folders["argid"]), "--test", str(model_folders["conll"])]
    assert main([*args, "--frames", "predicted", "--frameid-model", str(model_folders["aligner"])]) == 2
    assert "holds a paper aligner, not a Frame ID model" in capsys.readouterr().err


def test_a_trained_head_given_as_an_encoder_is_named(model_folders, tmp_path, capsys):
    """argid train --encoder naming an aligner's folder: not a transformers model, said by its record."""
    from spanaug.cli.main import main

    args = ["argid", "train", "--train", str(model_folders["conll"]), "--out", str(tmp_path / "m"), "--epochs", "1"]
    assert main([*args, "--encoder", str(model_folders["aligner"]), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert f"{model_folders['aligner']}: holds a trained paper aligner" in err and "not a transformers model" in err
    assert not (tmp_path / "m").exists()
