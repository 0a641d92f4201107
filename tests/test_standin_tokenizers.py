"""The stand-in tokenizers are the same in every process: a random model over another vocabulary
decodes otherwise, and a test then passes or fails by chance (the tokenizers library's WordPiece
trainer breaks ties in a per-process hash order)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import CORPUS

from spanaug.demo.standins import CAUSAL_FAMILIES, FAMILIES

PRINT_VOCABULARIES = """
import hashlib, json, sys
from spanaug.demo import standins
texts = json.loads(sys.stdin.read())
made = [standins.bert_tokenizer(texts, 200)]
made += [standins.train_tokenizer(kind, texts, 200) for kind in sorted(set(standins.FAMILIES.values()))]
made += [standins.causal_tokenizer(family, texts, 300) for family in standins.CAUSAL_FAMILIES]
print(json.dumps([hashlib.sha256(t.backend_tokenizer.to_str().encode()).hexdigest() for t in made]))
"""


def _vocabularies() -> str:
    done = subprocess.run(
        [sys.executable, "-c", PRINT_VOCABULARIES],
        input=json.dumps(CORPUS * 3),
        text=True,
        capture_output=True,
        check=True,
    )
    return done.stdout


def test_every_stand_in_tokenizer_is_the_same_in_every_process():
    first = _vocabularies()
    assert len(json.loads(first)) == 1 + len(set(FAMILIES.values())) + len(CAUSAL_FAMILIES)
    for _ in range(3):
        assert _vocabularies() == first


def test_the_wordpiece_stand_in_covers_every_character_in_both_roles():
    from spanaug.demo.standins import bert_tokenizer

    tokenizer = bert_tokenizer(CORPUS * 3, vocab_size=120)
    vocab = tokenizer.backend_tokenizer.get_vocab()
    chars = {c for line in CORPUS for c in line if not c.isspace()}
    assert all(c in vocab and "##" + c in vocab for c in chars)
    # an unseen word of seen characters is pieces, never the unknown token
    word = "".join(sorted(chars))[:12]
    assert tokenizer.unk_token_id not in tokenizer(word, add_special_tokens=False)["input_ids"]
