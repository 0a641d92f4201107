"""Word-aligned paraphrase corpora: reading them, scoring word alignments, and span instances.

The Edinburgh++ JSON format (Cohn et al. 2008; Thadani et al. 2012) is a list of
``{"id", "source", "target", "sureAlign", "possibleAlign"}`` with whitespace-tokenised text and
links ``i-j`` (0-based source-target token indices). Word aligners (``spanaug.baselines``) train
on and are scored against such pairs; the span aligner's instances are made from them by the rule
of ``instances_from_alignments``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spanaug.core.aligner_settings import corpus_name
from spanaug.core.errors import InputError
from spanaug.core.files import iter_lines, read_json
from spanaug.pipeline.aligner.instances import Instance

Link = tuple[int, int]


#: Closed-class English words; a span instance's phrase must start and end on another word.
#: Prepositions that head phrasal verbs and quantities (up, about, under) count as content: with
#: them the importer reproduces 97.6% of the shared Edinburgh++ instances (2,071 of 2,122).
FUNCTION_WORDS = frozenset(
    (
        "a an the this that these those some any each every no all both either neither and or but "
        "nor so yet if then than as of to in on at by for with from i me my mine we us our you your "
        "he him his she her it its they them their is am are was were be been being do does did has "
        "have had will would shall should can could may might must 's 'll 're 've 'd n't not there "
        "here which who whom whose what"
    ).split()
)


@dataclasses.dataclass
class AlignedPair:
    """A sentence pair with its gold word alignment (sure links are a subset of possible ones)."""

    id: str
    source: list[str]
    target: list[str]
    sure: set[Link]
    possible: set[Link]

    @property
    def key(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The (source, target) token tuples, as ``align.pair_key`` keys an instance's pair."""
        return tuple(self.source), tuple(self.target)


_LINK_RE = re.compile(r"([0-9]+)-([0-9]+)")


def parse_links(text: str | None, n_src: int, n_tgt: int, path: Path | str, where: str) -> set[Link]:
    """``"0-1 2-3"`` -> {(0, 1), (2, 3)}; errors name the file and the pair."""
    if text is not None and not isinstance(text, str):
        raise InputError(path, where, f"links {text!r} (expected a string of 'i-j' links, or null)")
    links = set()
    for item in (text or "").split():
        # ASCII digits only: int() would also take '²', '٣' or '1_0'.
        match = _LINK_RE.fullmatch(item)
        if match is None:
            raise InputError(path, where, f"link {item!r} is not 'i-j'")
        i, j = int(match[1]), int(match[2])
        if not (0 <= i < n_src and 0 <= j < n_tgt):
            raise InputError(path, where, f"link {item!r} out of range for {n_src} x {n_tgt} tokens")
        links.add((i, j))
    return links


def read_aligned_json(path: Path | str) -> list[AlignedPair]:
    """Pairs from an Edinburgh++-format JSON list (possible links include the sure ones)."""
    records = read_json(path)
    if not isinstance(records, list):
        raise InputError(path, None, "expected a JSON list of aligned sentence pairs")
    pairs = []
    seen: dict[str, int] = {}
    for n, rec in enumerate(records):
        where = f"item {n}"
        if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in ("source", "target")):
            raise InputError(path, where, "expected an object with string 'source' and 'target'")
        src, tgt = rec["source"].split(), rec["target"].split()
        if not src or not tgt:
            raise InputError(path, where, "empty source or target sentence")
        pair_id = rec.get("id", n)
        if not (
            (isinstance(pair_id, str) and pair_id.strip())
            or (isinstance(pair_id, int) and not isinstance(pair_id, bool))
        ):
            raise InputError(path, where, f"'id' is {pair_id!r} (expected a non-blank string or an integer)")
        if str(pair_id) in seen:
            raise InputError(path, where, f"duplicate id {pair_id!r} (first at item {seen[str(pair_id)]})")
        seen[str(pair_id)] = n
        sure = parse_links(rec.get("sureAlign"), len(src), len(tgt), path, where)
        possible = parse_links(rec.get("possibleAlign"), len(src), len(tgt), path, where) | sure
        pairs.append(AlignedPair(str(pair_id), src, tgt, sure, possible))
    return pairs


def is_content(token: str) -> bool:
    return any(c.isalnum() for c in token) and token.lower() not in FUNCTION_WORDS


def link_index(links: set[Link]) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Targets of each source token and sources of each target token."""
    by_src: dict[int, set[int]] = {}
    by_tgt: dict[int, set[int]] = {}
    for i, j in links:
        by_src.setdefault(i, set()).add(j)
        by_tgt.setdefault(j, set()).add(i)
    return by_src, by_tgt


def phrase_target(
    by_src: dict[int, set[int]],
    by_tgt: dict[int, set[int]],
    start: int,
    end: int,
) -> tuple[int, int] | None:
    """The target block [a, b] that source phrase [start, end] aligns to as a unit, if any."""
    if any(i not in by_src for i in range(start, end + 1)):
        return None
    targets = set().union(*(by_src[i] for i in range(start, end + 1)))
    a, b = min(targets), max(targets)
    inside = all(start <= i <= end for j in range(a, b + 1) for i in by_tgt.get(j, ()))
    return (a, b) if inside else None


def instances_from_alignments(
    pairs: Iterable[AlignedPair],
    max_phrase: int = 4,
    max_target_width: int = 6,
    null_share: float = 0.10,
    seed: int = 0,
    prefix: str = "aligned",
) -> list[Instance]:
    """Span-alignment instances from sure links, by the rule of ``../shared/data/README.md``.

    A source phrase of 1..``max_phrase`` tokens starting and ending on a content word, every
    token linked, whose links cover a target block [a, b] (b - a < ``max_target_width``) that
    links nowhere outside the phrase, and whose text differs from the block's, is an instance;
    a phrase containing a shorter such phrase is dropped. Unlinked content words give
    null-target instances, sampled down to ``null_share`` of the result.
    """
    aligned, nulls = [], []
    for pair in pairs:
        src, tgt = pair.source, pair.target
        by_src, by_tgt = link_index(pair.sure)
        found: list[tuple[int, int]] = []
        for length in range(1, max_phrase + 1):
            for start in range(len(src) - length + 1):
                end = start + length - 1
                if not (is_content(src[start]) and is_content(src[end])):
                    continue
                if any(start <= s and e <= end for s, e in found):
                    continue
                block = phrase_target(by_src, by_tgt, start, end)
                if block is None or block[1] - block[0] >= max_target_width:
                    continue
                if [t.lower() for t in src[start : end + 1]] == [t.lower() for t in tgt[block[0] : block[1] + 1]]:
                    continue
                found.append((start, end))
                aligned.append(Instance(f"{prefix}:{pair.id}:{start}-{end}", src, tgt, (start, end), block))
        nulls.extend(
            Instance(f"{prefix}:{pair.id}:{i}-{i}", src, tgt, (i, i), None)
            for i, tok in enumerate(src)
            if is_content(tok) and i not in by_src
        )
    # null / (aligned + null) = share  =>  null = share / (1 - share) * aligned
    keep = min(len(nulls), round(null_share / (1 - null_share) * len(aligned))) if null_share < 1 else len(nulls)
    kept_nulls = set(map(id, random.Random(seed).sample(nulls, keep)))
    return aligned + [n for n in nulls if id(n) in kept_nulls]


def pairs_from_bitext(
    pairs: Iterable[tuple[list[str], list[str]]], max_block: int = 4, prefix: str = "bitext"
) -> list[AlignedPair]:
    """Word alignments from token differences: identical tokens link 1:1, replaced blocks link all-to-all.

    A stand-in for hand alignments where a corpus has none (the demo bitext), so the word-aligner
    comparison runs end to end; its numbers measure agreement with a diff, not with annotators.
    """
    out = []
    for n, (src, tgt) in enumerate(pairs):
        matcher = difflib.SequenceMatcher(a=[t.lower() for t in src], b=[t.lower() for t in tgt], autojunk=False)
        links: set[Link] = set()
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                links.update((i1 + d, j1 + d) for d in range(i2 - i1))
            elif op == "replace" and i2 - i1 <= max_block and j2 - j1 <= max_block:
                links.update((i, j) for i in range(i1, i2) for j in range(j1, j2))
        out.append(AlignedPair(f"{prefix}:{n}", list(src), list(tgt), links, set(links)))
    return out


def write_aligned_json(pairs: Iterable[AlignedPair], path: Path | str) -> None:
    """Pairs in the Edinburgh++ JSON format (atomically)."""
    from spanaug.core.files import atomic_path

    records = [
        {
            "id": p.id,
            "source": " ".join(p.source),
            "target": " ".join(p.target),
            "sureAlign": " ".join(f"{i}-{j}" for i, j in sorted(p.sure)),
            "possibleAlign": " ".join(f"{i}-{j}" for i, j in sorted(p.possible - p.sure)),
        }
        for p in pairs
    ]
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(records, indent=1), encoding="utf-8")


_OFFSET_RE = re.compile(r"-?[0-9]+")


def _offset(text: str, path: Path | str, lineno: int) -> int:
    if not _OFFSET_RE.fullmatch(text.strip()):
        raise InputError(path, lineno, f"span offset {text!r} is not an integer")
    return int(text)


def read_span_tsv(path: Path | str) -> list[Instance]:
    """Span alignments as tab-separated ``source, source_start, source_end, target, target_start, target_end``.

    Sentences are whitespace-tokenised; span ends are exclusive (Python slices), and an empty
    target span (or ``-1``) means no counterpart. A header row is allowed. This is the column
    layout of span-alignment releases such as the seed paper's; map other layouts onto it.
    """
    out = []
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        row = line.split("\t")
        if lineno == 1 and row[1:2] and not _OFFSET_RE.fullmatch(row[1].strip()):
            continue  # a header
        if len(row) != 6:
            raise InputError(path, lineno, f"expected 6 tab-separated columns, got {len(row)}")
        src, tgt = row[0].split(), row[3].split()
        s, e = _offset(row[1], path, lineno), _offset(row[2], path, lineno)
        no_target = not row[4].strip() or row[4].strip() == "-1"
        a, b = (None, None) if no_target else (_offset(row[4], path, lineno), _offset(row[5], path, lineno))
        if not src or not tgt:
            raise InputError(path, lineno, "empty source or target sentence")
        if not 0 <= s < e <= len(src):
            raise InputError(path, lineno, f"source span [{s}, {e}) out of range for {len(src)} tokens")
        if a is not None and not 0 <= a < b <= len(tgt):
            raise InputError(path, lineno, f"target span [{a}, {b}) out of range for {len(tgt)} tokens")
        out.append(Instance(f"{Path(path).stem}:{lineno}", src, tgt, (s, e - 1), (a, b - 1) if a is not None else None))
    return out


def import_instances(path: Path | str, fmt: str = "auto", **kwargs: Any) -> list[Instance]:
    """Span instances from a word-aligned JSON corpus (``edinburgh``) or a span TSV (``tsv``)."""
    if fmt == "auto":
        fmt = "tsv" if str(path).endswith((".tsv", ".txt")) else "edinburgh"
    if fmt == "edinburgh":
        return instances_from_alignments(read_aligned_json(path), prefix=corpus_name(path), **kwargs)
    if fmt == "tsv":
        return read_span_tsv(path)
    raise InputError(path, None, f"unknown alignment format {fmt!r} (edinburgh, tsv)")
