"""Frame-element retention: what the outputs of a run did with their seeds' frame elements.

An output's ``frame_elements`` list holds every FE of its seed, in the seed's order
(:mod:`spanaug.pipeline.frame_elements`): an FE the seed had overt is either *carried* (a span
in the output, with the carrying's score) or *lost* (``null_type`` LOST, and lost in every later
iteration); a null instantiation stays one. So an output's carried + lost FEs are its seed's overt
FEs, and the **retention** of a set of outputs is carried / (carried + lost): the share of their
seeds' overt FEs still in them. An output whose trigger was not aligned has lost every FE.

Coreness is counted in three classes: ``core`` (Core, Core-Unexpressed), ``non-core``
(Peripheral, Extra-Thematic) and ``unknown`` (an input that does not say: CoNLL, JSONL), which
``frame_elements.require: core`` protects as core.

Every measure is computed on Arrow columns (one row per FE item, no Python row objects), so it
scales to FrameNet; the dataset card, the intrinsic statistics, the filters and the report's
Frame elements page share them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core.validation import LOST
from spanaug.pipeline import frame_elements as placements

#: What became of a seed's FE in an output.
STATUSES = ("carried", "lost", "null_instantiated")

#: Coreness classes, each FE's ``coreness`` mapped by :func:`coreness_classes`.
CORENESS_CLASSES = ("core", "non-core", "unknown")

#: The per-iteration column of each coreness class's retention.
CLASS_COLUMNS = {"core": "core_retention", "non-core": "non_core_retention", "unknown": "unknown_coreness_retention"}

_CORE = pa.array(["Core", "Core-Unexpressed"])


def coreness_classes(coreness: Any) -> Any:
    """Per FE: ``core``, ``non-core`` or ``unknown`` (null coreness)."""
    return pc.if_else(
        pc.is_null(coreness),
        "unknown",
        pc.if_else(pc.is_in(coreness, value_set=_CORE), "core", "non-core"),
    )


def fe_items(table: pa.Table) -> pa.Table:
    """One row per FE of every output of ``table`` (a CHAIN or AUGMENTED table): ``output`` (the
    output's row number), ``iteration``, ``name``, ``status`` (:data:`STATUSES`), ``coreness_class``
    (:data:`CORENESS_CLASSES`) and ``score`` (null unless carried). Outputs whose list is null
    (FEs off, or none annotated) have no rows."""
    lists = table.column("frame_elements").combine_chunks()
    items = lists.flatten()
    parents = pc.cast(pc.list_parent_indices(lists), pa.int64())
    name, _start, _end, null_type, coreness, score = items.flatten()
    status = pc.if_else(
        pc.is_null(null_type), "carried", pc.if_else(pc.equal(null_type, LOST), "lost", "null_instantiated")
    )
    carried = pc.equal(status, "carried")
    return pa.table(
        {
            "output": parents,
            "iteration": pc.take(table.column("iteration"), parents),
            "name": name,
            "status": status,
            "coreness_class": coreness_classes(coreness),
            "score": pc.if_else(carried, pc.cast(score, pa.float64()), pa.scalar(None, pa.float64())),
        }
    )


def output_counts(table: pa.Table, items: pa.Table | None = None) -> dict[str, np.ndarray]:
    """Per output of ``table``: how many of its FEs are carried, lost and null-instantiated."""
    items = fe_items(table) if items is None else items
    parents = items.column("output").to_numpy()
    status = items.column("status")
    return {
        s: np.bincount(
            parents, weights=pc.equal(status, s).to_numpy(zero_copy_only=False), minlength=table.num_rows
        ).astype(np.int64)
        for s in STATUSES
    }


def lowest_fe_scores(table: pa.Table) -> pa.Array:
    """Per output: its lowest carried FE score, a lost FE counting 0 (as
    :func:`spanaug.pipeline.frame_elements.lowest_score`); null for an output with no FE to carry
    (none annotated, only null instantiations, or FEs off)."""
    items = fe_items(table)
    status = items.column("status")
    # A carried FE without a score (a seed's, iteration 0) counts 1.0, as carried_scores has it.
    value = pc.if_else(pc.equal(status, "lost"), 0.0, pc.fill_null(items.column("score"), 1.0))
    scored = pa.table({"output": items.column("output"), "value": value}).filter(
        pc.not_equal(status, "null_instantiated")
    )
    lowest = scored.group_by("output").aggregate([("value", "min")])
    out = np.full(table.num_rows, np.nan)
    out[lowest.column("output").to_numpy()] = lowest.column("value_min").to_numpy()
    return pa.array(out, pa.float64(), from_pandas=True)  # NaN -> null


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _status_counts(items: pa.Table, keys: list[str]) -> dict[tuple[Any, ...], dict[str, int]]:
    """Item counts per status, for each value of ``keys``."""
    grouped = items.group_by([*keys, "status"]).aggregate([("output", "count")]).to_pylist()
    out: dict[tuple[Any, ...], dict[str, int]] = {}
    for row in grouped:
        out.setdefault(tuple(row[k] for k in keys), dict.fromkeys(STATUSES, 0))[row["status"]] = row["output_count"]
    return out


def _mean_scores(items: pa.Table, keys: list[str]) -> dict[tuple[Any, ...], float | None]:
    """The mean score of the carried FEs, for each value of ``keys``."""
    grouped = items.group_by(keys).aggregate([("score", "mean")]).to_pylist()
    return {tuple(row[k] for k in keys): row["score_mean"] for row in grouped}


def per_iteration(table: pa.Table, verbatim: dict[int, tuple[int, int]] | None = None) -> list[dict[str, Any]]:
    """Per iteration of ``table``'s outputs: the outputs, those with seed FEs to carry, the FEs
    carried, lost and null-instantiated, the retention (all, and per coreness class), the outputs
    keeping every FE, the mean score of the carried FEs (lost ones are counted, not scored 0), and
    with ``verbatim`` (:func:`verbatim_agreement`) the FEs an output repeats verbatim and the share
    of them placed on their words."""
    items = fe_items(table)
    counts = output_counts(table, items)
    iterations = table.column("iteration").to_numpy()
    by_status = _status_counts(items, ["iteration"])
    by_class = _status_counts(items, ["iteration", "coreness_class"])
    means = _mean_scores(items, ["iteration"])
    to_carry = counts["carried"] + counts["lost"]
    rows = []
    for it in sorted({int(i) for i in iterations}):
        mine = iterations == it
        n = by_status.get((it,), dict.fromkeys(STATUSES, 0))
        row: dict[str, Any] = {
            "iteration": it,
            "outputs": int(mine.sum()),
            "outputs_with_fes": int((to_carry[mine] > 0).sum()),
            "fes_to_carry": n["carried"] + n["lost"],
            "carried": n["carried"],
            "lost": n["lost"],
            "null_instantiated": n["null_instantiated"],
            "retention": _share(n["carried"], n["carried"] + n["lost"]),
        }
        for cls in CORENESS_CLASSES:
            c = by_class.get((it, cls), dict.fromkeys(STATUSES, 0))
            row[CLASS_COLUMNS[cls]] = _share(c["carried"], c["carried"] + c["lost"])
        row["outputs_keeping_every_fe"] = int(((counts["carried"] > 0) & (counts["lost"] == 0) & mine).sum())
        row["mean_fe_score"] = means.get((it,))
        repeated, agreed = (verbatim or {}).get(it, (0, 0))
        row["verbatim_fes"] = repeated if verbatim is not None else None
        row["verbatim_agreement"] = _share(agreed, repeated)
        rows.append(row)
    return rows


def verbatim_agreement(table: pa.Table, seeds: pa.Table) -> dict[int, tuple[int, int]]:
    """Per iteration: the FEs whose words an output repeats verbatim (once), and those it placed on
    them (:func:`spanaug.pipeline.frame_elements.verbatim_agreement`). An output's source is its
    chain's previous output (the seed, in iteration 1), found by seed and iteration; an output whose
    source had no aligned trigger has no source FEs to check."""
    columns = ["seed_id", "iteration", "paraphrase_tokens", "aligned_start", "aligned_end", "frame_elements"]
    rows = table.select(columns).to_pylist()
    sources: dict[tuple[str, int], tuple[list[str], Any, tuple[int, int] | None]] = {
        (s["sentence_id"], 0): (s["tokens"], s["frame_elements"], (s["span_start"], s["span_end"]))
        for s in seeds.select(["sentence_id", "tokens", "span_start", "span_end", "frame_elements"]).to_pylist()
    }
    for r in rows:
        trigger = (r["aligned_start"], r["aligned_end"]) if r["aligned_start"] is not None else None
        sources[r["seed_id"], r["iteration"]] = (r["paraphrase_tokens"], r["frame_elements"], trigger)
    out: dict[int, tuple[int, int]] = {}
    for r in rows:
        tokens, fes, trigger = sources.get((r["seed_id"], r["iteration"] - 1), ([], None, None))
        if not fes or trigger is None:
            continue
        verbatim, agreed = placements.verbatim_agreement(
            tokens, fes, trigger, r["paraphrase_tokens"], r["frame_elements"]
        )
        total = out.get(r["iteration"], (0, 0))
        out[r["iteration"]] = (total[0] + verbatim, total[1] + agreed)
    return out


def by_name(table: pa.Table) -> list[dict[str, Any]]:
    """Per FE name (over every frame it occurs in), most FEs to carry first: its coreness class(es),
    the FEs to carry, carried and lost over all iterations, the retention overall and per iteration
    (``retention_iter<i>``), and the mean score of the carried ones."""
    items = fe_items(table).filter(pc.not_equal(pc.field("status"), "null_instantiated"))
    totals = _status_counts(items, ["name"])
    per_it = _status_counts(items, ["name", "iteration"])
    means = _mean_scores(items, ["name"])
    classes: dict[str, set[str]] = {}
    for name, cls in zip(items.column("name").to_pylist(), items.column("coreness_class").to_pylist()):
        classes.setdefault(name, set()).add(cls)
    iterations = sorted({int(i) for i in items.column("iteration").to_pylist()})
    rows = []
    for (name,), n in totals.items():
        row: dict[str, Any] = {
            "name": name,
            "coreness": "/".join(sorted(classes[name])),
            "fes_to_carry": n["carried"] + n["lost"],
            "carried": n["carried"],
            "lost": n["lost"],
            "retention": _share(n["carried"], n["carried"] + n["lost"]),
        }
        for it in iterations:
            c = per_it.get((name, it), dict.fromkeys(STATUSES, 0))
            row[f"retention_iter{it}"] = _share(c["carried"], c["carried"] + c["lost"])
        row["mean_score"] = means.get((name,))
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["fes_to_carry"], r["name"]))


def score_histogram(table: pa.Table, bins: int = 10) -> list[dict[str, Any]]:
    """The carried FEs' scores in ``bins`` equal bins of [0, 1] (the last one closed), per iteration:
    rows of ``iteration``, ``low``, ``high`` and ``fes``."""
    items = fe_items(table).filter(pc.equal(pc.field("status"), "carried")).drop_null()
    scores = items.column("score").to_numpy()
    index = np.minimum((scores * bins).astype(np.int64), bins - 1)
    iterations = items.column("iteration").to_numpy()
    rows = []
    for it in sorted({int(i) for i in iterations}):
        counts = np.bincount(index[iterations == it], minlength=bins)
        rows += [{"iteration": it, "low": b / bins, "high": (b + 1) / bins, "fes": int(counts[b])} for b in range(bins)]
    return rows


def seed_fe_counts(seeds: pa.Table) -> dict[str, int]:
    """The seeds' FE annotations (a SENTENCES table): seeds, seeds with an overt FE, overt FEs and
    null instantiations."""
    renamed = seeds.select(["frame_elements"]).append_column("iteration", pa.array(np.zeros(seeds.num_rows, np.int32)))
    items = fe_items(renamed)
    counts = output_counts(renamed, items)
    return {
        "seeds": seeds.num_rows,
        "seeds_with_fes": int((counts["carried"] > 0).sum()),
        "overt_fes": int(counts["carried"].sum()),
        "null_instantiated_fes": int(counts["null_instantiated"].sum()),
    }


def carries_fes(table: pa.Table) -> bool:
    """Whether any output of ``table`` has an FE list (FEs were carried: mode align or keep)."""
    return table.column("frame_elements").null_count < table.num_rows
