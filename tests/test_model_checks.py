"""Models are checked for what they claim to be when loaded: a manifest for the folders spanaug
writes, tokenizer files and a vocabulary for any paraphraser, sources within the model's positions."""

import json
import shutil

import pytest

from spanaug.cli.main import main
from spanaug.core import artifacts, modeldir
from spanaug.core.errors import InputError
from spanaug.pipeline.aligner.model import SpanAligner
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser


def flip_byte(path, offset=None):
    data = bytearray(path.read_bytes())
    where = len(data) // 2 if offset is None else offset
    data[where] ^= 0xFF
    path.write_bytes(bytes(data))


def test_every_model_folder_spanaug_writes_has_a_manifest(tiny_aligner):
    manifest = json.loads((tiny_aligner / modeldir.MANIFEST_FILE).read_text())
    listed = set(manifest["files"])
    on_disk = {p.relative_to(tiny_aligner).as_posix() for p in tiny_aligner.rglob("*") if p.is_file()}
    assert "model.safetensors" in listed and "config.json" in listed
    assert listed == on_disk - {modeldir.MANIFEST_FILE}
    assert modeldir.verify_manifest(tiny_aligner) is True


def test_one_flipped_byte_in_the_weights_is_refused(tiny_aligner, tmp_path):
    """safetensors checks the header, not the data: the manifest's sha256 catches the rest."""
    damaged = tmp_path / "al"
    shutil.copytree(tiny_aligner, damaged)
    flip_byte(damaged / "model.safetensors")
    with pytest.raises(InputError, match=r"model\.safetensors: its sha256 differs from the model's manifest"):
        SpanAligner.from_pretrained(damaged, device="cpu")


def test_a_missing_or_truncated_file_is_named(tiny_aligner, tmp_path):
    damaged = tmp_path / "al"
    shutil.copytree(tiny_aligner, damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(InputError, match=r"model\.safetensors: 100 bytes where the model's manifest says"):
        modeldir.verify_manifest(damaged)
    weights.unlink()
    with pytest.raises(InputError, match="listed in the model's manifest but missing"):
        modeldir.verify_manifest(damaged)


def test_a_folder_without_manifest_is_loaded_unchecked(tiny_aligner, tmp_path):
    """Hub models and folders of older versions have none: nothing to check them against."""
    old = tmp_path / "al"
    shutil.copytree(tiny_aligner, old)
    (old / modeldir.MANIFEST_FILE).unlink()
    assert modeldir.verify_manifest(old) is False
    assert SpanAligner.from_pretrained(old, device="cpu").config.k == 2


def test_paraphraser_without_tokenizer_files_is_refused(tiny_paraphraser, tmp_path, capsys):
    """transformers would build an empty tokenizer from the config, and the stage would decode nothing."""
    bare = tmp_path / "p"
    shutil.copytree(tiny_paraphraser, bare)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (bare / name).unlink(missing_ok=True)
    with pytest.raises(InputError, match="no tokenizer files"):
        HFParaphraser.from_pretrained(bare, device="cpu")
    requests = tmp_path / "r.parquet"
    artifacts.write_table([], requests, artifacts.REQUESTS)  # a valid input: the stage checks it first
    code = main(["paraphrase", "--requests", str(requests), "--out", str(tmp_path / "o.parquet"), "--model", str(bare)])
    err = capsys.readouterr().err
    assert code == 2 and f"spanaug: error: {bare}" in err and "no tokenizer files" in err, err


def test_paraphraser_with_damaged_weights_names_the_model(tiny_paraphraser, tmp_path):
    damaged = tmp_path / "p"
    shutil.copytree(tiny_paraphraser, damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    with pytest.raises(InputError, match=rf"{damaged}: model\.safetensors: truncated"):
        HFParaphraser.from_pretrained(damaged, device="cpu")


def test_paraphraser_trained_by_spanaug_is_verified(tiny_paraphraser, tmp_path):
    """A folder with a manifest (as paraphraser train writes) is checked byte for byte."""
    folder = tmp_path / "p"
    shutil.copytree(tiny_paraphraser, folder)
    modeldir.write_manifest(folder)
    HFParaphraser.from_pretrained(folder, device="cpu")
    flip_byte(folder / "model.safetensors")
    with pytest.raises(InputError, match="sha256 differs"):
        HFParaphraser.from_pretrained(folder, device="cpu")


def test_a_source_longer_than_the_positions_is_one_error(tiny_paraphraser):
    from spanaug.core.config import DecodeSettings

    paraphraser = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu")
    assert paraphraser.positions == 128
    long_text = " ".join(["the cat sat on the mat"] * 60)
    requests = [
        {"seed_id": "s1", "source_text": "a short one", "constraints": ["x"]},
        {"seed_id": "s2", "source_text": long_text, "constraints": ["x"]},
    ]
    with pytest.raises(InputError, match=r"1 source\(s\) longer than the model's 128 positions \(seed 's2'"):
        list(
            paraphrase(
                paraphraser, requests, DecodeSettings(model=tiny_paraphraser, beam_size=2, return_top=1), progress=False
            )
        )


def _config_with(paraphraser_model, **changes):
    import yaml
    from conftest import REPO

    from spanaug.core.config import load_run_config
    from spanaug.core.overrides import merge_configs

    raw = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    raw["data"]["inputs"] = [str(REPO / p) for p in raw["data"]["inputs"]]
    raw["paraphraser"] = {"model": str(paraphraser_model)}
    raw["aligner"]["train"]["bitext"] = str(REPO / raw["aligner"]["train"]["bitext"])
    raw["frameid"]["lexicon"] = raw["stats"]["lexicon"] = str(REPO / "resources/demo/fndata-demo")
    return load_run_config(merge_configs(raw, changes))


def test_config_check_runs_the_stage_checks_on_a_paraphraser_folder(tiny_paraphraser, tmp_path):
    """The preflight refuses what the paraphrase stage would: no tokenizer, a damaged spanaug model,
    sentences allowed longer than the model's positions."""
    from spanaug.workflow.preflight import check_run

    assert check_run(_config_with(tiny_paraphraser)) == []
    bare = tmp_path / "bare"
    shutil.copytree(tiny_paraphraser, bare)
    (bare / "tokenizer.json").unlink()
    problems = check_run(_config_with(bare))
    assert [p.key for p in problems] == ["paraphraser.model"] and "no tokenizer files" in problems[0].message
    damaged = tmp_path / "damaged"
    shutil.copytree(tiny_paraphraser, damaged)
    modeldir.write_manifest(damaged)
    flip_byte(damaged / "model.safetensors")
    assert "sha256 differs" in check_run(_config_with(damaged))[0].message
    long = check_run(_config_with(tiny_paraphraser, data={"max_tokens": 200}))
    assert [p.key for p in long] == ["data.max_tokens"] and "128 positions" in long[0].message
    assert [p.key for p in check_run(_config_with(tiny_paraphraser, data={"max_tokens": None}))] == ["data.max_tokens"]


def test_config_check_names_a_generation_config_key_no_decoder_implements(tiny_paraphraser, tmp_path):
    """As the stage refuses it when the model loads (search_spec): before any job is submitted."""
    import json

    from spanaug.workflow.preflight import check_run

    odd = tmp_path / "odd"
    shutil.copytree(tiny_paraphraser, odd)
    gen = odd / "generation_config.json"
    keys = json.loads(gen.read_text()) if gen.exists() else {}
    gen.write_text(json.dumps({**keys, "num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 0.5}))
    problems = check_run(_config_with(odd))
    assert [p.key for p in problems] == ["paraphraser.model"]
    assert "diversity_penalty=0.5, num_beam_groups=2, which no paraphrase decoder implements" in problems[0].message
    gen.write_text("{not json")
    assert "not a readable JSON file" in check_run(_config_with(odd))[0].message


def test_config_check_verifies_a_trained_aligner_folder(tiny_aligner, tiny_paraphraser, tmp_path):
    from spanaug.workflow.preflight import check_run

    damaged = tmp_path / "al"
    shutil.copytree(tiny_aligner, damaged)
    given = {"model": str(damaged), "train": None, "evaluation": None}
    off = {"baselines": None, "human_eval": None, "augmenters": None, "frameid": None, "argid": None}
    assert check_run(_config_with(tiny_paraphraser, aligner=given, **off)) == []
    flip_byte(damaged / "model.safetensors")
    problems = check_run(_config_with(tiny_paraphraser, aligner=given, **off))
    assert [p.key for p in problems] == ["aligner.model"] and "sha256 differs" in problems[0].message
