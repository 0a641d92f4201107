"""Constraint expansion: the forms of a span that the paraphraser must not produce.

A span's text is expanded into its case variants and the inflections of its head lemma
(lemminflect stands in for the paper's ``pattern``), unioned with the constraints carried from
earlier iterations.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lemminflect import getAllInflections, getAllInflectionsOOV, getAllLemmas, getAllLemmasOOV

from spanaug.core import artifacts
from spanaug.core.config import ConstraintSettings
from spanaug.core.consistency import check_iteration, check_provenance_iteration
from spanaug.core.errors import ArtifactError
from spanaug.core.text import is_blank

log = logging.getLogger(__name__)

#: FrameNet LU part-of-speech suffixes as universal POS tags that lemminflect knows.
FN_TO_UPOS = {"v": "VERB", "n": "NOUN", "a": "ADJ", "adv": "ADV"}


def lu_upos(lexical_unit: str) -> str | None:
    """The universal POS of a FrameNet LU name such as ``give up.v`` (None when unknown)."""
    _, dot, pos = lexical_unit.rpartition(".")
    return FN_TO_UPOS.get(pos.lower()) if dot else None


def case_variants(phrase: str) -> set[str]:
    """The phrase as written, lower-cased, sentence-initial (first letter upper) and upper-cased."""
    lower = phrase.lower()
    return {phrase, lower, lower[:1].upper() + lower[1:], phrase.upper()}


@functools.lru_cache(maxsize=65536)
def word_forms(word: str, upos: str | None = None) -> frozenset[str]:
    """Every inflection of every lemma of ``word`` (restricted to ``upos`` when given). A word with no
    letter (punctuation, a number, which an aligner may point a trigger at) has no other form:
    lemminflect's out-of-vocabulary rules fail on it (the lemma of '.' as an adjective is '')."""
    lower = word.lower()
    if not any(c.isalpha() for c in lower):
        return frozenset({lower})
    lemmas = getAllLemmas(lower, upos) if upos else getAllLemmas(lower)
    if not lemmas and upos:
        lemmas = getAllLemmasOOV(lower, upos)
    forms = {lower}
    for pos, lemma_tuple in lemmas.items():
        for lemma in lemma_tuple:
            if not lemma:
                continue
            forms.add(lemma)
            inflections = getAllInflections(lemma, pos) or getAllInflectionsOOV(lemma, pos)
            for tag_forms in inflections.values():
                forms.update(tag_forms)
    return frozenset(forms)


def head_positions(tokens: Sequence[str], upos: str | None) -> list[int]:
    """Which tokens of a multi-word span inflect: a verb's first word, a noun's or adjective's
    last word; every word when the POS is unknown."""
    if len(tokens) == 1:
        return [0]
    if upos in ("VERB",):
        for i, tok in enumerate(tokens):
            if getAllLemmas(tok.lower(), "VERB"):
                return [i]
        return [0]
    if upos in ("NOUN", "ADJ", "ADV"):
        return [len(tokens) - 1]
    return list(range(len(tokens)))


def expand(tokens: Sequence[str], upos: str | None = None, cfg: ConstraintSettings | None = None) -> set[str]:
    """The span itself, its head's inflections substituted in place, each in its case variants."""
    cfg = cfg or ConstraintSettings()
    tokens = list(tokens)
    if not tokens or all(is_blank(t) for t in tokens):
        return set()
    phrases = {" ".join(tokens)}
    if cfg.inflections:
        for i in head_positions(tokens, upos):
            for form in word_forms(tokens[i], upos):
                phrases.add(" ".join(tokens[:i] + [form] + tokens[i + 1 :]))
    if not cfg.case_variants:
        return phrases
    out: set[str] = set()
    for phrase in phrases:
        out |= case_variants(phrase)
    return out


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """Where ``phrase`` occurs: its words, whitespace or nothing between them, and no word
    character just before or after."""
    words = [re.escape(w) for w in phrase.split()]
    return re.compile(r"(?<!\w)" + r"\s*".join(words) + r"(?!\w)")


_WORD = re.compile(r"\w+")


class ConstraintMatcher:
    """Which of a constraint set's phrases occur in a text, as :func:`_phrase_pattern` finds them.

    Decoding checks every beam's text against its sentence's set (20 beams x 44 phrases a sentence
    at iteration 10). A phrase of word characters only occurs exactly where it is a whole run of
    word characters of the text, so those phrases are looked up in the set of the text's runs; the
    others (several words, punctuation) are searched for with their patterns."""

    def __init__(self, constraints: Sequence[str]):
        phrases = [c for c in dict.fromkeys(constraints) if c.strip()]
        self.words = frozenset(c for c in phrases if _WORD.fullmatch(c))
        self.patterns = [(c, _phrase_pattern(c)) for c in phrases if c not in self.words]

    def found(self, text: str) -> set[str]:
        runs = set(_WORD.findall(text)) if self.words else set()
        return (self.words & runs) | {c for c, pattern in self.patterns if pattern.search(text)}

    def violated(self, text: str) -> bool:
        if self.words and not self.words.isdisjoint(_WORD.findall(text)):
            return True
        return any(pattern.search(text) for _, pattern in self.patterns)


@functools.lru_cache(maxsize=4096)
def constraint_matcher(constraints: tuple[str, ...]) -> ConstraintMatcher:
    """The matcher of a constraint set, made once per set (a set's beams come one after another)."""
    return ConstraintMatcher(constraints)


def violations(text: str, constraints: Iterable[str]) -> list[str]:
    """The constraint phrases that occur in ``text`` (case-sensitive, whole words), in their order."""
    constraints = tuple(constraints)
    found = constraint_matcher(constraints).found(text)
    return [c for c in constraints if c in found]


def violates(text: str, constraints: Iterable[str]) -> bool:
    """Whether any constraint phrase occurs in ``text`` (:func:`violations` is not empty)."""
    return constraint_matcher(tuple(constraints)).violated(text)


def requests_from_chain(
    rows: Iterable[dict[str, Any]],
    iteration: int,
    cfg: ConstraintSettings,
    origin: str = "the chain rows",
    offset: int = 0,
) -> Iterator[dict[str, Any]]:
    """Turn iteration ``iteration - 1``'s outputs into iteration ``iteration``'s requests.

    Rows whose span did not align end their chain: there is nothing to rewrite. A span that
    expands to no phrase would let the paraphraser run unconstrained, so it is an error naming
    ``origin`` and the row (artifact validation already refuses the spans and tokens that cause it).
    """
    for n, row in enumerate(rows):
        if row["aligned_start"] is None:
            continue
        start, end = row["aligned_start"], row["aligned_end"]
        span = row["paraphrase_tokens"][start : end + 1]
        new = expand(span, lu_upos(row["lexical_unit"]), cfg)
        if not new:
            raise ArtifactError(
                f"{origin}, row {offset + n}: span [{start}, {end}] of {row['paraphrase_tokens']!r} yields no "
                "phrase to forbid (expected a non-blank span)"
            )
        yield {
            "seed_id": row["seed_id"],
            "frame": row["frame"],
            "lexical_unit": row["lexical_unit"],
            "seed_trigger": row["seed_trigger"],
            "iteration": iteration,
            "source_tokens": row["paraphrase_tokens"],
            "source_text": row["paraphrase_text"],
            "source_span_start": start,
            "source_span_end": end,
            "constraints": sorted(set(row["constraints"]) | new),
            "source_frame_elements": row.get("frame_elements"),  # the source's FEs, for their alignment
        }


def expand_stage(chain_path: Path | str, out: Path | str, iteration: int, cfg: ConstraintSettings) -> int:
    """CLI stage: a CHAIN shard of iteration ``i - 1`` -> a REQUESTS shard of iteration ``i``.

    A shard whose chains have all ended (none aligned) gives an empty shard: legitimate, and said."""
    rows_in = 0
    source = artifacts.read_provenance(chain_path)
    check_provenance_iteration(chain_path, source, iteration - 1, f"iteration {iteration}'s constraint expansion")
    provenance = artifacts.derived(chain_path, "requests", source, iteration=iteration)
    with artifacts.open_writer(out, artifacts.REQUESTS, provenance) as writer:
        for table in artifacts.iter_batches(chain_path, artifacts.CHAIN):
            check_iteration(chain_path, table, iteration - 1, f"iteration {iteration}'s constraint expansion")
            writer.write(list(requests_from_chain(table.to_pylist(), iteration, cfg, str(chain_path), rows_in)))
            rows_in += table.num_rows
    if not writer.rows:
        log.warning(
            "%s: none of its %d chain(s) continues (no aligned span): iteration %d's shard is empty",
            chain_path,
            rows_in,
            iteration,
        )
    return writer.rows


def lemma_of(tokens: Sequence[str], upos: str | None = None) -> str:
    """The span's citation form: its head word lemmatised (``gave up`` -> ``give up``)."""
    from lemminflect import getLemma

    tokens = [t.lower() for t in tokens]
    if not tokens:
        return ""
    heads = head_positions(tokens, upos)
    head = heads[0] if len(heads) == 1 else len(tokens) - 1
    lemmas = getLemma(tokens[head], upos) if upos else ()
    if not lemmas:
        for pos in ("VERB", "NOUN", "ADJ", "ADV"):
            lemmas = getAllLemmas(tokens[head], pos).get(pos, ())
            if lemmas:
                break
    lemma = lemmas[0] if lemmas else tokens[head]
    return " ".join(tokens[:head] + [lemma] + tokens[head + 1 :])
