"""A release from toy models says so: decided from the models' own records (spanaug.core.provenance)."""

import json
import subprocess
import sys

from conftest import write_two_chains

from spanaug.core.provenance import model_origin, toy_models, write_standin_record
from spanaug.report.summary import toy_models_banner


def _model(folder, summary=None, config=None):
    folder.mkdir(parents=True)
    if summary is not None:
        (folder / "training_summary.json").write_text(json.dumps(summary))
    (folder / "config.json").write_text(json.dumps(config or {}))
    return str(folder)


def _paraphraser_summary(pairs, bitext):
    return {"steps": 300, "pairs": pairs, "config": {"bitext": bitext, "d_model": 128}}


def _aligner_summary(instances, file):
    return {"kind": "paper", "corpora": [{"file": file, "part": "train", "instances": instances}]}


def test_the_demo_recipes_models_are_toys_wherever_they_lie(tmp_path):
    """Moved out of results/demo (the path says nothing), the records still tell."""
    para = _model(tmp_path / "elsewhere/p", _paraphraser_summary(76, "resources/demo/bitext.tsv"))
    aligner = _model(tmp_path / "elsewhere/a", _aligner_summary(79, "results/x/models/aligner_instances.jsonl"))
    toys = toy_models(para, aligner)
    assert [o.role for o in toys] == ["paraphraser", "aligner"]
    assert "demo recipe" in toys[0].toy and "76 pairs" in toys[0].toy
    assert "79 span instances" in toys[1].toy


def test_models_trained_on_real_data_are_no_toys(tmp_path):
    para = _model(tmp_path / "p", _paraphraser_summary(2_000_000, "data/parabank2.tsv"))
    aligner = _model(tmp_path / "a", _aligner_summary(120_000, "results/f/models/word_aligned/edinburgh.spans.jsonl"))
    assert toy_models(para, aligner) == []
    # a hub name, or a folder without records, says nothing either way
    assert toy_models("humarin/chatgpt_paraphraser_on_T5_base", _model(tmp_path / "bare")) == []


def test_a_stand_in_and_an_aligner_on_a_stand_in_encoder_are_toys(tmp_path):
    para = _model(tmp_path / "p")
    write_standin_record(para, "a random t5 paraphraser")
    encoder = _model(tmp_path / "enc")
    write_standin_record(encoder, "a random BERT encoder")
    aligner = _model(tmp_path / "a", _aligner_summary(120_000, "data/big.jsonl"), {"encoder": encoder})
    assert "stand-in" in model_origin("paraphraser", para).toy
    assert "stand-in encoder" in model_origin("aligner", aligner).toy


def test_the_summary_says_which_models_are_toys(tmp_path):
    para = _model(tmp_path / "p", _paraphraser_summary(76, "resources/demo/bitext.tsv"))
    banner = toy_models_banner(toy_models(para, None))
    assert "Toy models" in banner and "paraphraser" in banner and "76 pairs" in banner
    assert toy_models_banner([]) == ""


def test_a_curves_page_says_when_the_models_it_derives_from_are_toys(tmp_path):
    """spanaug report tables with the run's models: a downstream curve over a toy's outputs says so."""
    from spanaug.cli.main import main

    (tmp_path / "curves.csv").write_text("augmenter,fraction,f1_mean\nnone,1.0,0.3\n")
    para = _model(tmp_path / "p", _paraphraser_summary(76, "resources/demo/bitext.tsv"))
    real = _model(tmp_path / "r", _paraphraser_summary(2_000_000, "data/parabank2.tsv"))
    args = ["report", "tables", "--inputs", str(tmp_path / "curves.csv"), "--titles", "Curves"]
    assert main([*args, "--outputs", str(tmp_path / "toy.html"), "--paraphraser", para]) == 0
    assert main([*args, "--outputs", str(tmp_path / "real.html"), "--paraphraser", real]) == 0
    toy, trained = (tmp_path / "toy.html").read_text(), (tmp_path / "real.html").read_text()
    assert "Toy models" in toy and "76 pairs" in toy and "0.3" in toy
    assert "Toy models" not in trained and "0.3" in trained


def test_the_card_of_a_run_with_toy_models_says_so(tmp_path):
    """spanaug export card reads the models' records: a banner, tags that keep it from passing as real data,
    and the provenance names why each model is a toy."""
    data = write_two_chains(tmp_path / "data")
    augmented, seeds = data / "augmented.parquet", data / "seeds.parquet"
    para = _model(tmp_path / "p", _paraphraser_summary(76, "resources/demo/bitext.tsv"))
    aligner = _model(tmp_path / "a", _aligner_summary(120_000, "data/big.jsonl"))
    run = {"run_name": "fn-dev", "inputs": ["data/fn1.7.dev.conll"], "format": "conll", "demo": False}
    cmd = [sys.executable, "-m", "spanaug", "export", "card", "--augmented", str(augmented), "--seeds", str(seeds)]
    cmd += ["--run", json.dumps(run), "--paraphraser-model", para, "--aligner-model", aligner]
    subprocess.run([*cmd, "--out-dir", str(tmp_path / "toy")], check=True, capture_output=True)
    card = (tmp_path / "toy/README.md").read_text()
    assert "**Toy models.**" in card and "toy-models" in card.split("---")[1]
    assert "the paraphraser" in card and "the aligner" not in card.split("## Provenance")[1].split("##")[0]
    real = _model(tmp_path / "real", _paraphraser_summary(2_000_000, "data/parabank2.tsv"))
    cmd[cmd.index("--paraphraser-model") + 1] = real
    subprocess.run([*cmd, "--out-dir", str(tmp_path / "real-card")], check=True, capture_output=True)
    assert "Toy models" not in (tmp_path / "real-card/README.md").read_text()


def _safetensors(path, **shapes):
    import numpy as np
    from safetensors.numpy import save_file

    save_file({name: np.zeros(shape, dtype=np.float32) for name, shape in shapes.items()}, str(path))


def _gguf(path, tensors):
    """A GGUF file by the format's layout: metadata of each kind the skipper meets, then tensor infos."""
    import struct

    def text(s):
        return struct.pack("<Q", len(s)) + s.encode()

    meta = [
        text("general.architecture") + struct.pack("<I", 8) + text("gemma3"),
        text("gemma3.context_length") + struct.pack("<II", 4, 32768),
        text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + text("<pad>") + text("a") + text("b"),
        text("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 0, 1, 2),
    ]
    infos = [
        text(name) + struct.pack(f"<I{len(dims)}Q", len(dims), *dims) + struct.pack("<IQ", 0, 0)
        for name, dims in tensors
    ]
    body = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta)) + b"".join(meta + infos)
    path.write_bytes(body + b"\0" * 64)


def test_a_models_parameters_are_counted_from_its_weight_headers(tmp_path):
    from spanaug.core.model_size import describe_count, parameter_count

    folder = tmp_path / "model"
    folder.mkdir()
    _safetensors(folder / "model-00001-of-00002.safetensors", a=(3, 4), b=(5,))
    _safetensors(folder / "model-00002-of-00002.safetensors", c=(2, 2, 2))
    (folder / "checkpoints").mkdir()  # a trainer's checkpoints are not the model
    _safetensors(folder / "checkpoints/model.safetensors", d=(100,))
    assert parameter_count(folder) == 12 + 5 + 8
    assert parameter_count(folder / "model-00002-of-00002.safetensors") == 8
    _gguf(tmp_path / "m.gguf", [("token_embd.weight", (640, 262144)), ("output_norm.weight", (640,))])
    assert parameter_count(tmp_path / "m.gguf") == 640 * 262144 + 640
    (tmp_path / "bad.gguf").write_bytes(b"GGUF\x03\x00")  # cut short: unknown, not a failure
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/pytorch_model.bin").write_bytes(b"\0" * 8)
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 16)
    for unknown in ("bad.gguf", "bin", "bad.safetensors", "missing"):
        assert parameter_count(tmp_path / unknown) is None, unknown
    assert parameter_count("nobody-here/no-such-model-xyz") is None  # not in the cache: nothing downloaded
    assert [describe_count(n) for n in (999, 14_200, 268_098_176, 1_543_714_304)] == ["999", "14.2K", "268M", "1.54B"]


def test_a_paraphraser_fine_tuned_on_few_pairs_is_no_toy_but_one_trained_from_scratch_is(tmp_path):
    """The toy rule counts pairs only for a paraphraser trained from scratch: a pretrained model fine-tuned
    on 80 pairs (its training summary names the model it started from) keeps its pretraining's language."""
    from spanaug.core.provenance import paraphraser_training

    tuned = _model(tmp_path / "tuned", {**_paraphraser_summary(80, "data/pairs.tsv"), "init": "gemma.gguf"})
    scratch = _model(tmp_path / "scratch", _paraphraser_summary(80, "data/pairs.tsv"))
    assert model_origin("paraphraser", tuned).toy is None
    assert "from scratch on 80 sentence pairs" in model_origin("paraphraser", scratch).toy
    assert paraphraser_training(tuned) == "fine-tuned from `gemma.gguf` on 80 sentence pairs of `data/pairs.tsv`"
    assert paraphraser_training(scratch) == "trained from scratch on 80 sentence pairs of `data/pairs.tsv`"
    assert paraphraser_training("humarin/chatgpt_paraphraser_on_T5_base") is None
