"""POS taggers: an offline lexicon tagger and spaCy pipelines, on the project's own tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanaug.core.errors import ConfigError

_CLOSED = {
    **dict.fromkeys(
        "a an the this that these those some any each every no all both either neither".split(),
        "DET",
    ),
    **dict.fromkeys(
        (
            "of in on at by for with from into onto about over under up down out off to through after "
            "before during against between without within upon"
        ).split(),
        "ADP",
    ),
    **dict.fromkeys(
        (
            "i me you he him she her it we us they them myself himself herself itself themselves who whom what which"
        ).split(),
        "PRON",
    ),
    **dict.fromkeys(["my", "your", "his", "its", "our", "their"], "DET"),
    **dict.fromkeys(["and", "or", "but", "nor", "yet", "so"], "CCONJ"),
    **dict.fromkeys("if because although though while when whether since unless than as".split(), "SCONJ"),
    **dict.fromkeys(
        (
            "is am are was were be been being do does did has have had will would shall should can "
            "could may might must 's 're 've 'll 'd"
        ).split(),
        "AUX",
    ),
    **dict.fromkeys(["not", "n't"], "PART"),
    **dict.fromkeys(
        "one two three four five six seven eight nine ten hundred thousand million billion".split(),
        "NUM",
    ),
}


class LexiconTagger:
    """A context-light POS tagger for offline runs.

    Closed-class words come from a list, open-class words from lemminflect's lexicon; ambiguity
    is resolved by the previous word (after ``to``, a pronoun or an auxiliary: VERB; after a
    determiner, adjective, preposition, number or verb: NOUN). Far cruder than a statistical
    tagger: production configs name a spaCy model.
    """

    name = "lexicon"
    _PRIORITY = ("VERB", "NOUN", "ADJ", "ADV", "PROPN")

    def tag(self, tokens: list[str]) -> list[str]:
        from lemminflect import getAllLemmas

        tags: list[str] = []
        for n, token in enumerate(tokens):
            low = token.lower()
            if low in _CLOSED:
                tags.append(_CLOSED[low])
            elif not any(c.isalnum() for c in token):
                tags.append("PUNCT")
            elif token.replace(",", "").replace(".", "").isdigit():
                tags.append("NUM")
            else:
                options = [p for p in self._PRIORITY if p in getAllLemmas(low)]
                prev = tags[-1] if tags else None
                if not options:
                    tags.append("PROPN" if token[:1].isupper() and n > 0 else "NOUN")
                elif (prev in ("PRON", "AUX") or (n and tokens[n - 1].lower() == "to")) and "VERB" in options:
                    tags.append("VERB")
                elif prev in ("DET", "ADJ", "ADP", "NUM", "VERB") and "NOUN" in options:
                    tags.append("NOUN")
                else:
                    tags.append(options[0])
        return tags


class FallbackTags:
    """A sentence's POS tags: the input's own column when it has one, else the offline lexicon
    tagger's, memoised per token sequence (the downstream models ask for the same sentences every
    epoch)."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, ...], list[str]] = {}
        self._tagger: LexiconTagger | None = None

    def __call__(self, tokens: Sequence[str], pos: Sequence[str] | None) -> list[str]:
        if pos:
            return list(pos)
        key = tuple(tokens)
        if key not in self._memo:
            self._tagger = self._tagger or LexiconTagger()
            self._memo[key] = self._tagger.tag(list(tokens))
        return self._memo[key]


class SpacyTagger:
    """Universal POS tags from a spaCy pipeline, on our tokens (no re-tokenisation)."""

    def __init__(self, model: str):
        import spacy
        from spacy.tokens import Doc

        self.name = f"spacy:{model}"
        self._nlp = spacy.load(model, disable=["parser", "ner", "lemmatizer"])
        self._doc = Doc

    def tag(self, tokens: list[str]) -> list[str]:
        doc = self._doc(self._nlp.vocab, words=tokens)
        for _, proc in self._nlp.pipeline:
            doc = proc(doc)
        return [t.pos_ for t in doc]


def load_tagger(spec: str | None) -> tuple[Any | None, str | None]:
    """(tagger, None), or (None, why not) when ``spec`` is off or its tagger is not installed."""
    if not spec:
        return None, "no POS tagger configured (stats.pos_tagger)"
    if spec == "lexicon":
        return LexiconTagger(), None
    if spec.startswith("spacy:"):
        try:
            return SpacyTagger(spec.split(":", 1)[1]), None
        except ImportError:
            return None, f"POS tagger {spec!r}: spaCy is not installed (pip install spacy)"
        except OSError as exc:
            return None, f"POS tagger {spec!r}: the spaCy model is not installed ({exc})"
    raise ConfigError(f"stats.pos_tagger must be 'lexicon' or 'spacy:<model>', not {spec!r}")
