"""Word alignments projected to spans, symmetrised and scored (AER).

A word aligner predicts links between source and target tokens; its span prediction for a source
span follows the links of the span's words and takes the maximal target span they cover (no
links: no prediction).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from spanaug.core.metrics import prf
from spanaug.pipeline.aligner.instances import Instance, pair_key
from spanaug.pipeline.aligner.word_aligned import AlignedPair, Link, write_aligned_json

Pair = tuple[tuple[str, ...], tuple[str, ...]]


def project_span(links: Iterable[Link], span: tuple[int, int]) -> tuple[int, int] | None:
    """The maximal target span covered by the links of the source span's words (None: no links)."""
    targets = [j for i, j in links if span[0] <= i <= span[1]]
    return (min(targets), max(targets)) if targets else None


def grow_diag_final_and(forward: set[Link], backward: set[Link], n_src: int, n_tgt: int) -> set[Link]:
    """Koehn et al.'s grow-diag-final-and of two directional alignments (both as (source, target))."""
    union = forward | backward
    alignment = forward & backward
    src_done = {i for i, _ in alignment}
    tgt_done = {j for _, j in alignment}
    neighbours = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]

    def add(i: int, j: int) -> None:
        alignment.add((i, j))
        src_done.add(i)
        tgt_done.add(j)

    grew = True
    while grew:
        grew = False
        for i in range(n_src):
            for j in range(n_tgt):
                if (i, j) not in alignment:
                    continue
                for di, dj in neighbours:
                    cand = (i + di, j + dj)
                    if cand in union and cand not in alignment and (cand[0] not in src_done or cand[1] not in tgt_done):
                        add(*cand)
                        grew = True
    for directional in (forward, backward):  # final-and: both ends still unaligned
        for i in range(n_src):
            for j in range(n_tgt):
                if (i, j) in directional and i not in src_done and j not in tgt_done:
                    add(i, j)
    return alignment


def parse_pharaoh(line: str) -> set[Link]:
    """``"0-1 2-3"`` (Pharaoh format, as fast_align and atools write) -> links."""
    return {(int(i), int(j)) for i, j in (item.split("-") for item in line.split())}


def project_instances(instances: Sequence[Instance], links: dict[Pair, set[Link]]) -> list[tuple[int, int] | None]:
    """Each instance's source span projected through its sentence pair's links."""
    return [project_span(links[pair_key(inst)], inst.source_span) for inst in instances]


def span_predictions(instances: Sequence[Instance], links: dict[Pair, set[Link]]) -> list[dict[str, Any]]:
    """Prediction records (the span aligner's format) from word links per sentence pair."""
    return [
        {"id": inst.id, "target_span": list(span) if span else None, "score": 1.0 if span else 0.0}
        for inst, span in zip(instances, project_instances(instances, links))
    ]


def links_above(probs: torch.Tensor, threshold: float) -> set[Link]:
    """The (source, target) cells of a link-probability matrix at or above ``threshold``."""
    return {(int(i), int(j)) for i, j in (probs >= threshold).nonzero().tolist()}


def pairs_of(instances: Sequence[Instance]) -> list[Pair]:
    return list(dict.fromkeys(pair_key(i) for i in instances))


def gold_links(gold: Sequence[AlignedPair]) -> dict[Pair, AlignedPair]:
    return {p.key: p for p in gold}


def write_links(links: dict[Pair, set[Link]], path: Path | str) -> None:
    """Links per pair as Edinburgh++-format JSON (usable as DiscAlign pre-training data)."""
    write_aligned_json(
        (
            AlignedPair(str(n), list(src), list(tgt), pair_links, set(pair_links))
            for n, ((src, tgt), pair_links) in enumerate(links.items())
        ),
        path,
    )


def alignment_scores(gold: Sequence[AlignedPair], predicted: Sequence[set[Link]]) -> dict[str, float]:
    """AER (Och and Ney 2003) and precision/recall/F1 against sure links, micro over pairs."""
    a_and_s = a_and_p = n_a = n_s = 0
    for pair, links in zip(gold, predicted, strict=True):
        a_and_s += len(links & pair.sure)
        a_and_p += len(links & (pair.possible | pair.sure))
        n_a += len(links)
        n_s += len(pair.sure)
    precision, recall, f1 = prf(a_and_p, n_a, n_s, gold_hits=a_and_s)
    aer = 1.0 - (a_and_s + a_and_p) / (n_a + n_s) if n_a + n_s else 0.0
    return {"aer": aer, "precision": precision, "recall": recall, "f1": f1, "n_pairs": len(gold)}
