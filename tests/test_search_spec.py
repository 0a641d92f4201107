"""One search for every decoder: the spec built from the settings and the model's generation config."""

import dataclasses
import json
import logging
import shutil

import pytest
from conftest import CORPUS

from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError
from spanaug.pipeline.paraphraser import search_spec
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.stage import load_paraphraser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = DecodeSettings(beam_size=4, return_top=2, max_new_tokens=8, dtype="float32")


def _req(text, constraints=()):
    return {"seed_id": text[:10], "source_text": text, "source_tokens": text.split(), "constraints": list(constraints)}


def _with_generation(tiny_paraphraser, tmp_path, **keys):
    """A copy of the tiny model whose generation_config.json also sets ``keys``."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_paraphraser, folder)
    path = folder / "generation_config.json"
    gen = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**gen, **keys}))
    return str(folder)


def _outputs(para, cfg, texts=CORPUS[:3]):
    return [
        (r["seed_id"], r["paraphrase_text"]) for r in paraphrase(para, [_req(t) for t in texts], cfg, progress=False)
    ]


@pytest.mark.parametrize("backend", ["hf", "static", "ct2"])
def test_a_search_key_no_decoder_implements_is_a_config_error_naming_it(tiny_paraphraser, tmp_path, backend):
    """Every backend refuses the model at load, before a sentence is decoded (static no longer
    leaves it to hf, which would have applied it through generate while ct2 ignored it)."""
    if backend == "ct2":
        pytest.importorskip("ctranslate2")
    model = _with_generation(tiny_paraphraser, tmp_path, encoder_no_repeat_ngram_size=3, sequence_bias=None)
    cfg = DecodeSettings(model=model, backend=backend, dtype="float32")
    with pytest.raises(ConfigError, match=r"encoder_no_repeat_ngram_size=3, which no paraphrase decoder implements"):
        load_paraphraser(cfg, "cpu")


def test_search_keys_the_settings_decide_change_nothing_and_are_logged(tiny_paraphraser, tmp_path, caplog):
    """A hub paraphraser's own num_beams, repetition rules and length penalty do not change the
    settings' search: the same outputs as without them, and the log names each replaced value."""
    plain = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    model = _with_generation(
        tiny_paraphraser, tmp_path, num_beams=2, no_repeat_ngram_size=1, length_penalty=3.0, repetition_penalty=5.0
    )
    with caplog.at_level(logging.INFO, logger="spanaug.pipeline.paraphraser.search_spec"):
        own = HFParaphraser.from_pretrained(model, device="cpu", dtype="float32")
        assert _outputs(own, CFG) == _outputs(plain, CFG)
    assert "no_repeat_ngram_size=1; the settings decide it" in caplog.text
    assert "length_penalty=3.0; the settings decide it" in caplog.text


def test_the_models_banned_token_sequences_hold_in_every_output(tiny_paraphraser, tmp_path):
    """bad_words_ids of more than one token (generate's own; earlier dropped here) are banned
    beside each sentence's constraints: no output holds a pair the unconstrained search wrote."""
    plain = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    prepared = plain.prepare([_req(t) for t in CORPUS[:3]], CFG)
    beams = plain.decode(prepared, CFG, 0)
    pairs = sorted({tuple(row[i : i + 2]) for s in beams for row in s.rows() for i in range(1, len(row) - 1)})
    pairs = [p for p in pairs if plain.tokenizer.eos_token_id not in p and plain.tokenizer.pad_token_id not in p]
    assert pairs, "the unconstrained beams hold token pairs"
    banned = [list(p) for p in pairs[:20]]
    model = _with_generation(tiny_paraphraser, tmp_path, bad_words_ids=banned)
    own = HFParaphraser.from_pretrained(model, device="cpu", dtype="float32")
    assert set(map(tuple, banned)) <= set(own.search_spec(CFG).never)
    for sentence in own.decode(own.prepare([_req(t) for t in CORPUS[:3]], CFG), CFG, 0):
        for row in sentence.rows():
            assert not {tuple(row[i : i + 2]) for i in range(len(row) - 1)} & set(map(tuple, banned))


def test_every_decoder_derives_its_arguments_from_one_spec(tiny_paraphraser):
    from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

    static = StaticParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    spec = static.search_spec(CFG)
    assert static.search_spec(dataclasses.replace(CFG)) is spec  # built once per settings
    gen, ct2, engine = spec.generate_kwargs(), spec.ct2_kwargs(), static.search_settings(CFG)
    assert gen["num_beams"] == ct2["beam_size"] == engine.beams == 4
    assert gen["num_return_sequences"] == ct2["num_hypotheses"] == 4 and spec.keep == 2
    assert gen["length_penalty"] == ct2["length_penalty"] == engine.length_penalty == 1.0
    assert gen["eos_token_id"] == [engine.eos_token] == [static.model.generation_config.eos_token_id]
    assert gen["no_repeat_ngram_size"] == 0 and gen["repetition_penalty"] == 1.0
    sample = static.search_spec(DecodeSettings(mode="sample", top_k=7, num_samples=5, seed=3))
    assert (sample.width, sample.keep, sample.top_k) == (5, 5, 7)
    assert sample.ct2_kwargs()["sampling_topk"] == sample.generate_kwargs()["top_k"] == 7
    assert sample.batch_seed(2) == 3 * 100003 + 2


def test_a_model_without_an_end_token_is_refused():
    from transformers import GenerationConfig

    with pytest.raises(ConfigError, match="no end-of-sequence token"):
        search_spec.build(CFG, GenerationConfig(), None, model="m")


#: Generation configs as published with models users paraphrase with (their search keys).
PUBLISHED = {
    "Qwen2.5-1.5B-Instruct": {
        "bos_token_id": 151643,
        "pad_token_id": 151643,
        "do_sample": True,
        "eos_token_id": [151645, 151643],
        "repetition_penalty": 1.1,
        "temperature": 0.7,
        "top_p": 0.8,
        "top_k": 20,
    },
    "Llama-3.2-1B-Instruct": {
        "bos_token_id": 128000,
        "do_sample": True,
        "eos_token_id": [128001, 128008, 128009],
        "temperature": 0.6,
        "top_p": 0.9,
    },
    "gemma-3-270m-it": {"cache_implementation": "hybrid", "do_sample": True, "top_k": 64, "top_p": 0.95},
    "pegasus_paraphrase": {"length_penalty": 0.8, "max_length": 60, "num_beams": 8, "forced_eos_token_id": 1},
    "bart-large": {"forced_bos_token_id": 0, "no_repeat_ngram_size": 3, "early_stopping": True, "num_beams": 4},
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_generation_configs_load_and_the_settings_decide_their_search(name):
    from transformers import GenerationConfig

    published = PUBLISHED[name]
    gen = GenerationConfig(**{"eos_token_id": 1, **published})
    spec = search_spec.build(CFG, gen, None, model=name, decoder_only="forced_bos_token_id" not in published)
    kwargs = spec.generate_kwargs()
    assert (kwargs["num_beams"], kwargs["do_sample"], kwargs["length_penalty"]) == (4, False, 1.0)
    assert (kwargs["repetition_penalty"], kwargs["no_repeat_ngram_size"], kwargs["temperature"]) == (1.0, 0, 1.0)
    assert kwargs["forced_eos_token_id"] is None
    eos = published.get("eos_token_id", 1)
    assert list(spec.end_tokens) == (eos if isinstance(eos, list) else [eos])
    assert spec.forced_bos_token == published.get("forced_bos_token_id")
