"""A Rust tokenizer's backend called directly (rust_tokenizer) gives what transformers' wrapper
gives, for every family's tokenizer: beams detokenized in one call (decode_texts) and constraint
phrases encoded without special tokens (encoder_without_specials), whatever padding and truncation
the wrapper last left on its backend; a tokenizer whose class encodes or decodes its own way goes
through its own methods."""

import pytest
from conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.demo.standins import FAMILIES, train_tokenizer
from spanaug.pipeline.paraphraser.rust_tokenizer import decode_texts, encoder_without_specials, token_namer


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def tokenizer(request):
    family = request.param
    return train_tokenizer(FAMILIES[family], CORPUS * 3, 160, family=family.split("-")[0])


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_one_backend_call_gives_batch_decodes_texts(tokenizer, data):
    vocab = len(tokenizer)
    rows = data.draw(st.lists(st.lists(st.integers(0, vocab - 1), max_size=12), max_size=8))
    encoded = tokenizer(data.draw(st.sampled_from(CORPUS)))["input_ids"]  # real text, special tokens too
    rows = [*rows, encoded, encoded + [tokenizer.pad_token_id] * 3]
    expected = tokenizer.batch_decode(rows, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    assert decode_texts(tokenizer, rows) == expected


def test_a_tokenizer_that_decodes_its_own_way_keeps_it(tokenizer):
    class Shouting(type(tokenizer)):
        def _decode(self, token_ids, **kwargs):
            return super()._decode(token_ids, **kwargs).upper()

    shouting = Shouting.__new__(Shouting)
    shouting.__dict__.update(tokenizer.__dict__)
    rows = [tokenizer(CORPUS[0])["input_ids"]]
    assert decode_texts(shouting, rows) == [decode_texts(tokenizer, rows)[0].upper()]


def test_the_families_tokenizers_take_the_one_call(tokenizer, monkeypatch):
    def per_row(*args, **kwargs):
        raise AssertionError("decoded row by row")

    monkeypatch.setattr(tokenizer, "batch_decode", per_row)
    assert decode_texts(tokenizer, [tokenizer(CORPUS[1])["input_ids"]])[0].strip()


WORDS = sorted({w for line in CORPUS for w in line.split()})
phrases = st.lists(
    st.lists(st.sampled_from(WORDS) | st.text(max_size=4), min_size=1, max_size=3).map(" ".join)
    | st.sampled_from(["", "  ", "</s>", "<pad>", "<unk> x", "Éléphant", "naïve"]),
    min_size=1,  # transformers' wrapper refuses an empty batch; PhraseBans never asks for one
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(texts=phrases, spaced=st.booleans(), padded_first=st.booleans())
def test_phrases_encode_as_the_tokenizer_encodes_them(tokenizer, texts, spaced, padded_first):
    texts = [" " + t for t in texts] if spaced else texts
    if padded_first:  # the wrapper leaves this padding and truncation on its backend
        tokenizer(CORPUS[:3], padding="max_length", truncation=True, max_length=5)
    got = encoder_without_specials(tokenizer)(texts)
    assert got == [list(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def test_special_tokens_text_splits_only_when_the_tokenizer_splits_it(tokenizer, monkeypatch):
    encode = encoder_without_specials(tokenizer)
    eos = tokenizer.eos_token
    assert encode([eos]) == [[tokenizer.eos_token_id]]
    monkeypatch.setattr(tokenizer, "split_special_tokens", True)
    assert encode([eos]) == [list(tokenizer([eos], add_special_tokens=False)["input_ids"][0])]
    assert encode([eos]) != [[tokenizer.eos_token_id]]


def test_token_names_are_the_tokenizers(tokenizer):
    name = token_namer(tokenizer)
    assert [name(i) for i in range(len(tokenizer))] == tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))


def test_a_tokenizer_that_encodes_its_own_way_keeps_it(tokenizer):
    class Lowering(type(tokenizer)):
        def _encode_plus(self, text, *args, **kwargs):
            return super()._encode_plus([t.lower() for t in text], *args, **kwargs)

    lowering = Lowering.__new__(Lowering)
    lowering.__dict__.update(tokenizer.__dict__)
    assert encoder_without_specials(lowering)(["The Cat"]) == encoder_without_specials(tokenizer)(["the cat"])


def test_the_families_tokenizers_encode_through_the_backend(tokenizer, monkeypatch):
    encode = encoder_without_specials(tokenizer)

    def wrapped(*args, **kwargs):
        raise AssertionError("encoded through the wrapper")

    monkeypatch.setattr(type(tokenizer), "_encode_plus", wrapped)
    assert encode(["the cat"])[0]
