"""The warnings page: every stage that yielded nothing or ran degraded, and why, on one page.

Two sources. Stages that write a JSON summary record their own warnings in it (a ``warnings``
list, see :mod:`spanaug.core.degraded`): filters passing no output, augmenters with no examples,
a chain graph with no instances, a skipped POS tagger, a trained aligner below the cosine
baseline. The rest is checked here, from artifacts that have no summary of their own: the
paraphrase stage's per-shard statistics (and the paraphrase and align shards' engines: a shard
whose CUDA graphs were lost), the aligner's null threshold, the Frame ID and argument ID curves
(points equal to the baseline's, or from a model that predicts nothing), and whether the human
judgments were simulated.

The warnings JSON also holds the run's engines (:func:`engines`): what decoded and aligned the
shards, per backend, device and dtype, which the summary page shows.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files, modeldir
from spanaug.core.engine import EngineRecord
from spanaug.core.errors import InputError
from spanaug.downstream.curve_checks import BASELINE, label, same_as_baseline
from spanaug.report import html
from spanaug.report.tables import read_csv, read_json

#: Stage names for the summaries that record warnings, by the end of their path.
STAGES = {
    "data/import_stats.json": "import",
    "report/stats.json": "intrinsic statistics",
    "filtering/filters.json": "filters (Table 4)",
    "augmenters/paraphrastic.json": "augmenter: paraphrastic",
    "augmenters/lexsub.json": "augmenter: lexsub",
    "augmenters/geca.json": "augmenter: GECA",
    "augmenters/graph.json": "chain graph (aligner self-training data)",
    "table2/summary.json": "span aligner: Table 2 ablations",
    "selftrain/summary.json": "span aligner: self-training round",
    "aligner_eval/comparison.json": "word aligners (Tables 1-2)",
    "human_eval/span_agreement.json": "span-alignment task",
    "human_eval/task_summary.json": "annotation task (human export)",
    "release/export_conll.json": "release: CoNLL export",
    "report/frame_elements.json": "frame elements",
}

#: Above this share of decoded candidates dropped for breaking a constraint, the paraphraser is
#: mostly fighting its constraints: say so.
VIOLATION_SHARE = 0.5


def stage_of(path: Path | str) -> str:
    text = Path(path).as_posix()
    return next((name for end, name in STAGES.items() if text.endswith(end)), Path(path).name)


def record(stage: str, kind: str, message: str, source: Path | str | None) -> dict[str, Any]:
    return {"stage": stage, "kind": kind, "message": message, "source": None if source is None else str(source)}


def from_summaries(paths: Iterable[Path | str]) -> list[dict[str, Any]]:
    """The ``warnings`` lists recorded by the stages in their JSON summaries."""
    out = []
    for path in paths:
        data = read_json(path)
        for w in (data.get("warnings") or []) if isinstance(data, dict) else []:
            out.append(record(stage_of(path), w.get("kind", "degraded"), w.get("message", ""), path))
    return out


# ---------------------------------------------------------------- the paraphrase stage


_ITERATION = re.compile(r"iter(\d+)$")

PARAPHRASE_COLUMNS = [
    "iteration",
    "shards",
    "requests",
    "outputs",
    "outputs_per_request",
    "requests_without_output",
    "without_output_share",
    "violations_dropped",
    "violation_share_of_candidates",
    "duplicates_dropped",
]


def paraphrase_rows(paths: Sequence[Path | str], width: int | None = None) -> list[dict[str, Any]]:
    """The per-shard decoding statistics (``iter{i}/shard{j}.paraphrase_stats.json``) summed per iteration.

    ``width`` is the number of candidates decoded per request (the beam size, or the samples);
    with it, the share of candidates dropped for breaking a constraint is given too.
    """
    keys = ("requests", "outputs", "violations_dropped", "duplicates_dropped", "requests_without_output")
    rows = _summed_per_iteration(paths, keys)
    for row in rows:
        req = row["requests"]
        row["outputs_per_request"] = row["outputs"] / req if req else None
        row["without_output_share"] = row["requests_without_output"] / req if req else None
        row["violation_share_of_candidates"] = row["violations_dropped"] / (req * width) if req and width else None
    return rows


def _summed_per_iteration(paths: Sequence[Path | str], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Per-shard statistics (``iter{i}/shard{j}.*_stats.json``): ``keys`` summed per iteration, with
    the number of shards."""
    sums: dict[int, dict[str, Any]] = {}
    for path in paths:
        match = _ITERATION.search(Path(path).parent.name)
        if not match:
            raise InputError(path, None, "expected a shard's statistics under a folder named iter<N>")
        stats = read_json(path)
        it = int(match.group(1))
        row = sums.setdefault(it, {"iteration": it, "shards": 0, **dict.fromkeys(keys, 0)})
        row["shards"] += 1
        for key in keys:
            row[key] += int(stats.get(key, 0))
    return [sums[i] for i in sorted(sums)]


def select_rows(paths: Sequence[Path | str]) -> list[dict[str, Any]]:
    """The selection stage's shard statistics (``iter{i}/shard{j}.select_stats.json``) summed per
    iteration: requests, outputs, and chains ended because no beam kept what
    ``frame_elements.require`` asks for."""
    return _summed_per_iteration(paths, ("requests", "outputs", "ended_by_require"))


def require_warnings(rows: Sequence[Mapping[str, Any]], source: Path | str | None = None) -> list[dict[str, Any]]:
    """Chains ``frame_elements.require`` ended, per iteration: retention counts only the outputs kept,
    so a run can read 100% retention while most chains ended here."""
    out = []
    for row in rows:
        ended, req = row["ended_by_require"], row["requests"]
        if ended:
            out.append(
                record(
                    "select",
                    "empty" if ended == req else "degraded",
                    f"iteration {row['iteration']}: frame_elements.require ended {ended:,} of {req:,} chains "
                    f"({ended / req:.0%}): none of their beams kept the frame elements it requires, and retention "
                    "counts only the outputs kept",
                    source,
                )
            )
    return out


def paraphrase_warnings(rows: Sequence[Mapping[str, Any]], source: Path | str | None = None) -> list[dict[str, Any]]:
    out = []
    stage = "paraphrase"
    for row in rows:
        it, req = row["iteration"], row["requests"]
        if not req:
            out.append(record(stage, "empty", f"iteration {it}: no requests (every chain ended before it)", source))
            continue
        if row["requests_without_output"]:
            out.append(
                record(
                    stage,
                    "empty" if row["requests_without_output"] == req else "degraded",
                    f"iteration {it}: {row['requests_without_output']:,} of {req:,} requests "
                    f"({row['without_output_share']:.0%}) got no output, so their chains end here",
                    source,
                )
            )
        share = row.get("violation_share_of_candidates")
        if share is not None and share >= VIOLATION_SHARE:
            out.append(
                record(
                    stage,
                    "degraded",
                    f"iteration {it}: {share:.0%} of the decoded candidates broke a constraint and were dropped",
                    source,
                )
            )
    return out


# ---------------------------------------------------------------- what decoded and aligned the shards

_SHARD = re.compile(r"shard([^.]+)\.")


def shard_engines(paths: Sequence[Path | str], stage: str) -> list[dict[str, Any]]:
    """Each shard's engine record (:mod:`spanaug.core.engine`), read from its statistics
    (``iter{i}/shard{j}.{paraphrase,align}_stats.json``); shards written before the record existed
    are left out."""
    out = []
    for path in paths:
        record = EngineRecord.read(read_json(path), path)
        if record is None:
            continue
        match, shard = _ITERATION.search(Path(path).parent.name), _SHARD.match(Path(path).name)
        out.append(
            {
                "stage": stage,
                "iteration": int(match.group(1)) if match else None,
                "shard": shard.group(1) if shard else Path(path).name,
                "engine": record,
                "source": str(path),
            }
        )
    return out


def engine_warnings(shards: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A shard whose CUDA graphs were lost (captures failed; its batches decoded without graphs)."""
    out = []
    for shard in shards:
        engine: EngineRecord = shard["engine"]
        if engine.decode_path == "fallback":
            out.append(
                record(
                    shard["stage"],
                    "degraded",
                    f"iteration {shard['iteration']}, shard {shard['shard']}: CUDA graphs lost, "
                    f"{engine.cuda_graph_fallbacks:,} capture(s) failed and their batches decoded without "
                    f"graphs (slower): {engine.describe()}",
                    shard["source"],
                )
            )
    return out


def engines(shards: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The run's engines per stage, backend, device and dtype: shards, decode paths and the CUDA
    graphs' counts summed, and a line for the summary (``paraphrase: static on NVIDIA H100 80GB
    HBM3, bfloat16, graphs in 40 shards (1,234 captures, 0 fallbacks)``)."""
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for shard in shards:
        e: EngineRecord = shard["engine"]
        key = (shard["stage"], e.backend, e.device, e.dtype)
        row = groups.setdefault(
            key,
            {
                "stage": key[0],
                "backend": e.backend,
                "device": e.device,
                "dtype": e.dtype,
                "shards": 0,
                "paths": {},
                "cuda_graph_captures": 0,
                "cuda_graph_fallbacks": 0,
            },
        )
        row["shards"] += 1
        row["paths"][e.decode_path] = row["paths"].get(e.decode_path, 0) + 1
        row["cuda_graph_captures"] += e.cuda_graph_captures
        row["cuda_graph_fallbacks"] += e.cuda_graph_fallbacks
    for row in groups.values():
        paths = ", ".join(f"{path} in {n} of {row['shards']} shards" for path, n in sorted(row["paths"].items()))
        if len(row["paths"]) == 1:
            paths = f"{next(iter(row['paths']))} in {row['shards']} shard(s)"
        graphs = row["cuda_graph_captures"] or row["cuda_graph_fallbacks"] or "eager" not in row["paths"]
        counts = (
            f" ({row['cuda_graph_captures']:,} captures, {row['cuda_graph_fallbacks']:,} fallbacks)" if graphs else ""
        )
        row["text"] = f"{row['stage']}: {row['backend']} on {row['device']}, {row['dtype']}, {paths}{counts}"
    return list(groups.values())


# ---------------------------------------------------------------- the aligner, Frame ID, judgments


def aligner_warnings(model_dir: Path | str, outputs_per_iteration: Path | str | None = None) -> list[dict[str, Any]]:
    """An aligner whose null threshold was never tuned (no dev data, no hold-out) never predicts 'no
    counterpart'. A threshold tuned to 0 on held-out pairs is a measured choice, not a degradation."""
    path = Path(model_dir) / modeldir.CONFIG_FILE
    if not path.is_file():
        return []
    saved = read_json(path)
    # Models saved before threshold_source existed: an untuned threshold was 0.
    if saved.get("threshold_source", "untuned" if not saved.get("threshold") else "") != "untuned":
        return []
    detail = ""
    if outputs_per_iteration:
        _, rows = read_csv(outputs_per_iteration)
        n, aligned = sum(r["outputs"] for r in rows), sum(r["aligned"] for r in rows)
        detail = f" ({aligned:,} of {n:,} outputs aligned)"
    return [
        record(
            "span aligner",
            "degraded",
            "the aligner's null threshold is 0, not tuned (no aligner.train.dev "
            "and aligner.train.threshold_holdout 0): it never predicts 'no counterpart', "
            "so every output counts as aligned" + detail,
            path,
        )
    ]


def comparison_warnings(comparison_json: Path | str) -> list[dict[str, Any]]:
    """The span aligner below a word aligner on the same held-out instances (the paper's Tables 1-2
    have it above both)."""
    rows = read_json(comparison_json).get("table", [])
    ours = next((r for r in rows if r["system"].startswith("span aligner")), None)
    if not ours or ours.get("soft_f1") is None:
        return []
    return [
        record(
            "word aligners (Tables 1-2)",
            "degraded",
            f"the comparison's span aligner (paper kind, trained for Tables 1-2) has held-out soft F1 "
            f"{ours['soft_f1']:.3f}, below {r['system']}'s {r['soft_f1']:.3f}",
            comparison_json,
        )
        for r in rows
        if r is not ours and r.get("soft_f1") is not None and r["soft_f1"] > ours["soft_f1"]
    ]


#: The warnings page's stage name of each experiment's curves.
FRAMEID_CURVES = "Frame ID (Figure 8)"
ARGID_CURVES = "argument ID"


def curve_warnings(curves_csv: Path | str, stage: str = FRAMEID_CURVES) -> list[dict[str, Any]]:
    """Augmenters that added no examples to a point, curves equal to the baseline's, and points whose
    model predicted nothing on the test set (read from the curves' prediction counts, not from F1 0)."""
    _, rows = read_csv(curves_csv)
    base = label(BASELINE)
    out = []
    for row in rows:
        if row["augmenter"] != BASELINE and not row.get("augmented_examples"):
            out.append(
                record(
                    stage,
                    "empty",
                    f"{row['augmenter']} at {row['fraction']:.0%} of the "
                    f"training sentences: 0 augmented examples, so the point is the {base} model",
                    curves_csv,
                )
            )
    out += silent_point_warnings(rows, stage, curves_csv)
    for augmenter, no_examples in same_as_baseline(rows).items():
        why = "it added no examples" if no_examples else "its examples left F1 unchanged"
        out.append(
            record(
                stage,
                "empty",
                f"the {augmenter} curve equals the {base} curve at every fraction "
                f"({why}); the figure draws it dashed over the {base} curve",
                curves_csv,
            )
        )
    return out


def silent_point_warnings(
    rows: Sequence[Mapping[str, Any]], stage: str, source: Path | str | None = None
) -> list[dict[str, Any]]:
    """Curve points where a seed's model predicted nothing: F1 0 there is no figure of the augmenter
    (empty when every seed's model is silent, degraded when some are)."""
    out = []
    for row in rows:
        silent, seeds = row.get("seeds_predicting_nothing"), row.get("seeds") or 0
        if not silent:
            continue
        out.append(
            record(
                stage,
                "empty" if silent >= seeds else "degraded",
                f"{label(row['augmenter'])} at {row['fraction']:.0%} of the training sentences: "
                f"{silent} of {seeds} seeds' models predicted nothing on the test set (0 predictions), "
                f"so the point's F1 of {row['f1_mean']:.3f} measures no model; the figure marks it with a red cross",
                source,
            )
        )
    return out


def judgment_warnings(human_eval_json: Path | str) -> list[dict[str, Any]]:
    return [
        record(
            "human evaluation",
            "degraded",
            "the judgments are SIMULATED (human_eval.simulate): acceptance "
            "rates, agreement and the neural filter trained on them show the loop's mechanics, not human "
            "opinion",
            human_eval_json,
        )
    ]


# ---------------------------------------------------------------- the page


def relative(records: list[dict[str, Any]], base: Path | str | None) -> list[dict[str, Any]]:
    """Sources shown relative to the run's folder."""
    if base is None:
        return records
    for r in records:
        if r["source"]:
            with contextlib.suppress(ValueError):  # a source outside the run's folder keeps its path
                r["source"] = Path(r["source"]).resolve().relative_to(Path(base).resolve()).as_posix()
    return records


def warnings_page(records: Sequence[Mapping[str, Any]], demo: bool = False) -> str:
    counts = {k: sum(r["kind"] == k for r in records) for k in ("empty", "degraded")}
    return html.render("warnings.html", title="Warnings", records=records, counts=counts, demo=demo)


def collect(
    summaries: Sequence[Path | str] = (),
    paraphrase_stats: Sequence[Path | str] = (),
    width: int | None = None,
    aligner: Path | str | None = None,
    per_iteration: Path | str | None = None,
    curves: Path | str | None = None,
    simulated_judgments: Path | str | None = None,
    base: Path | str | None = None,
    comparison: Path | str | None = None,
    select_stats: Sequence[Path | str] = (),
    argid_curves: Path | str | None = None,
    align_stats: Sequence[Path | str] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Every warning of the run, the per-iteration paraphrase statistics they were read from, and
    the run's engines (:func:`engines`)."""
    records = from_summaries(summaries)
    para_rows = paraphrase_rows(paraphrase_stats, width) if paraphrase_stats else []
    records += paraphrase_warnings(para_rows, Path(paraphrase_stats[0]).parent.parent if paraphrase_stats else None)
    shards = shard_engines(paraphrase_stats, "paraphrase") + shard_engines(align_stats, "align")
    records += engine_warnings(shards)
    if select_stats:
        records += require_warnings(select_rows(select_stats), Path(select_stats[0]).parent.parent)
    if aligner:
        records += aligner_warnings(aligner, per_iteration)
    if comparison:
        records += comparison_warnings(comparison)
    if curves:
        records += curve_warnings(curves)
    if argid_curves:
        records += curve_warnings(argid_curves, ARGID_CURVES)
    if simulated_judgments:
        records += judgment_warnings(simulated_judgments)
    return relative(records, base), para_rows, engines(shards)


def write_warnings(
    records: list[dict[str, Any]],
    out_json: Path | str,
    out_html: Path | str,
    demo: bool = False,
    run_engines: Sequence[Mapping[str, Any]] = (),
) -> None:
    files.write_json({"warnings": records, "engines": list(run_engines)}, out_json)
    html.write_page(warnings_page(records, demo), out_html)


def load(path: Path | str) -> list[dict[str, Any]]:
    """The records of a warnings JSON written by :func:`write_warnings`."""
    return _warnings_file(path)["warnings"]


def load_engines(path: Path | str) -> list[dict[str, Any]]:
    """The run's engines (:func:`engines`) a warnings JSON holds (none in one written before them)."""
    found = _warnings_file(path).get("engines") or []
    if not isinstance(found, list) or not all(isinstance(e, dict) and isinstance(e.get("text"), str) for e in found):
        raise InputError(path, None, "not a warnings file (its 'engines' is not a list of engine summaries)")
    return found


def _warnings_file(path: Path | str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data["warnings"], list):
            raise TypeError("'warnings' is not a list")
        return data
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(path, None, f"not a warnings file ({exc})") from None
