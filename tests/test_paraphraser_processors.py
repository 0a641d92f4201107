"""The on-device constraint processor bans exactly what the reference processor bans."""

import math

import numpy as np
import pytest
import torch
from conftest import CORPUS
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spanaug.core.config import DecodeSettings
from spanaug.pipeline.paraphraser.banned import banned_sequences
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.processors import (
    PerSentenceMaxNewTokens,
    ReferenceBannedSequences,
    SequenceTable,
    TensorBannedSequences,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_sequences = st.lists(st.lists(st.integers(0, 50), max_size=4), max_size=6)


@settings(max_examples=60, deadline=None)
@given(banned=st.lists(_sequences, max_size=4), data=st.data())
def test_a_table_depends_on_each_sentences_set_of_sequences_alone(banned, data):
    """Lists or tuples, numpy or Python ints, repeated, empty or shuffled sequences: the same table
    as each sentence's distinct non-empty sequences, sorted, as tuples of ints."""
    canonical = SequenceTable.of([sorted({tuple(s) for s in seqs if s}) for seqs in banned])
    messy = []
    for seqs in banned:
        seqs = data.draw(st.permutations(seqs + seqs[:1] + [[]]))
        as_numpy = data.draw(st.booleans())
        messy.append([np.array(s, dtype=np.int64) if as_numpy else list(s) for s in seqs])
    table = SequenceTable.of(messy)
    for got, want in zip(
        (table.prefixes, table.lasts, table.valid), (canonical.prefixes, canonical.lasts, canonical.valid)
    ):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert table.valid.sum() == sum(len({tuple(s) for s in seqs if s}) for seqs in banned)


@st.composite
def _batches(draw):
    vocab = draw(st.integers(4, 40))
    n = draw(st.integers(1, 4))
    per = draw(st.integers(1, 4))
    cur = draw(st.integers(1, 6))
    alphabet = draw(st.integers(2, vocab))  # small alphabets make prefixes match often
    tok = st.integers(0, alphabet - 1)
    # some ids at or above the score width: never banned, never matched
    seq_tok = st.one_of(tok, st.integers(vocab, vocab + 3)) if draw(st.booleans()) else tok
    banned = draw(
        st.lists(st.lists(st.lists(seq_tok, min_size=1, max_size=5).map(tuple), max_size=8), min_size=n, max_size=n)
    )
    history = draw(st.lists(st.lists(tok, min_size=cur, max_size=cur), min_size=n * per, max_size=n * per))
    return vocab, banned, torch.tensor(history, dtype=torch.long)


@settings(max_examples=300, deadline=None)
@given(_batches())
def test_tensor_processor_equals_reference(case):
    """Random sentences, beams, histories (shorter than some prefixes too) and banned sets of
    1-5 tokens, with duplicates and out-of-vocabulary ids: the same scores, -inf included."""
    vocab, banned, history = case
    scores = torch.randn(history.shape[0], vocab)
    ref = ReferenceBannedSequences(banned, vocab, torch.device("cpu"))(history, scores.clone())
    new = TensorBannedSequences(banned, vocab, torch.device("cpu"))(history, scores.clone())
    assert torch.equal(ref, new)


@settings(max_examples=200, deadline=None)
@given(_batches(), st.integers(0, 5), st.integers(-1, 9))
def test_a_fixed_width_history_read_at_a_device_position_bans_the_same(case, extra, junk):
    """What a step replayed from a CUDA graph passes: the whole fixed-width token buffer and the
    position of the last token as a 0-d tensor (later positions hold anything, earlier than a
    prefix's length nothing matches): the same scores as the history itself."""
    vocab, banned, history = case
    rows, cur = history.shape
    buffer = torch.cat([history, torch.full((rows, extra), junk)], dim=1)
    scores = torch.randn(rows, vocab)
    processor = TensorBannedSequences(banned, vocab, torch.device("cpu"))
    expected = processor(history, scores.clone())
    got = processor.ban(buffer, scores.clone(), last=torch.tensor(cur - 1))
    assert torch.equal(got, expected)


def test_positions_before_the_first_token_match_nothing():
    """A prefix longer than the history never matches, even one that repeats the first token
    (which a window clamped to the buffer's start would read again and again)."""
    processor = TensorBannedSequences([[(0, 0, 0, 3), (0, 4)]], vocab_size=6)
    buffer = torch.tensor([[0, 5, 5, 5]])
    for last, banned in ((0, {4}), (1, set()), (3, set())):
        out = processor.ban(buffer, torch.zeros(1, 6), last=torch.tensor(last))
        assert {i for i in range(6) if math.isinf(out[0, i])} == banned
        assert torch.equal(out, processor(buffer[:, : last + 1], torch.zeros(1, 6)))
    assert math.isinf(processor(torch.tensor([[0, 0, 0]]), torch.zeros(1, 6))[0, 3])


@settings(max_examples=150, deadline=None)
@given(_batches(), st.floats(0.5, 30.0))
@example((4, [[(0,), (1,), (2,), (3,)]], torch.tensor([[0]])), 1.0)  # every token banned
def test_renormalized_equals_log_softmax_after_bans(case, peak):
    """Beam search mode: the scores are renormalised over the tokens left, as a log_softmax of the
    banned scores would (peaky rows, where the bans take most of the mass, included)."""
    vocab, banned, history = case
    scores = torch.log_softmax(torch.randn(history.shape[0], vocab) * peak, dim=-1)
    ref = ReferenceBannedSequences(banned, vocab, torch.device("cpu"))(history, scores.clone())
    expected = torch.log_softmax(ref, dim=-1)
    new = TensorBannedSequences(banned, vocab, renormalize=True)(history, scores.clone())
    # Banned tokens are -inf in both; a row whose every token is banned has no distribution (NaN).
    finite = torch.isfinite(expected)
    assert torch.equal(finite, torch.isfinite(new))
    assert torch.allclose(new[finite], expected[finite], atol=2e-5)


def test_tensor_processor_width_and_empty_sets():
    proc = TensorBannedSequences([[], [(1,), (2, 3), (4, 5, 6)]], vocab_size=10)
    assert proc.width == 3 and proc.comparisons_per_row() == 3 * 2  # K slots x the longest prefix
    scores = torch.zeros(4, 10)
    out = proc(torch.tensor([[0, 4, 5], [0, 4, 5], [0, 4, 5], [0, 2, 2]]), scores)
    assert not torch.isinf(out[:2]).any()  # sentence 0 bans nothing
    assert math.isinf(out[2, 1]) and math.isinf(out[2, 6]) and not math.isinf(out[2, 3])
    assert math.isinf(out[3, 3]) and not math.isinf(out[3, 6])
    assert TensorBannedSequences([[], []], 10)(torch.zeros(2, 1, dtype=torch.long), torch.zeros(2, 10)).eq(0).all()
    with pytest.raises(ValueError):
        proc(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 10))


def test_max_new_tokens_per_sentence():
    stop = PerSentenceMaxNewTokens([2, 4], prompt_length=1)
    assert not stop(torch.zeros(4, 2, dtype=torch.long)).any()  # 1 generated
    assert stop(torch.zeros(4, 3, dtype=torch.long)).tolist() == [True, True, False, False]
    assert stop(torch.zeros(8, 5, dtype=torch.long)).all()  # beam search checks 2 x beams rows


@pytest.fixture(scope="module")
def para(tiny_paraphraser):
    return HFParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")


def _req(text, constraints):
    return {"seed_id": text[:8], "source_text": text, "source_tokens": text.split(), "constraints": sorted(constraints)}


@st.composite
def _constraint_sets(draw, outputs):
    """Phrases a model produced: single words, two-word phrases, sentence-initial capitalised forms."""
    words = [w for text in outputs for w in text.split()]
    if not words:
        return []
    phrases = set()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(words) - 1))
        k = draw(st.integers(1, 2))
        phrase = " ".join(words[i : i + k])
        if draw(st.booleans()):
            phrase = phrase[:1].upper() + phrase[1:]
        phrases.add(phrase)
    return sorted(phrases)


def _generate(para, texts, cfg, banned, processor):
    enc = para.encode(texts, "")
    if cfg.mode == "sample":
        torch.manual_seed(11)
    out = para.model.generate(
        **enc,
        **para.search_spec(cfg).generate_kwargs(),
        max_new_tokens=cfg.max_new_tokens,
        logits_processor=[processor(banned, para.model.config.vocab_size, para.device)],
        return_dict_in_generate=True,
        output_scores=cfg.mode == "beam",
    )
    scores = out.sequences_scores.tolist() if cfg.mode == "beam" else []
    return out.sequences.tolist(), scores


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data(), mode=st.sampled_from(["beam", "sample"]), start=st.integers(0, len(CORPUS) - 3))
def test_generate_same_outputs_as_reference(para, data, mode, start):
    """A batch of 3 sentences, each under its own banned sequences: the tokenizations of phrases
    the model produced unconstrained (words, two-word phrases, capitalised sentence-initial
    forms, via banned_sequences) plus random 1-4-token pieces of its unconstrained outputs. Both
    processors give identical beams (or samples, same seed) and decoder scores."""
    cfg = DecodeSettings(mode=mode, beam_size=4, return_top=4, num_samples=3, top_k=8, max_new_tokens=8)
    texts = CORPUS[start : start + 3]
    free, _ = _generate(para, texts, cfg, [[] for _ in texts], TensorBannedSequences)
    width = cfg.width
    banned = []
    for i, _ in enumerate(texts):
        ids = [tok for row in free[i * width : (i + 1) * width] for tok in row[1:]]
        words = para.tokenizer.batch_decode(free[i * width : (i + 1) * width], skip_special_tokens=True)
        seqs = set(banned_sequences(para.tokenizer, data.draw(_constraint_sets(words))))
        for _ in range(data.draw(st.integers(0, 4))):
            j = data.draw(st.integers(0, len(ids) - 1))
            seqs.add(tuple(ids[j : j + data.draw(st.integers(1, 4))]))
        banned.append(sorted(seqs))
    ref = _generate(para, texts, cfg, banned, ReferenceBannedSequences)
    new = _generate(para, texts, cfg, banned, TensorBannedSequences)
    assert ref[0] == new[0]
    assert ref[1] == pytest.approx(new[1], abs=1e-5)


def _operators(processor, history, scores):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        processor.ban(history, scores, last=torch.tensor(history.shape[1] - 1))
    return sorted(e.name for e in prof.events() if e.name.startswith("aten::") and not e.cpu_children)


def test_a_step_runs_the_same_operators_whatever_the_sequence_lengths():
    """On a GPU each operator is a kernel of the step: a set with sequences of fifteen lengths runs
    the same ones as a set with two lengths (grouping by length ran about ten more per length)."""
    history = torch.randint(0, 50, (4, 20))
    short = TensorBannedSequences([[(1,), (2, 3)], [(4, 5)]], vocab_size=50)
    long = TensorBannedSequences([[tuple(range(1, n + 1)) for n in range(1, 16)], [(4, 5)]], vocab_size=50)
    assert _operators(long, history, torch.zeros(4, 50)) == _operators(short, history, torch.zeros(4, 50))
