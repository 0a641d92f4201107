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


def _constraints(phrases: list[str]) -> str:
    listed = ", ".join(html.esc(p) for p in phrases)
    return f'<details><summary>{len(phrases)}</summary><span class="small">{listed}</span></details>'


def chain_html(chain: dict[str, Any]) -> str:
    """One seed and its outputs as a table: the seed's trigger and each output's aligned span marked."""
    head = (
        f"<h3>{html.esc(chain['frame'])} &middot; {html.esc(chain['lexical_unit'])} "
        f'<span class="note small">seed {html.esc(chain["sentence_id"])}</span></h3>'
    )
    rows = [
        {
            "iteration": "0 (seed)",
            "sentence": html.marked(chain["tokens"], [(chain["span_start"], chain["span_end"], "trigger")]),
            "span": html.esc(" ".join(chain["tokens"][chain["span_start"] : chain["span_end"] + 1])),
            "paraphrase score": None,
            "aligner score": None,
            "beam": None,
            "constraints": "",
        }
    ]
    for out in chain["outputs"]:
        aligned = out["aligned_start"] is not None
        rows.append(
            {
                "iteration": out["iteration"],
                "sentence": html.marked(
                    out["paraphrase_tokens"], [(out["aligned_start"], out["aligned_end"], "aligned")]
                ),
                "span": html.esc(out["aligned_text"])
                if aligned
                else '<span class="note">none aligned: the chain ends</span>',
                "paraphrase score": out["paraphrase_score"],
                "aligner score": out["aligner_score"],
                "beam": out["beam_rank"],
                "constraints": _constraints(out["constraints"]),
            }
        )
    columns = ["iteration", "sentence", "span", "paraphrase score", "aligner score", "beam", "constraints"]
    return head + html.table(rows, columns, raw_html=("sentence", "span", "constraints"))


def chains_page(augmented: Path | str, seeds: Path | str, n: int, seed: int = 0, demo: bool = False) -> str:
    chains, with_outputs, n_seeds = sample_chains(augmented, seeds, n, seed)
    intro = (
        f"<p>{len(chains)} of the {with_outputs:,} seeds with outputs ({n_seeds:,} seeds in all), drawn with "
        f'seed {seed}. In each seed sentence the <mark class="trigger">trigger</mark> is marked; in each '
        f'paraphrase, the <mark class="aligned">span the aligner found</mark>, which the next iteration '
        "rewrites under the constraints listed (click a count to see them). Paraphrase score: length-normalised "
        "NLL, lower is better; aligner score: 0-1; beam: the output's rank among the decoded beams.</p>"
    )
    if demo:
        intro += (
            '<div class="banner demo">Demo run: tiny models trained for a minute, so these chains show the '
            "mechanics, not paraphrase quality.</div>"
        )
    if not chains:
        body = intro + '<div class="banner warn">No seed has an output: there is no chain to show.</div>'
    else:
        body = intro + "".join(chain_html(c) for c in chains)
    return html.page("Example chains", body)
