"""Out-of-memory recovery (issue 33): a batch that runs out of GPU memory is split in halves and retried,
with the unsplit batch's outputs and one warning per batch; the decode budget follows the card's memory."""

from __future__ import annotations

import logging

import pytest
import torch
from conftest import CORPUS

from spanaug.core import oom
from spanaug.core.config import DecodeSettings
from spanaug.pipeline.paraphraser import batching
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _fails_over(n: int, fn, calls: list[int] | None = None):
    """``fn``, raising torch's out-of-memory error on a batch of more than ``n`` items (as a card would)."""

    def call(items, *args, **kwargs):
        if calls is not None:
            calls.append(len(items))
        if len(items) > n:
            raise torch.OutOfMemoryError(f"CUDA out of memory (simulated: {len(items)} items > {n})")
        return fn(items, *args, **kwargs)

    return call


def _warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "ran out of GPU memory" in r.getMessage()
    ]


def test_split_on_oom_halves_until_it_fits_and_warns_once(caplog, monkeypatch):
    freed = []
    monkeypatch.setattr(oom, "free_cached_memory", lambda: freed.append(1))
    calls: list[int] = []
    square = _fails_over(2, lambda items: [x * x for x in items], calls)
    with caplog.at_level(logging.WARNING):
        assert oom.split_on_oom(square, list(range(7)), "batch 3") == [x * x for x in range(7)]
    # 7 -> 3 + 4 -> (1 + 2) + (2 + 2): every part no larger than 2, in order
    assert calls == [7, 3, 1, 2, 4, 2, 2] and len(freed) == 3
    (warning,) = _warnings(caplog)
    assert warning == "batch 3 (7 items) ran out of GPU memory: split and retried as 4 parts of 1 to 2 items"


def test_split_on_oom_without_an_error_is_one_call_and_silent(caplog):
    calls: list[int] = []
    with caplog.at_level(logging.WARNING):
        assert oom.split_on_oom(_fails_over(10, lambda items: items, calls), [1, 2, 3]) == [1, 2, 3]
    assert calls == [3] and _warnings(caplog) == []


def test_a_single_item_that_runs_out_re_raises():
    with pytest.raises(torch.cuda.OutOfMemoryError):  # the same class as torch.OutOfMemoryError
        oom.split_on_oom(_fails_over(0, lambda items: items), [1, 2, 3])


def test_other_errors_are_not_retried():
    calls: list[int] = []

    def broken(items):
        calls.append(len(items))
        raise RuntimeError("not memory")

    with pytest.raises(RuntimeError, match="not memory"):
        oom.split_on_oom(broken, [1, 2, 3, 4])
    assert calls == [4]


# ---------------------------------------------------------------- through the paraphraser


def _requests(n: int) -> list[dict]:
    return [
        {
            "seed_id": f"s{i}",
            "source_text": CORPUS[i % len(CORPUS)],
            "source_tokens": CORPUS[i % len(CORPUS)].split(),
            "constraints": ["the", "The"] if i % 2 else ["a"],
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def para(tiny_paraphraser):
    # CPU float32: the comparison with the unsplit run is about batching, on every machine.
    return HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")


@pytest.mark.parametrize("mode", ["beam", "sample"])
def test_paraphrase_recovers_from_oom_with_the_unsplit_outputs(para, monkeypatch, caplog, mode):
    requests = _requests(12)
    # Two batches of 6 sentences (a budget of 6 of the longest source x beams).
    longest = max(para.source_lengths([r["source_text"] for r in requests]))
    cfg = DecodeSettings(mode=mode, beam_size=4, return_top=2, num_samples=2, max_new_tokens=8)
    cfg.max_batch_tokens = 6 * longest * cfg.width
    whole = list(paraphrase(para, requests, cfg, progress=False))
    assert len(para.batches(requests, cfg)) == 2
    calls: list[int] = []
    monkeypatch.setattr(para, "decode_batch", _fails_over(2, para.decode_batch, calls))
    with caplog.at_level(logging.WARNING):
        split = list(paraphrase(para, requests, cfg, progress=False))
    assert max(calls) == 6 and all(n <= 2 for n in calls if n not in (6, 3))
    assert len(_warnings(caplog)) == 2  # once per batch, not per split
    if mode == "beam":
        # Each sentence decodes under its own constraints and length limit: the same beams, ranks, scores.
        key = [(r["seed_id"], r["beam_rank"], r["paraphrase_text"]) for r in whole]
        assert key == [(r["seed_id"], r["beam_rank"], r["paraphrase_text"]) for r in split]
        assert [r["paraphrase_score"] for r in split] == pytest.approx([r["paraphrase_score"] for r in whole], abs=1e-5)
    else:
        # Sampling keeps the batch's seed for every part: reproducible for a given split, not the
        # unsplit batch's samples; every request still gets its samples, under its own constraints.
        again = list(paraphrase(para, requests, cfg, progress=False))
        assert [r["paraphrase_text"] for r in again] == [r["paraphrase_text"] for r in split]
        assert {r["seed_id"] for r in split} == {r["seed_id"] for r in whole}


def test_scoring_recovers_from_oom_too(para, monkeypatch, caplog):
    requests = _requests(6)
    cfg = DecodeSettings(beam_size=3, return_top=2, max_new_tokens=6)
    whole = list(paraphrase(para, requests, cfg, progress=False))
    monkeypatch.setattr(para, "score", _fails_over_pairs(3, para.score))
    with caplog.at_level(logging.WARNING):
        split = list(paraphrase(para, requests, cfg, progress=False))
    assert [(r["seed_id"], r["paraphrase_text"]) for r in split] == [
        (r["seed_id"], r["paraphrase_text"]) for r in whole
    ]
    assert [r["paraphrase_score"] for r in split] == pytest.approx([r["paraphrase_score"] for r in whole], abs=1e-5)
    assert any("scoring" in w for w in _warnings(caplog))


def _fails_over_pairs(n, score):
    def call(sources, outputs, prefix=""):
        if len(sources) > n:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return score(sources, outputs, prefix)

    return call


# ---------------------------------------------------------------- the decode budget


@pytest.fixture
def card(monkeypatch):
    """A simulated CUDA card: ``card(free_bytes, reserved_unused=0)`` sets what torch reports."""

    def set_memory(free: int, reserved_unused: int = 0) -> None:
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, 80 * 2**30))
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: reserved_unused + 2**30)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 2**30)

    return set_memory


class _Config:
    """A seq2seq config as transformers names it (BART's names)."""

    def __init__(self, d_model=512, decoder_layers=4, vocab_size=32000):
        self.d_model, self.decoder_layers, self.vocab_size = d_model, decoder_layers, vocab_size


def test_the_budget_follows_the_cards_free_memory(card):
    paper = _Config()
    per_unit = batching.bytes_per_batch_token(paper, torch.bfloat16)
    card(40 * 2**30)
    budget = batching.default_max_batch_tokens("cuda", paper, torch.bfloat16)
    assert budget == int(batching.FREE_MEMORY_SHARE * 40 * 2**30) // per_unit
    card(10 * 2**30)
    assert batching.default_max_batch_tokens("cuda", paper, torch.bfloat16) == pytest.approx(budget / 4, rel=1e-3)
    # the caching allocator's unused blocks are free to the next batch
    card(10 * 2**30, reserved_unused=30 * 2**30)
    assert batching.default_max_batch_tokens("cuda", paper, torch.bfloat16) == budget


def test_the_budget_shrinks_with_the_model_and_its_dtype(card):
    card(40 * 2**30)
    paper = batching.default_max_batch_tokens("cuda", _Config(), torch.bfloat16)
    assert batching.default_max_batch_tokens("cuda", _Config(), torch.float32) < paper
    bigger = batching.default_max_batch_tokens("cuda", _Config(d_model=1024, decoder_layers=12), torch.bfloat16)
    assert bigger < paper / 3  # about 3.8 times the memory per unit


def test_the_budget_is_bounded(card):
    card(16 * 2**20)  # a nearly full card: the CPU budget, and out-of-memory splitting does the rest
    assert (
        batching.default_max_batch_tokens("cuda", _Config(), torch.bfloat16) == batching.DEFAULT_MAX_BATCH_TOKENS["cpu"]
    )
    card(10 * 2**40)  # memory beyond any card: capped
    assert batching.default_max_batch_tokens("cuda", _Config(), torch.bfloat16) == batching.MAX_BATCH_TOKENS_CAP
    assert batching.default_max_batch_tokens("cpu", _Config()) == batching.DEFAULT_MAX_BATCH_TOKENS["cpu"]


def test_the_budget_reads_t5_names_and_assumes_a_model_when_none_is_given():
    class T5Config:
        d_model, num_decoder_layers, num_heads, d_kv, vocab_size = 768, 12, 12, 64, 32128

    assert batching.bytes_per_batch_token(T5Config(), torch.bfloat16) == batching.bytes_per_batch_token(
        None, torch.bfloat16
    )


def test_the_paraphraser_budgets_by_its_model_on_cuda(para, tiny_paraphraser, monkeypatch):
    """Each backend asks for its own model's budget (on a simulated card): generate keeps the
    encoder's states and cross-attention per beam, the static engine per sentence in beam search."""
    from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

    static = StaticParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    seen = []
    monkeypatch.setattr(
        "spanaug.pipeline.paraphraser.paraphrase_decoder.default_max_batch_tokens",
        lambda device, config, dtype, shared_by: seen.append((device.type, config, dtype, shared_by)) or 4096,
    )
    for backend in (para, static):
        monkeypatch.setattr(backend, "device", torch.device("cuda"))
        for mode in ("beam", "sample"):
            backend.batches(_requests(2), DecodeSettings(mode=mode, beam_size=3, num_samples=2, return_top=1))
    shared = [None, None, 3, None]  # hf beam, hf sample, static beam (3 beams), static sample (generate)
    assert seen == [("cuda", b.model.config, torch.float32, s) for b, s in zip((para, para, static, static), shared)]


def test_state_kept_per_sentence_costs_less_per_beam_as_beams_grow():
    """The static engine's unit: the self-attention cache twice, plus the sentence's share of its
    encoder states and cross-attention, which generate repeats per beam."""
    per_beam = batching.bytes_per_batch_token(_Config(), torch.bfloat16)
    shared = [batching.bytes_per_batch_token(_Config(), torch.bfloat16, n) for n in (1, 4, 20)]
    assert shared[0] < per_beam  # one copy of the cross state, not two
    assert shared[0] > shared[1] > shared[2]
    cache = 2 * 2 * 4 * 512 * batching.LENGTH_RATIO * 2  # keys and values, 4 layers, twice, bf16
    logits = batching.LOGIT_COPIES * 32000 * 4 / batching.SHORT_SOURCE
    assert cache + logits < shared[2] < cache + logits + (512 + 2 * 4 * 512) * 2 / 20 + 1


# ---------------------------------------------------------------- through both aligner kinds


def test_paper_aligner_predict_recovers_from_oom_with_the_unsplit_predictions(tiny_encoder, monkeypatch, caplog):
    from conftest import copy_task
    from test_aligner_interface import _make

    aligner = _make("paper", tiny_encoder)
    test = copy_task(30, 3)
    whole = aligner.predict(test, batch_size=8)
    encoded, ranked = [], []
    monkeypatch.setattr(aligner, "encode_pairs", _fails_over(4, aligner.encode_pairs, encoded))
    monkeypatch.setattr(aligner, "rank_spans", _fails_over(3, aligner.rank_spans, ranked))
    with caplog.at_level(logging.WARNING):
        split = aligner.predict(test, batch_size=8)
    assert [p for p, _ in split] == [p for p, _ in whole]
    assert [s for _, s in split] == pytest.approx([s for _, s in whole], abs=1e-5)
    assert max(encoded) > 4 and max(ranked) == 8  # the chunk's encoding and every batch of 8 were split
    # one warning for the chunk's encoding and one per ranking batch (8, 8, 8, 6), however often each split
    assert len(_warnings(caplog)) == 1 + 4


def test_cross_aligner_predict_recovers_from_oom_with_the_unsplit_predictions(tiny_encoder, monkeypatch, caplog):
    from conftest import copy_task
    from test_aligner_interface import _make

    aligner = _make("cross", tiny_encoder)
    test = copy_task(30, 3)
    whole = aligner.predict(test, batch_size=8)
    rows: list[int] = []
    hidden = aligner.hidden

    def hidden_or_oom(batch):
        rows.append(len(batch.counts))
        if len(batch.counts) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return hidden(batch)

    monkeypatch.setattr(aligner, "hidden", hidden_or_oom)
    with caplog.at_level(logging.WARNING):
        split = aligner.predict(test, batch_size=8)
    assert [p for p, _ in split] == [p for p, _ in whole]
    assert [s for _, s in split] == pytest.approx([s for _, s in whole], abs=1e-5)
    assert max(rows) == 8 and len(_warnings(caplog)) == 4  # one per batch (8, 8, 8, 6), not per split
