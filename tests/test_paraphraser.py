import math

import pytest
from conftest import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanaug.core.config import DecodeSettings, ParaphraserTrainSettings
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser.banned import banned_sequences
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.processors import ReferenceBannedSequences, TensorBannedSequences

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def para(tiny_paraphraser):
    return HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")


def _req(text, constraints=()):
    return {
        "seed_id": text[:10],
        "source_text": text,
        "source_tokens": text.split(),
        "constraints": sorted(constraints),
    }


def _words(para, text, cfg):
    rows = list(paraphrase(para, [_req(text)], cfg, progress=False))
    return {w for r in rows for w in r["paraphrase_text"].split() if w.isalnum()}


@pytest.mark.parametrize("processor", [ReferenceBannedSequences, TensorBannedSequences])
def test_processor_bans_last_token_after_prefix(processor):
    import torch

    proc = processor([[(5,), (1, 2)], [(3,)]], vocab_size=8, device=torch.device("cpu"))
    ids = torch.tensor([[0, 1], [0, 4], [0, 1], [0, 1]])  # 2 rows (beams) per sentence
    out = proc(ids, torch.zeros(4, 8))
    assert math.isinf(out[0, 5]) and math.isinf(out[0, 2])  # prefix (1,) seen -> 2 banned
    assert not math.isinf(out[1, 2]) and math.isinf(out[1, 5])
    assert math.isinf(out[2, 3]) and not math.isinf(out[2, 2])  # sentence 2 has its own bans


def test_banned_sequences_cover_space_variants(para):
    seqs = banned_sequences(para.tokenizer, ["bought"])
    assert len(seqs) >= 2  # mid-sentence and sentence-initial forms
    assert all(seq for seq in seqs)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.sampled_from(CORPUS), n=st.integers(1, 4), seed=st.integers(0, 1000))
def test_constraints_never_violated(para, text, n, seed):
    """Ban words the unconstrained model produces: decoding avoids them, and nothing violating is kept."""
    cfg = DecodeSettings(mode="beam", beam_size=4, return_top=4, max_new_tokens=12)
    produced = sorted(_words(para, text, cfg))
    assert produced, "the premise: unconstrained decoding produces words to ban"
    import random

    banned = random.Random(seed).sample(produced, min(n, len(produced)))
    stats = DecodeStats()
    rows = list(paraphrase(para, [_req(text, banned)], cfg, stats, progress=False))
    for row in rows:
        assert violations(row["paraphrase_text"], banned) == []
    assert stats.outputs == len(rows)


def test_verification_drops_and_counts_violations(para, monkeypatch):
    """Outputs that slip past the decoder (other tokenizations) are dropped, never kept."""
    monkeypatch.setattr(
        para, "decode_batch", lambda batch, cfg, b: [[("He bought it .", 0.0), ("He got it .", 0.0)] for _ in batch]
    )
    stats = DecodeStats()
    rows = list(
        paraphrase(
            para, [_req("He bought it .", ["bought"])], DecodeSettings(beam_size=2, return_top=2), stats, progress=False
        )
    )
    assert [r["paraphrase_text"] for r in rows] == ["He got it ."]
    assert stats.violations_dropped == 1


def test_scores_finite_and_ranked(para):
    rows = list(
        paraphrase(
            para, [_req(CORPUS[0])], DecodeSettings(beam_size=5, return_top=3, max_new_tokens=10), progress=False
        )
    )
    scores = [r["paraphrase_score"] for r in rows]
    assert rows and all(math.isfinite(s) and s >= 0 for s in scores)
    assert scores == sorted(scores) and [r["beam_rank"] for r in rows] == list(range(len(rows)))


@pytest.mark.parametrize("mode", ["beam", "sample"])
def test_deterministic_with_seed(para, mode):
    cfg = DecodeSettings(mode=mode, beam_size=3, return_top=2, num_samples=3, top_k=10, seed=7, max_new_tokens=10)
    reqs = [_req(t, ["the"]) for t in CORPUS[:4]]
    first = [(r["paraphrase_text"], r["paraphrase_score"]) for r in paraphrase(para, reqs, cfg, progress=False)]
    second = [(r["paraphrase_text"], r["paraphrase_score"]) for r in paraphrase(para, reqs, cfg, progress=False)]
    assert first == second and first


def test_trained_paraphraser_round_trip_and_resume(tmp_path):
    import json

    from spanaug.pipeline.paraphraser.training import train_paraphraser

    bitext = tmp_path / "b.tsv"
    bitext.write_text("".join(f"{a}\t{b}\n" for a, b in zip(CORPUS, CORPUS[1:] + CORPUS[:1])))
    cfg = ParaphraserTrainSettings(
        bitext=str(bitext),
        vocab_size=100,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        attention_heads=2,
        ffn_dim=64,
        batch_size=8,
        max_steps=4,
        checkpoint_every=2,
        warmup_steps=2,
    )
    out = tmp_path / "model"
    assert train_paraphraser(cfg, out, device="cpu", progress=False)["steps"] == 4
    cfg.max_steps = 6
    summary = train_paraphraser(cfg, out, device="cpu", progress=False)  # resumes at step 4
    assert summary["steps"] == 6
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-4", "checkpoint-6"]
    import torch

    loaded = HFParaphraser.from_pretrained(out, device="cpu")
    last = HFParaphraser.from_pretrained(out / "checkpoints" / "checkpoint-6", device="cpu")
    for p, q in zip(loaded.model.parameters(), last.model.parameters(), strict=True):
        assert torch.equal(p, q)  # the saved model is the last step's
    assert loaded.tokenizer.get_vocab() == last.tokenizer.get_vocab()
    assert json.loads((out / "training_summary.json").read_text())["pairs"] == len(CORPUS)


def test_bitext_errors_name_line(tmp_path):
    from spanaug.core.bitext import read_bitext
    from spanaug.core.errors import InputError

    path = tmp_path / "b.tsv"
    path.write_text("a\tb\nno tab here\n")
    with pytest.raises(InputError, match=r"b\.tsv, line 2"):
        read_bitext(path)


def test_ct2_backend_matches_hf(tiny_paraphraser, tmp_path):
    pytest.importorskip("ctranslate2")
    from spanaug.pipeline.paraphraser.ct2_backend import CT2Paraphraser

    ct2 = CT2Paraphraser.from_pretrained(tiny_paraphraser, device="cpu", ct2_cache=tmp_path / "ct2")
    hf = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    cfg = DecodeSettings(beam_size=4, return_top=2, max_new_tokens=10)
    reqs = [_req(t, ["the", "The"]) for t in CORPUS[:3]]
    a = list(paraphrase(ct2, reqs, cfg, progress=False))
    b = list(paraphrase(hf, reqs, cfg, progress=False))
    assert all(violations(r["paraphrase_text"], r["constraints"]) == [] for r in a)
    # Same model, same search: the same outputs, scored alike by each backend's own scorer.
    assert [r["paraphrase_text"] for r in a] == [r["paraphrase_text"] for r in b]
    assert [r["paraphrase_score"] for r in a] == pytest.approx([r["paraphrase_score"] for r in b], rel=1e-3, abs=1e-3)


def test_training_is_deterministic(tmp_path):
    """Same bitext and seed: the same vocabulary and the same weights (so `make demo` repeats itself)."""
    import torch

    from spanaug.pipeline.paraphraser.training import train_paraphraser

    bitext = tmp_path / "b.tsv"
    bitext.write_text("".join(f"{a}\t{b}\n" for a, b in zip(CORPUS, CORPUS[::-1])))
    cfg = ParaphraserTrainSettings(
        bitext=str(bitext),
        vocab_size=100,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        attention_heads=2,
        ffn_dim=64,
        batch_size=4,
        max_steps=3,
        checkpoint_every=100,
        warmup_steps=1,
    )
    models = []
    for run in ("a", "b"):
        train_paraphraser(cfg, tmp_path / run, device="cpu", progress=False)
        models.append(HFParaphraser.from_pretrained(tmp_path / run, device="cpu"))
    assert models[0].tokenizer.get_vocab() == models[1].tokenizer.get_vocab()
    for p, q in zip(models[0].model.parameters(), models[1].model.parameters()):
        assert torch.equal(p, q)


def test_backend_auto_is_the_default_static_on_cuda_ct2_on_cpu(monkeypatch):
    import torch

    from spanaug.pipeline.paraphraser import stage

    assert DecodeSettings().backend == "auto"
    monkeypatch.setattr(stage.importlib.util, "find_spec", lambda name: object() if name == "ctranslate2" else None)
    assert stage.resolve_backend("auto", "cpu") == "ct2"
    assert stage.resolve_backend("hf", "cpu") == "hf" and stage.resolve_backend("ct2", "auto") == "ct2"
    # What `auto` sees on a GPU node: on CUDA the static engine decodes, on MPS transformers' generate.
    for gpu, backend in (("cuda", "static"), ("mps", "hf")):
        monkeypatch.setattr(stage, "choose_device", lambda device, gpu=gpu: torch.device(gpu))
        assert stage.resolve_backend("auto", "auto") == backend
    monkeypatch.setattr(stage, "choose_device", lambda device: torch.device("cpu"))
    assert stage.resolve_backend("auto", "auto") == "ct2"
    # An environment without the ct2 extra decodes with hf rather than failing.
    monkeypatch.setattr(stage.importlib.util, "find_spec", lambda name: None)
    assert stage.resolve_backend("auto", "cpu") == "hf"


def test_backend_auto_on_cpu_loads_the_ct2_model(tiny_paraphraser, tmp_path, monkeypatch):
    pytest.importorskip("ctranslate2")
    from spanaug.pipeline.paraphraser.ct2_backend import CT2Paraphraser
    from spanaug.pipeline.paraphraser.stage import load_paraphraser

    monkeypatch.setenv("SPANAUG_CT2_CACHE", str(tmp_path / "ct2"))
    loaded = load_paraphraser(DecodeSettings(model=tiny_paraphraser), "cpu")
    assert isinstance(loaded, CT2Paraphraser) and any((tmp_path / "ct2").iterdir())
