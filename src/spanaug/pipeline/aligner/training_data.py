"""More training signal for span aligners, made from data the project already has.

- ``phrase_pair_instances``: every phrase pair a word-aligned corpus yields (consistent phrase
  pairs, as in phrase-based MT), not only the 1-4 token content-word phrases of
  ``wordalign.instances_from_alignments``;
- ``graph_instances``: instances between every two members of a chain of paraphrases (the
  ``graph`` augmenter's, on the pipeline's own chains);
- ``chain_instances``: instances composed along chains through sentences that several aligned
  pairs share, made with ``graph_instances``;
- ``synthetic_instances``: pairs made by rewriting one labelled span of a sentence (another
  lexical unit of the same frame, inflected like the original), for pre-training;
- ``restrict_to_pairs``: keep only instances on allowed sentence pairs (no test-pair leakage);
- ``extra_training_instances``: the named sources (phrases, reversed, chains) for a training set,
  as ``align train`` and ``align systems`` add them, from the files ``read_sources`` reads.

``instances.reverse_instances`` gives reversed instances.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from spanaug.core.errors import ConfigError
from spanaug.pipeline.aligner.instances import Instance, pair_key, reverse_instances, without_pairs
from spanaug.pipeline.aligner.word_aligned import AlignedPair, is_content, link_index, phrase_target

PairKey = tuple[tuple[str, ...], tuple[str, ...]]


def restrict_to_pairs(
    instances: Iterable[Instance], allowed: Collection[PairKey], either_way: bool = True
) -> list[Instance]:
    """Instances whose sentence pair (or, with ``either_way``, the pair read backwards) is in ``allowed``."""
    allowed = set(allowed)
    if either_way:
        allowed |= {(b, a) for a, b in allowed}
    return [i for i in instances if pair_key(i) in allowed]


def pairs_for(aligned: Iterable[AlignedPair], allowed: Collection[PairKey]) -> list[AlignedPair]:
    """The word-aligned pairs whose (source, target) is one of ``allowed`` (e.g. a split's training pairs)."""
    allowed = set(allowed)
    return [p for p in aligned if p.key in allowed]


def consistent_phrases(
    pair: AlignedPair, max_phrase: int = 4, max_target_width: int = 6, content_bounded: bool = False
) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Every (source phrase, target block) whose sure links stay inside the pair: each source token
    linked, and no target token of the block linked outside the phrase (phrase-based MT's rule)."""
    by_src, by_tgt = link_index(pair.sure)
    out = []
    n = len(pair.source)
    for length in range(1, max_phrase + 1):
        for start in range(n - length + 1):
            end = start + length - 1
            if content_bounded and not (is_content(pair.source[start]) and is_content(pair.source[end])):
                continue
            block = phrase_target(by_src, by_tgt, start, end)
            if block is None or block[1] - block[0] >= max_target_width:
                continue
            out.append(((start, end), block))
    return out


def phrase_pair_instances(
    pairs: Iterable[AlignedPair],
    max_phrase: int = 4,
    max_target_width: int = 6,
    content_bounded: bool = False,
    keep_identical: bool = False,
    null_share: float = 0.10,
    max_per_pair: int | None = None,
    seed: int = 0,
    prefix: str = "phrases",
) -> list[Instance]:
    """Span instances from every consistent phrase pair of 1..``max_phrase`` source tokens.

    ``keep_identical`` keeps phrases copied unchanged (a rewritten trigger never is);
    ``content_bounded`` keeps only phrases starting and ending on content words. Unlinked source
    tokens (content words) give null-target instances, sampled to ``null_share`` of the result.
    ``max_per_pair`` caps the aligned instances per sentence pair (a seeded sample).
    """
    rng = random.Random(seed)
    aligned, nulls = [], []
    for pair in pairs:
        src, tgt = pair.source, pair.target
        found = []
        for (s, e), (a, b) in consistent_phrases(pair, max_phrase, max_target_width, content_bounded):
            if not keep_identical and [t.lower() for t in src[s : e + 1]] == [t.lower() for t in tgt[a : b + 1]]:
                continue
            found.append(Instance(f"{prefix}:{pair.id}:{s}-{e}", src, tgt, (s, e), (a, b)))
        if max_per_pair is not None and len(found) > max_per_pair:
            found = rng.sample(found, max_per_pair)
        aligned.extend(found)
        linked = {i for i, _ in pair.sure}
        nulls.extend(
            Instance(f"{prefix}:{pair.id}:{i}-{i}", src, tgt, (i, i), None)
            for i, tok in enumerate(src)
            if is_content(tok) and i not in linked
        )
    keep = min(len(nulls), round(null_share / (1 - null_share) * len(aligned))) if null_share < 1 else len(nulls)
    return aligned + rng.sample(nulls, keep)


def graph_instances(
    chains: Mapping[str, list[tuple[list[str], tuple[int, int]]]],
) -> tuple[list[Instance], dict[str, int]]:
    """Span-alignment instances between every two members of each chain (Chen et al.'s graph view).

    Adjacent members were aligned by the aligner itself ('direct', and their 'reversed' pairs);
    members two or more steps apart are aligned by composing those alignments ('composed').
    """
    out: list[Instance] = []
    counts = {"chains": 0, "direct": 0, "reversed": 0, "composed": 0}
    for seed_id, members in chains.items():
        if len(members) < 2:
            continue
        counts["chains"] += 1
        for i, (src, src_span) in enumerate(members):
            for j, (tgt, tgt_span) in enumerate(members):
                if i == j or src == tgt:
                    continue
                kind = "direct" if j == i + 1 else "reversed" if j == i - 1 else "composed"
                counts[kind] += 1
                out.append(Instance(f"graph:{seed_id}:{i}>{j}", src, tgt, src_span, tgt_span))
    counts["instances"] = len(out)
    return out, counts


def chain_instances(
    pairs: Sequence[AlignedPair], max_phrase: int = 4, max_target_width: int = 6, keep_identical: bool = False
) -> tuple[list[Instance], dict[str, int]]:
    """Instances composed along paraphrase chains through sentences shared by several aligned pairs.

    A sentence X aligned to Y1 and to Y2 (in either direction) is the middle of a chain
    Y1 - X - Y2 for every phrase of X that is a consistent phrase in both pairs. The chains go
    through ``graph_instances`` (the ``graph`` augmenter's); only its composed
    instances (members two steps apart: Y1 -> Y2 and back) are returned, the direct ones being
    phrase pairs already. The counts say how many chains and instances there were.
    """
    # For each sentence: its aligned phrases per partner, as {X span: partner span}.
    links: dict[tuple[str, ...], list[tuple[tuple[str, ...], dict[tuple[int, int], tuple[int, int]]]]] = defaultdict(
        list
    )
    for pair in pairs:
        phrases = consistent_phrases(pair, max_phrase, max_target_width)
        links[tuple(pair.source)].append((tuple(pair.target), dict(phrases)))
        # The reverse direction: the target block as X's phrase, the source phrase as the partner's.
        links[tuple(pair.target)].append((tuple(pair.source), {t: s for s, t in phrases}))
    chains: dict[str, list[tuple[list[str], tuple[int, int]]]] = {}
    for x, partners in links.items():
        if len(partners) < 2:
            continue
        for i, (y1, spans1) in enumerate(partners):
            for j, (y2, spans2) in enumerate(partners[i + 1 :], start=i + 1):
                if y1 == y2:
                    continue
                for span in sorted(set(spans1) & set(spans2)):
                    chains[f"{hash(x) & 0xFFFFFFFF:08x}:{i}-{j}:{span[0]}-{span[1]}"] = [
                        (list(y1), spans1[span]),
                        (list(x), span),
                        (list(y2), spans2[span]),
                    ]
    instances, counts = graph_instances(chains)
    composed = []
    for inst in instances:
        steps = inst.id.rsplit(":", 1)[1].split(">")
        if abs(int(steps[0]) - int(steps[1])) < 2:
            continue
        s, e = inst.source_span
        a, b = inst.target_span
        if not keep_identical and [t.lower() for t in inst.source_tokens[s : e + 1]] == [
            t.lower() for t in inst.target_tokens[a : b + 1]
        ]:
            continue
        composed.append(inst)
    return composed, {
        "shared_sentences": sum(len(v) > 1 for v in links.values()),
        "chains": counts["chains"],
        "composed": counts["composed"],
        "kept": len(composed),
    }


def perturb(
    tokens: Sequence[str], span: tuple[int, int], rng: random.Random, max_deletions: int = 2, rotate: float = 0.5
) -> tuple[list[str], tuple[int, int]]:
    """Move the span off its original position: delete up to ``max_deletions`` tokens outside it,
    and (with probability ``rotate``) swap the clauses before and after a comma or 'and' that lies
    outside the span. Returns the new tokens and the span's new position."""
    marked = [(t, s_ <= span[1] and s_ >= span[0]) for s_, t in enumerate(tokens)]
    outside = [n for n, (_, inside) in enumerate(marked) if not inside and marked[n][0] not in (".", "?", "!")]
    for n in sorted(rng.sample(outside, min(len(outside) // 4, rng.randint(0, max_deletions))), reverse=True):
        del marked[n]
    cuts = [n for n, (t, inside) in enumerate(marked) if t in (",", "and") and not inside and 0 < n < len(marked) - 2]
    if cuts and rng.random() < rotate:
        n = rng.choice(cuts)
        end = marked[-1:] if marked[-1][0] in (".", "?", "!") else []
        body = marked[: len(marked) - len(end)]
        head, tail = body[:n], body[n + 1 :]
        marked = tail + [marked[n]] + head + end
    new = [t for t, _ in marked]
    inside = [n for n, (_, flag) in enumerate(marked) if flag]
    return new, (inside[0], inside[-1])


def synthetic_instances(
    sentences: Iterable[tuple[Sequence[str], tuple[int, int], str, Sequence[str] | None]],
    lexicon: Mapping[str, Sequence[str]],
    per_span: int = 1,
    both_ways: bool = True,
    perturbed: bool = True,
    seed: int = 0,
    prefix: str = "synthetic",
) -> list[Instance]:
    """Pre-training pairs made by rewriting a labelled span: its frame's other lexical units.

    ``sentences`` yields (tokens, trigger span, frame, PTB tags or None); ``lexicon`` maps a frame
    to its lexical units (``lemma.pos``). The trigger's head (last token) is replaced by another
    unit of the same frame with the same part of speech, inflected to the original tag with
    lemminflect; multi-word units replace the whole span. With ``perturbed`` the rewritten
    sentence also loses a word or two and may have its clauses swapped (``perturb``), so that
    the answer is not simply the word at the same position. Each gives the instance original ->
    rewritten (and back, with ``both_ways``), the span's counterpart being the new words.
    """
    from lemminflect import getInflection

    rng = random.Random(seed)
    out: list[Instance] = []
    for n, (tokens, (s, e), frame, tags) in enumerate(sentences):
        tokens = list(tokens)
        original = " ".join(tokens[s : e + 1]).lower()
        units = [u for u in lexicon.get(frame, ()) if "." in u]
        rng.shuffle(units)
        made = 0
        for unit in units:
            if made >= per_span:
                break
            lemma, pos = unit.rsplit(".", 1)
            lemma = lemma.replace("_", " ").strip()
            if not lemma or lemma.lower() == original or "(" in lemma or "[" in lemma:
                continue
            words = lemma.split()
            tag = tags[e] if tags else None
            if tag and len(words) >= 1 and pos in ("v", "n", "a"):
                forms = getInflection(words[-1], tag=tag) if tag[:2] in ("VB", "NN", "JJ") else None
                if forms:
                    words = words[:-1] + [forms[0]]
            if tags and pos == "v" and not tags[e].startswith("VB"):
                continue
            if tags and pos == "n" and not tags[e].startswith("NN"):
                continue
            if " ".join(words).lower() == original:
                continue
            if tokens[s][:1].isupper() and s == 0:
                words[0] = words[0][:1].upper() + words[0][1:]
            new = tokens[:s] + words + tokens[e + 1 :]
            span = (s, s + len(words) - 1)
            if perturbed:
                new, span = perturb(new, span, rng)
            out.append(Instance(f"{prefix}:{n}:{made}", tokens, new, (s, e), span))
            if both_ways:
                out.append(Instance(f"{prefix}:{n}:{made}:reversed", new, tokens, span, (s, e)))
            made += 1
    return out


# ---------------------------------------------------------------- sources by name


@dataclasses.dataclass
class DataSources:
    """Where extra training data comes from; each is built from the training pairs only."""

    gold_pairs: Sequence[AlignedPair] = ()  # the word-aligned corpus the instances come from
    synthetic: Sequence[Instance] = ()
    phrase_options: dict[str, Any] = dataclasses.field(default_factory=dict)


def read_sources(cfg: Any, gold_pairs: str | Sequence[str] | None = None, synthetic: str | None = None) -> DataSources:
    """The word-aligned pairs (one file or several) and synthetic instances in the files named, with
    the phrase options of ``cfg`` (settings with ``phrase_max_len``, ``phrase_max_per_pair`` and
    ``phrase_keep_identical``: ``aligner.train`` or ``aligner.systems``)."""
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    paths = [gold_pairs] if isinstance(gold_pairs, str) else list(gold_pairs or ())
    return DataSources(
        gold_pairs=[pair for path in paths for pair in read_aligned_json(path)],
        synthetic=read_instances(synthetic) if synthetic else (),
        phrase_options=phrase_options(cfg),
    )


def phrase_options(cfg: Any) -> dict[str, Any]:
    """phrase_pair_instances' options from settings with ``phrase_max_len``, ``phrase_max_per_pair``
    and ``phrase_keep_identical`` (``aligner.train``, ``aligner.systems``, ``aligner.cross_domain``)."""
    return {
        "max_phrase": cfg.phrase_max_len,
        "max_per_pair": cfg.phrase_max_per_pair,
        "keep_identical": cfg.phrase_keep_identical,
    }


def extra_training_instances(
    names: Sequence[str],
    train: Sequence[Instance],
    sources: DataSources,
    seed: int = 0,
    held_out: Sequence[Instance] = (),
    by_source: dict[str, list[Instance]] | None = None,
) -> tuple[list[Instance], dict[str, Any]]:
    """The extra training instances of the sources ``names`` (phrases, reversed, chains) and their
    counts. They are made from the training pairs only, none lies on a ``held_out`` pair (either
    way round), and none repeats a (pair, source span) already in ``train`` or an earlier source.
    ``by_source``, when given, receives each source's instances (to count them by corpus)."""
    train_keys = {pair_key(i) for i in train}
    seen = {(pair_key(i), i.source_span) for i in train}
    out: list[Instance] = []
    counts: dict[str, Any] = {}
    for name in names:
        if name == "reversed":
            made = reverse_instances(train)
        elif name in ("phrases", "chains"):
            if not sources.gold_pairs:
                raise ConfigError(f"the {name} source needs the word-aligned pairs of the training instances")
            pairs = pairs_for(sources.gold_pairs, train_keys)
            if name == "phrases":
                made = restrict_to_pairs(phrase_pair_instances(pairs, seed=seed, **sources.phrase_options), train_keys)
            else:
                made, counts["chains"] = chain_instances(pairs)
        else:
            raise ConfigError(f"unknown data source {name!r}")
        fresh = [i for i in without_pairs(made, held_out) if (pair_key(i), i.source_span) not in seen]
        seen |= {(pair_key(i), i.source_span) for i in fresh}
        counts[name] = len(fresh)
        if by_source is not None:
            by_source[name] = fresh
        out.extend(fresh)
    return out, counts


# ---------------------------------------------------------------- corpora and their origin


def read_corpora(instance_files: Sequence[str], word_aligned: Sequence[str] = ()) -> dict[str, list[Instance]]:
    """Span instances per file: span-alignment JSONL as they are, word-aligned corpora (Edinburgh++
    JSON) through ``align import-aligned``'s rule (the shared data's); file -> its instances."""
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import import_instances

    corpora = {path: read_instances(path) for path in instance_files}
    corpora.update({path: import_instances(path, "edinburgh") for path in word_aligned})
    return corpora


def corpus_origins(
    train: Mapping[str, Sequence[Instance]],
    dev: Mapping[str, Sequence[Instance]],
    made: Mapping[str, Sequence[Instance]],
) -> list[dict[str, Any]]:
    """Where the training and dev instances came from (``training_summary.json``'s ``corpora``): per
    file, its part, instances and those with no counterpart, and the made instances (phrases,
    reversed, ...) that lie on its sentence pairs, either way round."""
    owner: dict[PairKey, str] = {}
    for path, insts in train.items():
        for inst in insts:
            key = pair_key(inst)
            owner.setdefault(key, path)
            owner.setdefault((key[1], key[0]), path)
    made_counts: dict[str, dict[str, int]] = defaultdict(dict)
    for source, insts in made.items():
        for inst in insts:
            path = owner.get(pair_key(inst), "other")
            made_counts[path][source] = made_counts[path].get(source, 0) + 1
    out = []
    for part, corpora in (("train", train), ("dev", dev)):
        for path, insts in corpora.items():
            rec: dict[str, Any] = {
                "file": path,
                "part": part,
                "instances": len(insts),
                "null_instances": sum(i.target_span is None for i in insts),
            }
            if part == "train":
                rec["made"] = made_counts.pop(path, {})
            out.append(rec)
    if made_counts:  # made instances on pairs of no listed corpus (e.g. a phrase_pairs file's other pairs)
        other = {"file": "other", "part": "train", "instances": 0, "null_instances": 0}
        out.append({**other, "made": made_counts["other"]})
    return out
