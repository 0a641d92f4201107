"""``paraphraser.dtype: int8``: linear layers as dynamic int8 matrix products on CPU, in the hf
backend's seq2seq and decoder-only models; refused where its kernels or the weights' readers cannot
follow (CUDA, the static engine)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import CORPUS, paraphrase_request

from spanaug.core import int8_linear
from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError
from spanaug.core.int8_linear import Int8Linear, quantize_linears
from spanaug.demo.standins import save_causal, save_standin
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.stage import load_paraphraser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = DecodeSettings(model="tiny", beam_size=4, return_top=4, max_new_tokens=6, dtype="int8")


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got - want).norm() / want.norm()).item()


@pytest.mark.parametrize("bias", [False, True])
def test_an_int8_linear_computes_the_linear_product_within_quantisation_error(bias):
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 300, bias=bias)
    quantised = Int8Linear(linear)
    assert quantised.weight_t.dtype == torch.int8 and quantised.weight_t.shape == (96, 300)
    x = torch.randn(2, 7, 96)  # any leading shape; an odd row count
    with torch.inference_mode():
        got, want = quantised(x), linear(x)
    assert got.shape == want.shape and got.dtype == x.dtype
    assert _relative_error(got, want) < 0.02
    # a product int8 cannot tell apart from float32's is not what we have: the weights are int8
    assert not torch.equal(got, want)
    assert quantised(torch.zeros(0, 96)).shape == (0, 300)
    assert torch.equal(quantised(torch.zeros(3, 96)), linear(torch.zeros(3, 96)) * 0 + (linear.bias if bias else 0))


def test_quantize_linears_replaces_every_linear_and_the_logits_follow(tmp_path):
    from transformers import AutoModelForCausalLM

    path = save_causal("gemma3", CORPUS * 3, tmp_path / "gemma3")
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    ids = torch.tensor([[2, 10, 11, 12, 13, 14]])
    count = int8_linear.parameter_count(model)
    with torch.inference_mode():
        want = model(ids).logits
        linears = sum(type(m) is torch.nn.Linear for m in model.modules())
        assert quantize_linears(model) == linears > 0
        got = model(ids).logits
    assert not any(type(m) is torch.nn.Linear for m in model.modules())
    assert isinstance(model.lm_head, Int8Linear)  # the output projection too, though tied to the embeddings
    # the int8 weights are buffers; the count is the model's still (the head, tied, counted once)
    assert model.config.tie_word_embeddings and int8_linear.parameter_count(model) == count
    assert model.get_input_embeddings().weight.dtype == torch.float32
    assert _relative_error(got, want) < 0.05


def test_int8_is_a_cpu_setting():
    assert int8_linear.compute_dtype(torch.device("cpu"), "int8") == ("float32", True)
    assert int8_linear.compute_dtype(torch.device("cpu"), "bfloat16") == ("bfloat16", False)
    assert int8_linear.compute_dtype(torch.device("cuda"), "auto") == ("auto", False)
    with pytest.raises(ConfigError, match=r"paraphraser.dtype: int8 .* on cuda"):
        int8_linear.compute_dtype(torch.device("cuda"), "int8")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("int8")
    return {
        "t5": save_standin(root / "t5", "t5", CORPUS * 3),
        "qwen2": str(save_causal("qwen2", CORPUS * 3 + [CFG.instruction, CFG.prompt], root / "qwen2")),
    }


@pytest.mark.parametrize("family", ["t5", "qwen2"])
def test_the_hf_backend_decodes_in_int8_and_its_record_says_so(models, family):
    paraphraser = load_paraphraser(dataclasses.replace(CFG, model=models[family], backend="hf"), "cpu")
    assert isinstance(paraphraser.model.get_output_embeddings(), Int8Linear)
    assert paraphraser.provenance(CFG).dtype == "int8"
    reqs = [paraphrase_request(t) for t in CORPUS[:4]]
    stats = DecodeStats()
    rows = list(paraphrase(paraphraser, reqs, CFG, stats, progress=False))
    assert stats.requests == len(reqs) and rows
    for row in rows:
        assert not violations(row["paraphrase_text"], row["constraints"])


def test_int8_is_refused_by_the_static_engine_and_on_cuda(models, monkeypatch):
    from spanaug.pipeline.paraphraser import model_check

    loading = model_check.load_model
    monkeypatch.setattr(model_check, "load_model", lambda *a, **k: pytest.fail("the weights loaded"))
    with pytest.raises(ConfigError, match="static backend multiplies the model's weights itself"):
        load_paraphraser(dataclasses.replace(CFG, model=models["t5"], backend="static"), "cpu")
    monkeypatch.setattr(model_check, "load_model", loading)
    import spanaug.pipeline.paraphraser.causal_backend as causal_backend

    monkeypatch.setattr(causal_backend, "choose_device", lambda device: torch.device("cuda"))
    with pytest.raises(ConfigError, match=r"paraphraser\.dtype: int8"):
        load_paraphraser(dataclasses.replace(CFG, model=models["qwen2"], backend="hf"), "cuda")


def test_ct2_takes_int8_as_its_compute_type(models, tmp_path, monkeypatch):
    pytest.importorskip("ctranslate2")
    monkeypatch.setenv("SPANAUG_CT2_CACHE", str(tmp_path / "ct2"))
    paraphraser = load_paraphraser(dataclasses.replace(CFG, model=models["t5"], backend="ct2"), "cpu")
    assert paraphraser.provenance(CFG).dtype.startswith("int8")
    rows = list(
        paraphrase(paraphraser, [paraphrase_request(t) for t in CORPUS[:2]], CFG, DecodeStats(), progress=False)
    )
    assert all(not violations(r["paraphrase_text"], r["constraints"]) for r in rows)
