"""The example-chains page: a seeded sample of seeds, each with its paraphrase chain.

The first thing a researcher checks is whether the chains make sense: the seed sentence with its
trigger, then each iteration's paraphrase with the span the aligner found (the trigger that the
next iteration rewrites), its scores and the constraints it was decoded under.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core import artifacts
from spanaug.core.consistency import check_seeds_cover
from spanaug.report import html

_COLUMNS = [
    "seed_id",
    "iteration",
    "paraphrase_tokens",
    "aligned_start",
    "aligned_end",
    "aligned_text",
    "paraphrase_score",
    "aligner_score",
    "beam_rank",
    "constraints",
]


def sample_chains(
    augmented: Path | str,
    seeds: Path | str,
    n: int,
    seed: int = 0,
    extra_columns: Sequence[str] = (),
    eligible: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[list[dict[str, Any]], int, int]:
    """``n`` seeds drawn (by ``seed``) among those with outputs (and, given ``eligible``, whose
    SENTENCES row it accepts), each with its outputs in order (their ``extra_columns`` too).

    Returns the chains (a seed's SENTENCES row plus ``outputs``), the number of seeds it drew from
    and the number of seeds.
    """
    seed_table = artifacts.read_table(seeds, artifacts.SENTENCES)
    seed_rows = {r["sentence_id"]: r for r in seed_table.to_pylist()}
    table = artifacts.read_table(augmented, artifacts.AUGMENTED).select([*_COLUMNS, *extra_columns])
    check_seeds_cover(seeds, seed_table, augmented, table.column("seed_id"))
    with_outputs = sorted(
        sid
        for sid in set(table.column("seed_id").to_pylist()) & set(seed_rows)
        if eligible is None or eligible(seed_rows[sid])
    )
    chosen = sorted(
        random.Random(seed).sample(with_outputs, min(n, len(with_outputs))),
        key=lambda sid: (seed_rows[sid]["frame"], sid),
    )
    picked = table.filter(pc.is_in(table.column("seed_id"), value_set=pa.array(chosen, pa.string())))
    outputs: dict[str, list[dict[str, Any]]] = {}
    for row in picked.to_pylist():
        outputs.setdefault(row["seed_id"], []).append(row)
    chains = [{**seed_rows[sid], "outputs": sorted(outputs[sid], key=lambda r: r["iteration"])} for sid in chosen]
    return chains, len(with_outputs), len(seed_rows)


def chains_page(augmented: Path | str, seeds: Path | str, n: int, seed: int = 0, demo: bool = False) -> str:
    chains, with_outputs, n_seeds = sample_chains(augmented, seeds, n, seed)
    return html.render(
        "chains.html",
        title="Example chains",
        chains=chains,
        with_outputs=with_outputs,
        n_seeds=n_seeds,
        seed=seed,
        demo=demo,
    )
