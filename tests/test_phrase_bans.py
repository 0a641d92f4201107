"""PhraseBans: constraint phrases to banned token sequences, each phrase tokenized once."""

import pytest
from conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.demo.standins import train_tokenizer
from spanaug.pipeline.paraphraser import banned
from spanaug.pipeline.paraphraser.banned import PhraseBans

WORDS = sorted({w for line in CORPUS for w in line.split()})
KINDS = [("unigram", "t5"), ("unigram", "marian"), ("bytebpe", "bart"), ("wordpiece", "t5")]


@pytest.fixture(scope="module", params=KINDS, ids=lambda k: "-".join(k))
def tokenizer(request):
    kind, family = request.param
    return train_tokenizer(kind, CORPUS, vocab_size=120, family=family)


class CountingTokenizer:
    """A tokenizer that counts the texts it is asked to encode."""

    def __init__(self, tokenizer):
        self.inner, self.encoded, self.calls = tokenizer, [], 0

    def __call__(self, texts, **kwargs):
        self.calls += 1
        self.encoded += [texts] if isinstance(texts, str) else list(texts)
        return self.inner(texts, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def one_by_one(tokenizer, phrases):
    """The sequences of each phrase tokenized on its own, with a fresh memo, joined."""
    return sorted({seq for p in phrases for seq in PhraseBans(tokenizer)([p])})


phrase_sets = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join) | st.sampled_from(["", "  ", "</s>"]),
    max_size=8,
)


@settings(max_examples=30, deadline=None)
@given(sets=st.lists(phrase_sets, min_size=1, max_size=5))
def test_batched_and_remembered_equal_one_phrase_at_a_time(tokenizer, sets):
    """Phrases tokenized in one batched call, and phrases remembered from earlier sets, give what
    each phrase gives tokenized alone."""
    bans = PhraseBans(tokenizer)
    for phrases in sets:
        assert bans(phrases) == one_by_one(tokenizer, phrases)


@settings(max_examples=30, deadline=None)
@given(sets=st.lists(phrase_sets, min_size=1, max_size=5))
def test_the_rust_backend_gives_what_the_tokenizer_gives(tokenizer, sets):
    """The families' tokenizers are asked through their Rust backend (rust_tokenizer); a tokenizer
    object of another class (here a counting proxy) through its own call: the same sequences."""
    direct, called = PhraseBans(tokenizer), PhraseBans(CountingTokenizer(tokenizer))
    for phrases in sets:
        assert direct(phrases) == called(phrases)
    assert called.tokenizer.encoded or not any(p.strip() for ps in sets for p in ps)


def test_each_phrase_is_tokenized_once(tokenizer):
    counting = CountingTokenizer(tokenizer)
    bans = PhraseBans(counting)
    first = bans(["said", "says", "said"])
    assert sorted(counting.encoded) == sorted(["said", " said", "says", " says"])
    assert bans(["says", "saying"]) == one_by_one(tokenizer, ["says", "saying"])
    assert bans(["said", "says"]) == first
    assert counting.encoded.count("says") == 1 and counting.encoded.count(" saying") == 1


def test_a_batch_learns_its_phrases_in_one_call(tokenizer):
    counting = CountingTokenizer(tokenizer)
    bans = PhraseBans(counting)
    sentences = [["said", "says"], ["says", "  ", "told"], ["said"]]
    bans.learn(p for phrases in sentences for p in phrases)
    assert counting.calls == 1
    bans.learn(["told", ""])  # nothing new: no call
    assert sorted(counting.encoded) == sorted(["said", " said", "says", " says", "told", " told"])
    assert [bans(phrases) for phrases in sentences] == [one_by_one(tokenizer, p) for p in sentences]
    assert counting.calls == 1


def test_blank_phrases_and_lone_special_tokens_are_never_banned(tokenizer):
    bans = PhraseBans(tokenizer)
    assert bans(["", "   "]) == []
    specials = set(tokenizer.all_special_ids)
    assert not [s for s in bans([tokenizer.eos_token]) if len(s) == 1 and s[0] in specials]


def test_a_full_memo_starts_afresh(tokenizer, monkeypatch):
    monkeypatch.setattr(banned, "MEMO_LIMIT", 3)
    bans = PhraseBans(tokenizer)
    for phrases in (["cat", "dog"], ["sat on", "mat"], ["cat", "bird"]):
        assert bans(phrases) == one_by_one(tokenizer, phrases)
        assert len(bans._memo) <= 3


def marker_variants(tokenizer, phrase):
    """What the docstring promises, worked out through the tokenizer's own API: the phrase's ids
    sentence-initially and after a space, each also with its first piece's word-boundary marker
    removed, or added when it has none; lone special tokens dropped."""
    vocab, special, out = tokenizer.get_vocab(), set(tokenizer.all_special_ids), set()
    for text in (phrase, " " + phrase):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if not ids:
            continue
        out.add(tuple(ids))
        first = tokenizer.convert_ids_to_tokens(ids[0])
        if first in ("▁", "Ġ"):
            if len(ids) > 1:
                out.add(tuple(ids[1:]))
        elif first[0] in "▁Ġ":
            if first[1:] in vocab:
                out.add((vocab[first[1:]], *ids[1:]))
        else:
            out.update((vocab[m + first], *ids[1:]) for m in "▁Ġ" if m + first in vocab)
    return sorted(s for s in out if not (len(s) == 1 and s[0] in special))


@settings(max_examples=40, deadline=None)
@given(phrases=st.lists(st.lists(st.sampled_from(WORDS + ["▁", "Ġ", ",", "x"]), min_size=1, max_size=3).map(" ".join)))
def test_each_phrase_bans_its_pieces_with_and_without_the_marker(tokenizer, phrases):
    bans = PhraseBans(tokenizer)
    bans.learn(phrases)
    for phrase in phrases:
        assert bans([phrase]) == marker_variants(tokenizer, phrase)


def test_the_memo_holds_nothing_the_garbage_collector_keeps_scanning(tokenizer):
    """A job's memo grows to hundreds of thousands of phrases; a full collection (which stops the
    decoding thread too) would walk each one it tracks."""
    import gc

    bans = PhraseBans(tokenizer)
    bans.learn([WORDS[0]])  # the vocabulary, read once
    gc.collect()
    before = len(gc.get_objects())
    phrases = [f"{a} {b}" for a in WORDS for b in WORDS[:20]]
    bans.learn(phrases)
    gc.collect()
    gc.collect()  # a tuple is untracked once what it holds is: its sequences at the first look, itself next
    assert len(bans([phrases[-1]])) > 0 and len(phrases) >= 1000
    assert len(gc.get_objects()) - before < len(phrases) / 10
