"""Augmenters compared downstream (§6.3): paraphrastic outputs, lexical substitution and GECA,
plus the chain-graph augmenter that turns paraphrase chains into aligner training data.

Each Frame ID augmenter writes EXAMPLES rows: one new sentence with one labelled trigger, and
the key of the training sentence it derives from, so the Figure 8 experiment can keep only the
examples of the sentences it sampled.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from spanaug.core.degraded import warn
from spanaug.core.errors import ArtifactError
from spanaug.core.evaluation_settings import GecaSettings
from spanaug.core.score_scale import Scorers
from spanaug.core.text import detokenize
from spanaug.downstream.curve_checks import BASELINE, label
from spanaug.downstream.frameid.data import Sentence, sentence_key
from spanaug.evaluation.filtering import heuristic_mask, keep_share_warning
from spanaug.pipeline.constraints import head_positions, lu_upos
from spanaug.pipeline.frame_elements import substituted

log = logging.getLogger(__name__)


AUGMENTERS = ("paraphrastic", "lexsub", "geca")


def example(
    augmenter: str,
    example_id: str,
    seed_tokens: Sequence[str],
    tokens: list[str],
    span: tuple[int, int],
    frame: str,
    source_trigger: str,
    frame_elements: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An EXAMPLES row (``frame_elements`` over ``tokens``, where the augmenter carries them)."""
    return {
        "example_id": f"{augmenter}:{example_id}",
        "augmenter": augmenter,
        "seed_key": sentence_key(seed_tokens),
        "tokens": tokens,
        "text": detokenize(tokens),
        "span_start": span[0],
        "span_end": span[1],
        "trigger": " ".join(tokens[span[0] : span[1] + 1]),
        "frame": frame,
        "source_trigger": source_trigger,
        "frame_elements": frame_elements,
    }


def _selected(augmented: pa.Table, bounds: Mapping[str, float] | None) -> list[dict[str, Any]]:
    """Aligned outputs passing a filter's bounds (all aligned outputs without bounds)."""
    return augmented.filter(heuristic_mask(augmented, bounds or {})).to_pylist()


class _Seeds(dict):
    """Seed rows by id; a missing id is an error that names the output."""

    def __missing__(self, seed_id: str) -> dict[str, Any]:
        raise ArtifactError(f"an output's seed_id {seed_id!r} is not in the seeds table: pass the run's seeds.parquet")


def _seeds_by_id(seeds: pa.Table) -> dict[str, dict[str, Any]]:
    return _Seeds((r["sentence_id"], r) for r in seeds.to_pylist())


def paraphrastic_examples(
    augmented: pa.Table, seeds: pa.Table, bounds: Mapping[str, float] | None = None
) -> list[dict[str, Any]]:
    """The pipeline's aligned outputs (passing ``bounds``) as examples of their seed sentences."""
    by_id = _seeds_by_id(seeds)
    return [
        example(
            "paraphrastic",
            r["output_id"],
            by_id[r["seed_id"]]["tokens"],
            r["paraphrase_tokens"],
            (r["aligned_start"], r["aligned_end"]),
            r["frame"],
            r["seed_trigger"],
            r["frame_elements"],
        )
        for r in _selected(augmented, bounds)
    ]


def _trigger_tag(tags: Sequence[str], tokens: Sequence[str], span: tuple[int, int], upos: str | None) -> str:
    """The POS of a trigger: its head word's tag (the last word's when the head is unclear)."""
    heads = head_positions(list(tokens[span[0] : span[1] + 1]), upos)
    return tags[span[0] + (heads[0] if len(heads) == 1 else span[1] - span[0])]


def lexsub_examples(
    augmented: pa.Table, seeds: pa.Table, tagger: Any, bounds: Mapping[str, float] | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Lexical substitution: each aligned trigger put back into its seed sentence, kept only when
    the tagger gives the new trigger the POS of the original; the seed's FEs move with the new
    trigger (:func:`~spanaug.pipeline.frame_elements.substituted`). Returns the examples and counts."""
    by_id = _seeds_by_id(seeds)
    seed_tags: dict[str, list[str]] = {}
    out, seen = [], set()
    counts = {"candidates": 0, "same_as_seed": 0, "pos_mismatch": 0, "duplicates": 0}
    for r in _selected(augmented, bounds):
        counts["candidates"] += 1
        seed = by_id[r["seed_id"]]
        s, e = seed["span_start"], seed["span_end"]
        new = r["paraphrase_tokens"][r["aligned_start"] : r["aligned_end"] + 1]
        if [t.lower() for t in new] == [t.lower() for t in seed["tokens"][s : e + 1]]:
            counts["same_as_seed"] += 1
            continue
        tokens = seed["tokens"][:s] + new + seed["tokens"][e + 1 :]
        span = (s, s + len(new) - 1)
        upos = lu_upos(seed["lexical_unit"])
        if r["seed_id"] not in seed_tags:
            seed_tags[r["seed_id"]] = tagger.tag(seed["tokens"])
        if _trigger_tag(tagger.tag(tokens), tokens, span, upos) != _trigger_tag(
            seed_tags[r["seed_id"]], seed["tokens"], (s, e), upos
        ):
            counts["pos_mismatch"] += 1
            continue
        if (tuple(tokens), span) in seen:
            counts["duplicates"] += 1
            continue
        seen.add((tuple(tokens), span))
        fes = substituted(seed["frame_elements"], (s, e), len(new))
        out.append(example("lexsub", r["output_id"], seed["tokens"], tokens, span, r["frame"], r["seed_trigger"], fes))
    counts["examples"] = len(out)
    return out, counts


Fragment = tuple[tuple[str, ...], str]  # trigger tokens, frame


def _environment(tokens: Sequence[str], span: tuple[int, int], k: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    padded = ["<s>"] * k + [t.lower() for t in tokens] + ["</s>"] * k
    s, e = span[0] + k, span[1] + k
    return tuple(padded[s - k : s]), tuple(padded[e + 1 : e + 1 + k])


def geca_examples(
    sentences: Sequence[Sentence],
    cfg: GecaSettings | None = None,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Good-Enough Compositional Augmentation (Andreas 2020, Algorithm 1) for trigger spans.

    Fragments are (trigger, frame) pairs, templates the sentences with the trigger cut out, and
    environments the k-token windows around it. Two fragments sharing an environment are taken
    to be interchangeable: every template of the first is filled with the second, labelled with
    the second's frame. New sentences already in the data, or made twice, are dropped.
    """
    cfg = cfg or GecaSettings()
    rng = random.Random(cfg.seed)
    templates: dict[Fragment, list[tuple[int, tuple[int, int]]]] = defaultdict(list)
    environments: dict[tuple, set[Fragment]] = defaultdict(set)
    for n, sent in enumerate(sentences):
        for span, frame in sent.triggers.items():
            fragment = (tuple(sent.tokens[span[0] : span[1] + 1]), frame)
            templates[fragment].append((n, span))
            environments[_environment(sent.tokens, span, cfg.window)].add(fragment)
    pairs: set[tuple[Fragment, Fragment]] = set()
    for fragments in environments.values():
        if len(fragments) < 2:
            continue
        shared = sorted(fragments)
        if len(shared) > cfg.max_fragments_per_environment:
            shared = rng.sample(shared, cfg.max_fragments_per_environment)
        pairs.update(
            (a, b) for a in shared for b in shared if a != b and [t.lower() for t in a[0]] != [t.lower() for t in b[0]]
        )
    ordered = sorted(pairs)
    rng.shuffle(ordered)  # the output cap then samples pairs instead of favouring the alphabet

    def filled() -> Iterator[tuple[list[str], list[str], tuple[int, int], str, str]]:
        """New (template sentence, tokens, span, frame, replaced trigger), each once and none already in the data."""
        seen = {(sentence_key(s.tokens), span) for s in sentences for span in s.triggers}
        for first, second in ordered:
            for n, (s, e) in templates[first][: cfg.max_templates_per_pair]:
                base = sentences[n].tokens
                tokens = base[:s] + list(second[0]) + base[e + 1 :]
                span = (s, s + len(second[0]) - 1)
                if (sentence_key(tokens), span) not in seen:
                    seen.add((sentence_key(tokens), span))
                    yield base, tokens, span, second[1], " ".join(first[0])

    candidates = filled()
    out = [
        example("geca", str(n), base, tokens, span, frame, replaced)
        for n, (base, tokens, span, frame, replaced) in enumerate(itertools.islice(candidates, cfg.max_outputs))
    ]
    if next(candidates, None) is not None:
        log.warning("GECA stopped at max_outputs=%d", cfg.max_outputs)
    counts = {
        "fragments": len(templates),
        "environments": len(environments),
        "fragment_pairs": len(pairs),
        "examples": len(out),
    }
    return out, counts


def chain_members(
    augmented: pa.Table,
    seeds: pa.Table,
    bounds: Mapping[str, float] | None = None,
) -> dict[str, list[tuple[list[str], tuple[int, int]]]]:
    """Per seed: the seed and its outputs in iteration order, as (tokens, span), up to the first
    output that has no aligned span or fails ``bounds`` (the chain is cut there)."""
    outputs: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in _selected(augmented, bounds):
        outputs[r["seed_id"]][r["iteration"]] = r
    chains = {}
    for seed in seeds.to_pylist():
        members = [(list(seed["tokens"]), (seed["span_start"], seed["span_end"]))]
        passing = outputs.get(seed["sentence_id"], {})
        while len(members) in passing:  # member i is iteration i's output
            r = passing[len(members)]
            members.append((list(r["paraphrase_tokens"]), (r["aligned_start"], r["aligned_end"])))
        chains[seed["sentence_id"]] = members
    return chains


def empty_warnings(augmenter: str, counts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``warnings`` of an augmenter's counts (see :mod:`spanaug.core.degraded`): an augmenter that
    made nothing, and why, so the Frame ID comparison does not silently train on no extra data."""
    warnings: list[dict[str, Any]] = []
    flt = counts.get("filter", "none")
    where = f"under filter {flt!r}" if flt != "none" else "among the aligned outputs"
    if augmenter == "graph":
        if not counts.get("instances"):
            warn(
                warnings,
                "empty",
                f"chain graph: 0 span-alignment instances ({counts.get('chains', 0)} chains "
                f"{where}): a self-training round gets no extra instances",
                log,
            )
        return warnings
    if counts.get("examples"):
        return warnings
    if augmenter == "paraphrastic":
        why = f"no output {where}"
    elif augmenter == "lexsub":
        why = (
            f"{counts.get('candidates', 0)} candidates {where}: {counts.get('same_as_seed', 0)} same as the seed, "
            f"{counts.get('pos_mismatch', 0)} with another POS, {counts.get('duplicates', 0)} duplicates"
        )
    else:
        why = (
            f"{counts.get('fragment_pairs', 0)} fragment pairs share an environment "
            f"({counts.get('fragments', 0)} fragments, {counts.get('environments', 0)} environments)"
        )
    warn(
        warnings,
        "empty",
        f"augmenter {augmenter}: 0 examples ({why}): its Frame ID curve can only equal the {label(BASELINE)} curve",
        log,
    )
    return warnings


def filter_counts(
    augmented: pa.Table, name: str | None, bounds: Mapping[str, float] | None, scorers: Scorers | None
) -> dict[str, Any]:
    """What an augmenter's filter kept: its name, the aligned outputs, those passing it, and the
    aligner-score scale its bounds were chosen for (null: the table records none)."""
    aligned = augmented.column("aligned_start").is_valid()
    return {
        "filter": name or "none",
        "aligned_outputs": sum(aligned.to_pylist()),
        "passed_filter": sum(heuristic_mask(augmented, bounds or {}).to_pylist()),
        "aligner_scale": scorers.aligner_scale if scorers is not None else None,
    }


def augmenter_warnings(
    augmenter: str,
    counts: Mapping[str, Any],
    bounds: Mapping[str, float] | None = None,
    scorers: Scorers | None = None,
) -> list[dict[str, Any]]:
    """:func:`empty_warnings`, and before them the filter's own: one that kept nothing or under
    :data:`~spanaug.evaluation.filtering.SPARSE_SHARE` of the aligned outputs (:func:`filter_counts`),
    so an augmenter that adds almost nothing says why instead of reading as FN."""
    warnings: list[dict[str, Any]] = []
    if bounds and "passed_filter" in counts:
        found = keep_share_warning(
            counts["filter"], bounds, counts["passed_filter"], counts["aligned_outputs"], scorers
        )
        warnings += [found] if found is not None else []
    return warnings + empty_warnings(augmenter, counts)
