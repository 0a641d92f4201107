"""Decoder batches: a token budget (pure function and the hf backend), one per-sentence length rule,
and ct2 calls per constraint set (exact) or per batch under the union of its sets."""

import pytest
from conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.core.config import DecodeSettings
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser.banned import banned_sequences
from spanaug.pipeline.paraphraser.batching import (
    DEFAULT_MAX_BATCH_TOKENS,
    MAX_BATCH_TOKENS_CAP,
    default_max_batch_tokens,
    token_budget_batches,
)
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.search_spec import length_limit

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 60), max_size=40),
    width=st.integers(1, 20),
    budget=st.integers(1, 4000),
    cap=st.one_of(st.none(), st.integers(1, 8)),
)
def test_token_budget_batches(lengths, width, budget, cap):
    batches = token_budget_batches(lengths, width, budget, cap)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        cost = len(b) * max(lengths[i] for i in b) * width
        assert cost <= budget or len(b) == 1  # only a sentence over the budget on its own exceeds it
        assert cap is None or len(b) <= cap
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat, reverse=True)  # length-sorted, longest first


def test_batches_do_not_mix_groups():
    lengths = [5, 5, 5, 5]
    groups = ["a", "b", "a", "b"]
    batches = token_budget_batches(lengths, 2, 1000, group=lambda i: groups[i])
    assert sorted(map(sorted, batches)) == [[0, 2], [1, 3]]


def test_length_limit_and_defaults():
    assert length_limit(10) == 25 and length_limit(11) == 27
    assert length_limit(10, max_new_tokens=7) == 7
    # On CUDA the budget follows the card's free memory (test_oom.py simulates cards); whatever this
    # machine has, it stays between the CPU budget and the cap.
    assert default_max_batch_tokens("cpu") == DEFAULT_MAX_BATCH_TOKENS["cpu"]
    assert DEFAULT_MAX_BATCH_TOKENS["cpu"] <= default_max_batch_tokens("cuda") <= MAX_BATCH_TOKENS_CAP
    with pytest.raises(ValueError):
        token_budget_batches([1], 0, 10)


def _reqs(sets):
    return [
        {
            "seed_id": f"s{i}",
            "source_text": CORPUS[i % len(CORPUS)],
            "source_tokens": CORPUS[i % len(CORPUS)].split(),
            "constraints": sorted(c),
        }
        for i, c in enumerate(sets)
    ]


def test_hf_batches_follow_token_budget(tiny_paraphraser, monkeypatch):
    para = HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    reqs = _reqs([["the"]] * 8)
    lengths = para.source_lengths([r["source_text"] for r in reqs])
    cfg = DecodeSettings(beam_size=2, return_top=1, max_new_tokens=3, max_batch_tokens=3 * max(lengths) * 2)
    seen = []
    real = para.decode_batch
    monkeypatch.setattr(para, "decode_batch", lambda batch, c, b: seen.append(len(batch)) or real(batch, c, b))
    list(paraphrase(para, reqs, cfg, progress=False))
    assert sum(seen) == 8 and max(seen) <= 3 and len(seen) >= 3
    cfg.batch_size = 1
    seen.clear()
    list(paraphrase(para, reqs, cfg, progress=False))
    assert seen == [1] * 8


@pytest.mark.parametrize("batching", ["exact", "union"])
def test_ct2_calls(tiny_paraphraser, tmp_path, batching):
    pytest.importorskip("ctranslate2")
    from spanaug.pipeline.paraphraser.ct2_backend import CT2Paraphraser

    ct2 = CT2Paraphraser.from_pretrained(tiny_paraphraser, device="cpu", ct2_cache=tmp_path)
    calls = []
    real = ct2.translator

    class Spy:
        def translate_batch(self, sources, **kwargs):
            calls.append((len(sources), len(kwargs.get("suppress_sequences") or [])))
            return real.translate_batch(sources, **kwargs)

        def __getattr__(self, name):
            return getattr(real, name)

    ct2.translator = Spy()
    sets = [["the"], ["The", "the"], ["the"], ["a", "A"], ["the"], ["The", "the"]]
    cfg = DecodeSettings(beam_size=3, return_top=3, max_new_tokens=6, ct2_batching=batching)
    rows = list(paraphrase(ct2, _reqs(sets), cfg, progress=False))
    assert all(violations(r["paraphrase_text"], r["constraints"]) == [] for r in rows)

    def banned(*phrases):
        return len(banned_sequences(ct2.tokenizer, phrases))

    if batching == "exact":  # one call per distinct set (one length limit here), under that set
        assert sorted(calls) == sorted([(3, banned("the")), (2, banned("The", "the")), (1, banned("a", "A"))])
    else:  # one call for the whole batch, under the union of its sets
        assert calls == [(6, banned("the", "The", "a", "A"))]
