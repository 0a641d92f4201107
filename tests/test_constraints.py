import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.core.config import ConstraintSettings
from spanaug.pipeline.constraints import expand, lemma_of, requests_from_chain, violates, violations


def test_corroborate_inflections_and_case():
    forms = expand(["corroborate"], "VERB")
    for form in ["corroborate", "corroborates", "corroborated", "corroborating", "Corroborate", "CORROBORATED"]:
        assert form in forms


def test_multiword_verb_inflects_its_head():
    forms = expand(["gave", "up"], "VERB")
    assert {"gave up", "give up", "gives up", "giving up", "given up", "Give up"} <= forms
    assert "gave ups" not in forms


def test_noun_inflects_last_word():
    forms = expand(["ice", "cream"], "NOUN")
    assert "ice creams" in forms and "ices cream" not in forms


def test_switches():
    assert expand(["bought"], "VERB", ConstraintSettings(case_variants=False, inflections=False)) == {"bought"}
    assert "Bought" in expand(["bought"], "VERB", ConstraintSettings(inflections=False))
    assert "buy" not in expand(["bought"], "VERB", ConstraintSettings(inflections=False))


def test_violations_whole_word_case_sensitive():
    assert violations("He gives up easily", ["give up", "gives up"]) == ["gives up"]
    assert violations("The upgrade", ["up"]) == []
    assert violations("Give it", ["give"]) == []


def _by_pattern(text, constraints):
    """The definition: each phrase's words, whitespace or nothing between them, whole words."""
    found = []
    for c in constraints:
        words = [re.escape(w) for w in c.split()]
        if words and re.search(r"(?<!\w)" + r"\s*".join(words) + r"(?!\w)", text):
            found.append(c)
    return found


_PIECES = ["give", "gives", "up", "Up", "ice", "cream", "don't", "naïve", "co-op", "5", "_x", ".", "é"]
_phrases = st.lists(st.sampled_from(_PIECES), min_size=0, max_size=3).map(" ".join)
_texts = st.lists(st.sampled_from([*_PIECES, "giveup", "upgrade", "x"]), max_size=8).flatmap(
    lambda ws: st.lists(st.sampled_from(["", " ", "  ", "\t", ",", "-"]), min_size=len(ws), max_size=len(ws)).map(
        lambda seps: "".join(w + s for w, s in zip(ws, seps))
    )
)


@settings(max_examples=300, deadline=None)
@given(text=_texts, constraints=st.lists(_phrases, max_size=6))
def test_matcher_finds_what_the_patterns_find(text, constraints):
    """The word-run lookup and the pattern search agree with each phrase's pattern."""
    assert violations(text, constraints) == _by_pattern(text, constraints)
    assert violates(text, constraints) == bool(_by_pattern(text, constraints))


def test_lemma_of():
    assert lemma_of(["gave", "up"], "VERB") == "give up"
    assert lemma_of(["critics"], "NOUN") == "critic"


def test_requests_carry_constraints_forward_and_stop_unaligned_chains():
    rows = [
        {
            "seed_id": "a",
            "frame": "F",
            "lexical_unit": "buy.v",
            "seed_trigger": "bought",
            "iteration": 1,
            "paraphrase_tokens": ["He", "purchased", "it"],
            "paraphrase_text": "He purchased it",
            "aligned_start": 1,
            "aligned_end": 1,
            "constraints": ["bought", "buy"],
        },
        {
            "seed_id": "b",
            "frame": "F",
            "lexical_unit": "buy.v",
            "seed_trigger": "bought",
            "iteration": 1,
            "paraphrase_tokens": ["x"],
            "paraphrase_text": "x",
            "aligned_start": None,
            "aligned_end": None,
            "constraints": ["bought"],
        },
    ]
    out = list(requests_from_chain(rows, 2, ConstraintSettings()))
    assert len(out) == 1
    assert {"bought", "buy", "purchased", "purchases", "Purchase"} <= set(out[0]["constraints"])
    assert out[0]["iteration"] == 2 and out[0]["source_span_start"] == 1


def test_a_span_without_letters_has_no_other_forms():
    """An aligner may point a trigger at punctuation; lemminflect's OOV rules fail on it (IndexError
    on '.' as an adjective), which once stopped the constraints of a whole shard."""
    for upos in (None, "VERB", "NOUN", "ADJ", "ADV"):
        assert expand(["."], upos, ConstraintSettings(case_variants=False)) == {"."}
        assert expand(["1,000"], upos) == {"1,000"}


@settings(max_examples=int(os.environ.get("SPANAUG_FUZZ_EXAMPLES", "40")), deadline=None)
@given(
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=6),
    st.sampled_from([None, "VERB", "NOUN", "ADJ", "ADV"]),
)
def test_any_token_expands_without_error(word, upos):
    out = expand([word], upos)
    assert word in out and all(phrase.strip() for phrase in out)
