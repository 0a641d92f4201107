"""The report's Frame elements page: what the outputs did with their seeds' frame elements.

Retention per iteration (overall and per coreness class) and per FE name, the distribution of the
carried FEs' scores, and example chains with each FE marked in its own colour and the trigger
underlined (the numbers come from :mod:`spanaug.evaluation.fe_retention`). With
``frame_elements.mode: off`` the page says so, with what the seeds hold, so every run's report has
the page and the workflow's graph is the same in both modes.

The page's JSON summary records warnings that the warnings page collects:

- ``frame_elements.mode`` off while the seeds hold overt FEs (degraded): the release then teaches
  frame identification only, and its CoNLL tags no argument;
- an iteration whose outputs carry less than :data:`LOW_RETENTION` of their seeds' FEs (degraded),
  or none of them (empty).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanaug.core import artifacts, files, plotting
from spanaug.core.config import FrameElementSettings
from spanaug.core.degraded import warn
from spanaug.evaluation import fe_retention
from spanaug.pipeline.frame_elements import has_span, lowest_score
from spanaug.report import html
from spanaug.report.chains import sample_chains

#: Below this share of their seeds' overt FEs carried, an iteration's outputs have lost most of
#: their arguments: the warnings page says so. In the demo (tiny models) retention stays above 0.9
#: over three iterations; an aligner that cannot place FEs (as before the aligner learned copies:
#: 3 of 108 FEs carried) falls far below it.
LOW_RETENTION = 0.5

#: FE backgrounds, given to a chain's FE names in its seed's order, so the FEs of one sentence differ
#: (a frame with more FEs reuses colours; each FE is labelled with its name anyway). Light enough
#: for dark text and apart from the trigger's underline.
PALETTE = (
    "#a6cee3",
    "#b2df8a",
    "#fb9a99",
    "#fdbf6f",
    "#cab2d6",
    "#ffff99",
    "#8dd3c7",
    "#bebada",
    "#80b1d3",
    "#fccde5",
    "#d9d9d9",
    "#ccebc5",
)

#: The per-iteration table's columns (CSV and page).
ITERATION_COLUMNS = [
    "iteration",
    "outputs",
    "outputs_with_fes",
    "fes_to_carry",
    "carried",
    "lost",
    "null_instantiated",
    "retention",
    *fe_retention.CLASS_COLUMNS.values(),
    "outputs_keeping_every_fe",
    "mean_fe_score",
    "verbatim_fes",
    "verbatim_agreement",
]


#: The per-iteration table's headers on the page.
ITERATION_LABELS = dict(
    zip(
        ITERATION_COLUMNS,
        [
            "iteration",
            "outputs",
            "outputs with FEs",
            "seed FEs to carry",
            "carried",
            "lost",
            "null-instantiated",
            "retention",
            "core",
            "non-core",
            "unknown coreness",
            "keeping every FE",
            "mean score of carried FEs",
            "FEs repeated verbatim",
            "placed on their words",
        ],
    )
)


def colours(names: Sequence[str]) -> dict[str, str]:
    """A background colour per FE name, in the order given (a name given twice keeps its first)."""
    return {name: PALETTE[k % len(PALETTE)] for k, name in enumerate(dict.fromkeys(names))}


def _trigger_runs(
    tokens: Sequence[str], positions: range, trigger: tuple[int, int] | None
) -> list[tuple[list[str], bool]]:
    """Tokens at ``positions`` in runs, each inside the trigger or outside it."""
    runs: list[tuple[list[str], bool]] = []
    for i in positions:
        inside = trigger is not None and trigger[0] <= i <= trigger[1]
        if runs and runs[-1][1] == inside:
            runs[-1][0].append(tokens[i])
        else:
            runs.append(([tokens[i]], inside))
    return runs


def segments(
    tokens: Sequence[str],
    fes: Sequence[Mapping[str, Any]] | None,
    trigger: tuple[int, int] | None,
    palette: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The sentence cut where its FE changes: each segment's FE name and colour (None outside any FE)
    and its runs inside or outside the trigger. Marking runs, not tokens, keeps the tags nested
    whether the trigger sits inside an FE or crosses its edge (the ``fe_sentence`` macro)."""
    owner: list[int | None] = [None] * len(tokens)
    overt = [fe for fe in fes or () if has_span(fe)]
    for k, fe in enumerate(overt):
        for i in range(fe["start"], fe["end"] + 1):
            owner[i] = k
    out, i = [], 0
    while i < len(tokens):
        j = i
        while j + 1 < len(tokens) and owner[j + 1] == owner[i]:
            j += 1
        k = owner[i]
        name = None if k is None else overt[k]["name"]
        out.append(
            {
                "name": name,
                "colour": None if name is None else palette.get(name, PALETTE[-1]),
                "runs": _trigger_runs(tokens, range(i, j + 1), trigger),
            }
        )
        i = j + 1
    return out


def fe_sentence(
    tokens: Sequence[str],
    fes: Sequence[Mapping[str, Any]] | None,
    trigger: tuple[int, int] | None,
    palette: Mapping[str, str],
) -> str:
    """The sentence with each overt FE in its name's colour, labelled, and the trigger underlined."""
    return html.macro("fe_sentence", "fe_macros.html")(segments(tokens, fes, trigger, palette))


def chain_view(chain: Mapping[str, Any]) -> dict[str, Any]:
    """One seed and its outputs as the page's chain table shows them (a colour per FE name of the seed)."""
    fes = chain["frame_elements"]
    palette = colours([fe["name"] for fe in fes or ()])
    rows = [
        {
            "iteration": "0 (seed)",
            "segments": segments(chain["tokens"], fes, (chain["span_start"], chain["span_end"]), palette),
            "fes": fes,
            "aligned": True,
            "lowest": None,
        }
    ]
    for out in chain["outputs"]:
        trigger = (out["aligned_start"], out["aligned_end"]) if out["aligned_start"] is not None else None
        rows.append(
            {
                "iteration": out["iteration"],
                "segments": segments(out["paraphrase_tokens"], out["frame_elements"], trigger, palette),
                "fes": out["frame_elements"],
                "aligned": trigger is not None,
                "lowest": lowest_score(out["frame_elements"]),
            }
        )
    return {k: chain[k] for k in ("frame", "lexical_unit", "sentence_id")} | {"rows": rows}


def figure(per_iteration: Sequence[Mapping[str, Any]], histogram: Sequence[Mapping[str, Any]]) -> bytes:
    """Retention per iteration (overall and per coreness class) beside the carried FEs' scores."""
    fig, (ax, ax_scores) = plotting.subplots(1, 2, figsize=(10, 3.6))
    its = [r["iteration"] for r in per_iteration]
    for key, label, style in (
        ("retention", "all FEs", "-o"),
        ("core_retention", "core", "--s"),
        ("non_core_retention", "non-core", "--^"),
        ("unknown_coreness_retention", "unknown coreness", ":d"),
    ):
        values = [r[key] for r in per_iteration]
        if any(v is not None for v in values):
            ax.plot(its, [float("nan") if v is None else v for v in values], style, label=label)
    ax.axhline(LOW_RETENTION, color="#c0392b", linewidth=0.8, linestyle=":", label=f"warning below {LOW_RETENTION:.0%}")
    ax.set_ylim(0, 1.05)
    ax.set_xticks(its)
    ax.set_xlabel("iteration")
    ax.set_ylabel("share of the seeds' FEs carried")
    ax.set_title("FE retention")
    ax.legend(fontsize=8, loc="lower left")
    for k, it in enumerate(its):  # each bin's bars side by side, one per iteration, in 80% of the bin
        bins = [h for h in histogram if h["iteration"] == it]
        sub = [0.8 * (h["high"] - h["low"]) / len(its) for h in bins]
        ax_scores.bar(
            [h["low"] + 0.1 * (h["high"] - h["low"]) + (k + 0.5) * w for h, w in zip(bins, sub)],
            [h["fes"] for h in bins],
            width=sub,
            label=f"iteration {it}",
        )
    ax_scores.set_xlim(0, 1)
    ax_scores.set_xlabel("aligner score of a carried FE (1.0: verbatim)")
    ax_scores.set_ylabel("FEs")
    ax_scores.set_title("Carried FEs' scores")
    ax_scores.legend(fontsize=8, loc="upper left")
    return plotting.png_bytes(fig)


def fe_warnings(
    mode: str,
    seed_counts: Mapping[str, int],
    per_iteration: Sequence[Mapping[str, Any]],
    min_verbatim_agreement: float = 0.0,
) -> list[dict[str, Any]]:
    """The page's warnings (see the module's docstring)."""
    warnings: list[dict[str, Any]] = []
    if mode == "off":
        if seed_counts["overt_fes"]:
            warn(
                warnings,
                "degraded",
                f"frame_elements.mode is off, but {seed_counts['seeds_with_fes']:,} of {seed_counts['seeds']:,} "
                f"seeds hold {seed_counts['overt_fes']:,} overt frame elements: the outputs carry none (the CoNLL "
                "export tags no argument); set frame_elements.mode: align to carry them",
            )
        return warnings
    for r in per_iteration:
        if r["fes_to_carry"] and not r["carried"]:
            warn(warnings, "empty", f"iteration {r['iteration']}: none of {r['fes_to_carry']:,} seed FEs was carried")
    low = [
        r for r in per_iteration if r["retention"] is not None and r["carried"] > 0 and r["retention"] < LOW_RETENTION
    ]
    if low:
        listed = ", ".join(f"{r['iteration']} ({r['retention']:.0%})" for r in low)
        warn(
            warnings,
            "degraded",
            f"frame-element retention below {LOW_RETENTION:.0%} in iteration(s) {listed}: those outputs have lost "
            "most of the arguments their seeds had (see the Frame elements page)",
        )
    misplaced = [
        r
        for r in per_iteration
        if r.get("verbatim_agreement") is not None and r["verbatim_agreement"] < min_verbatim_agreement
    ]
    if misplaced:
        listed = ", ".join(
            f"{r['iteration']} ({r['verbatim_agreement']:.0%} of {r['verbatim_fes']:,})" for r in misplaced
        )
        warn(
            warnings,
            "degraded",
            f"frame elements placed off their own words: of the FEs whose words an output repeats verbatim, under "
            f"{min_verbatim_agreement:.0%} sit on those words in iteration(s) {listed}; retention counts FEs placed "
            "anywhere, so it overstates what the outputs carry (an aligner trained with copied phrases, "
            "aligner.train.bitext_phrases with phrase_keep_identical, places them; frame_elements."
            "min_verbatim_agreement sets the bar)",
        )
    return warnings


@dataclass
class FrameElementReport:
    """What the page shows (``page``: the template's context), and its summary for the warnings and
    landing pages."""

    per_iteration: list[dict[str, Any]]
    by_name: list[dict[str, Any]]
    summary: dict[str, Any]
    page: dict[str, Any]


#: How each mode carries an FE, in the page's introduction.
HOW = {"align": "the span aligner places each FE", "keep": "each FE is found where its words occur verbatim"}

#: The legend's example sentence.
LEGEND = (
    ["Abby", "bought", "a", "car"],
    [
        {"name": "Buyer", "start": 0, "end": 0, "null_type": None},
        {"name": "Goods", "start": 2, "end": 3, "null_type": None},
    ],
    (1, 1),
)


def build(
    augmented: Path | str,
    seeds: Path | str,
    fe: FrameElementSettings,
    n_chains: int,
    seed: int = 0,
    max_rows: int = 200,
) -> FrameElementReport:
    """The page's tables, summary and template context (without the page's title and links)."""
    table = artifacts.read_table(augmented, artifacts.AUGMENTED)
    seed_table = artifacts.read_table(seeds, artifacts.SENTENCES)
    seed_counts = fe_retention.seed_fe_counts(seed_table)
    carried = fe_retention.carries_fes(table)
    verbatim = fe_retention.verbatim_agreement(table, seed_table) if carried else None
    per_iteration = fe_retention.per_iteration(table, verbatim) if carried else []
    names = fe_retention.by_name(table) if carried else []
    summary: dict[str, Any] = {
        "mode": fe.mode,
        "select": fe.select,
        "require": fe.require,
        "seeds": seed_counts["seeds"],
        "seeds_with_fes": seed_counts["seeds_with_fes"],
        "seed_overt_fes": seed_counts["overt_fes"],
        "seed_null_instantiated_fes": seed_counts["null_instantiated_fes"],
        "outputs_carry_fes": carried,
        "per_iteration": per_iteration,
        "warnings": fe_warnings(fe.mode, seed_counts, per_iteration, fe.min_verbatim_agreement),
    }
    page: dict[str, Any] = {
        "fe": fe,
        "seeds": seed_counts,
        "carried": bool(carried and seed_counts["overt_fes"]),
    }
    if not page["carried"]:
        return FrameElementReport(per_iteration, names, summary, page)
    chains, drawn_from, _ = sample_chains(
        augmented, seeds, n_chains, seed, extra_columns=("frame_elements",), eligible=_has_overt
    )
    tokens, legend_fes, legend_trigger = LEGEND
    page |= {
        "how": HOW.get(fe.mode, ""),
        "warnings": summary["warnings"],
        "iteration_rows": [{ITERATION_LABELS[k]: r[k] for k in ITERATION_COLUMNS} for r in per_iteration],
        "figure": figure(per_iteration, fe_retention.score_histogram(table)),
        "name_rows": [_name_row(r) for r in names],
        "max_rows": max_rows,
        "chains": [chain_view(c) for c in chains],
        "drawn_from": drawn_from,
        "seed": seed,
        "legend": segments(tokens, legend_fes, legend_trigger, colours([f["name"] for f in legend_fes])),
    }
    return FrameElementReport(per_iteration, names, summary, page)


def _name_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A per-name row with the page's headers (``retention_iter2`` as "iteration 2")."""
    labels = {"name": "FE name", "fes_to_carry": "FEs to carry", "mean_score": "mean score"}
    return {labels.get(k, k.replace("retention_iter", "iteration ")): v for k, v in row.items()}


def _has_overt(seed_row: Mapping[str, Any]) -> bool:
    return any(has_span(fe) for fe in seed_row.get("frame_elements") or ())


@dataclass
class FrameElementOutputs:
    """Where the page and its files go."""

    html: Path | str
    csv: Path | str
    names_csv: Path | str
    json: Path | str


def write_report(report: FrameElementReport, out: FrameElementOutputs, demo: bool = False) -> None:
    """The page (with its CSVs as downloads), the two CSVs and the JSON summary."""
    files.write_csv(report.per_iteration, out.csv, fields=ITERATION_COLUMNS)
    name_fields = list(report.by_name[0]) if report.by_name else ["name", "coreness", "fes_to_carry"]
    files.write_csv(report.by_name, out.names_csv, fields=name_fields)
    files.write_json(report.summary, out.json)
    raw_files = [out.csv, out.names_csv] if report.per_iteration else []
    page = html.render("frame_elements.html", title="Frame elements", demo=demo, raw_files=raw_files, **report.page)
    html.write_page(page, out.html)
