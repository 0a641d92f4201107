"""Detokenizing beams (hf_backend.decode_texts): one call of a Rust tokenizer's backend gives
transformers' batch_decode texts, for every family's tokenizer; a tokenizer that decodes its own way
goes through batch_decode."""

import pytest
from conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.demo.standins import FAMILIES, train_tokenizer
from spanaug.pipeline.paraphraser.hf_backend import decode_texts


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
