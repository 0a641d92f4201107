"""The landing summary: the run described in words that fit it (demo or real) and its headline numbers.

Written twice: as a report page of its own (``summary.html``) and as an HTML fragment that the
report's landing page (``workflow/report/workflow.rst``) embeds, so the numbers are the first
thing a reader sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from spanaug.core import files
from spanaug.core.model_size import describe_count, parameter_count
from spanaug.core.modeldir import TRAINING_SUMMARY
from spanaug.core.provenance import ModelOrigin, model_origin, paraphraser_training, toy_models
from spanaug.core.settings import setting, settings
from spanaug.downstream.curve_checks import label
from spanaug.pipeline.paraphraser import gguf_names
from spanaug.report import html
from spanaug.report.tables import read_csv, read_json, toy_descriptions


def toy_models_banner(toys: Sequence[ModelOrigin]) -> str:
    """Says which of the run's models are toys, as their own records tell (spanaug.core.provenance)."""
    return html.macro("toy_models_banner", "summary_sections.html")(toy_descriptions(toys))


def paraphraser_identity(path: str | None) -> dict[str, Any] | None:
    """The paraphraser the summary names: its folder, file or hub name, its parameter count (read from
    its weights' headers, not its weights), how its records say it was trained, and why it is a toy
    when it is one (None: no paraphraser named)."""
    if not path:
        return None
    n = parameter_count(gguf_names.file_at_hand(path) or path)
    origin = model_origin("paraphraser", path)
    return {
        "name": path,
        "parameters": n,
        "size": describe_count(n) if n else None,
        "training": paraphraser_training(path),
        "toy": origin.toy if origin else None,
    }


def dataset_pairs(stats: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The augmented dataset's headline numbers as (label, value); the table leaves out missing ones."""
    pairs = [
        ("seeds", stats.get("seeds")),
        ("outputs", stats.get("outputs")),
        ("aligned outputs", stats.get("aligned_outputs")),
        ("multiple over the seeds", stats.get("multiple_over_seeds")),
        (
            "unique (frame, trigger) pairs (seeds: {})".format(stats.get("seed_unique_frame_trigger_pairs")),
            stats.get("unique_frame_trigger_pairs"),
        ),
        ("unique (frame, lemma) pairs", stats.get("unique_frame_lemma_pairs")),
        ("BLEU to the seed", stats.get("bleu_to_seed")),
        ("self-BLEU within chains (lower: more diverse)", stats.get("self_bleu_within_chain")),
    ]
    rec = stats.get("lexicon_recovery")
    if rec:
        pairs += [
            ("new LUs found: precision (from scratch, §6.1)", rec.get("precision")),
            ("new LUs found: recall", rec.get("recall")),
        ]
    meaning = stats.get("meaning")
    if meaning:
        overall, encoder, threshold = meaning["overall"], meaning["encoder"], meaning["threshold"]
        pairs += [
            (
                f"meaning kept: share of aligned outputs at cosine ≥ {threshold} to their source ({encoder})",
                overall.get("share_meaning_kept"),
            ),
            (f"mean cosine to the source ({encoder})", overall.get("mean_cosine_to_source")),
            (f"mean cosine to the seed ({encoder}; lower: the chains drift)", overall.get("mean_cosine_to_seed")),
        ]
    pos = stats.get("pos_diversity") or {}
    if "not_ext" in pos:
        pairs.append((f"POS changed (¬EXT, {pos.get('pos_tagger')} tagger)", pos.get("not_ext")))
    return pairs


def iteration_rows(
    per_iteration: Sequence[Mapping[str, Any]], paraphrase: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Per iteration: outputs and scores, with the decoding statistics when the run has them (and its columns)."""
    decode = {r["iteration"]: r for r in paraphrase}
    rows = []
    for r in per_iteration:
        d = decode.get(r["iteration"], {})
        rows.append(
            {
                "iteration": r["iteration"],
                "requests": d.get("requests"),
                "outputs": r["outputs"],
                "aligned": r["aligned"],
                "no output": d.get("requests_without_output"),
                "dropped (constraint)": d.get("violations_dropped"),
                "mean paraphrase score": r["mean_paraphrase_score"],
                "mean aligner score": r["mean_aligner_score"],
                **{label: r[key] for key, label in _OPTIONAL_ITERATION_COLUMNS.items() if r.get(key) is not None},
            }
        )
    columns = [
        "iteration",
        "requests",
        "outputs",
        "aligned",
        "no output",
        "dropped (constraint)",
        "mean paraphrase score",
        "mean aligner score",
    ]
    if not paraphrase:
        columns = [c for c in columns if c not in ("requests", "no output", "dropped (constraint)")]
    columns += [label for label in _OPTIONAL_ITERATION_COLUMNS.values() if any(label in row for row in rows)]
    return rows, columns


#: Per-iteration columns the statistics write when the run measures them (CSV key -> the summary's label).
_OPTIONAL_ITERATION_COLUMNS = {
    "seeds_with_aligned_share": "seeds with an aligned output",
    "lu_precision": "new LUs: precision so far",
    "lu_recall": "new LUs: recall so far",
    "share_meaning_kept": "meaning kept",
    "mean_cosine_to_source": "mean cosine to source",
}


def filter_rows(filters: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "filter": r["filter"],
            "outputs": r["outputs"],
            "× seeds": r.get("multiple_over_seeds"),
            **({"precision": r["precision"], "recall": r["recall"]} if "precision" in r else {}),
        }
        for r in filters.get("table", [])
    ]


def trained_aligner(model_dir: Path | str | None) -> dict[str, Any] | None:
    """The run's aligner as its directory describes it: kind, encoder, where its threshold comes from,
    and (trained in the run) its held-out scores and corpora from ``training_summary.json``."""
    if not model_dir or not (Path(model_dir) / "config.json").is_file():
        return None
    config = read_json(Path(model_dir) / "config.json")
    summary_path = Path(model_dir) / TRAINING_SUMMARY
    summary = read_json(summary_path) if summary_path.is_file() else {}
    # The paper kind records its threshold's held-out scores as dev_metrics, the cross kind as heldout_metrics.
    heldout = summary.get("heldout_metrics") or summary.get("dev_metrics") or {}
    calibration = summary.get("calibration") or {}
    return {
        "kind": config.get("kind", "paper"),  # directories saved before kinds existed are the paper's
        "encoder": config.get("encoder"),
        "threshold_source": config.get("threshold_source"),
        "soft_f1": heldout.get("soft_f1"),
        "exact_f1": heldout.get("exact_f1"),
        "n": heldout.get("n"),
        "ece": calibration.get("heldout_ece_after"),
        "null_share": _null_shares(heldout),
        "corpora": [c["file"] for c in summary.get("corpora", []) if c.get("part") == "train"],
    }


def _null_shares(metrics: Mapping[str, Any]) -> str | None:
    """'predicted/gold' null share of held-out metrics that record them (the cross kind's threshold)."""
    pred, gold = metrics.get("pred_null_share"), metrics.get("gold_null_share")
    return None if pred is None or gold is None else f"{pred:.1%}/{gold:.1%}"


def aligner_rows(
    ablation: Mapping[str, Any] | None,
    comparison: Mapping[str, Any] | None,
    trained: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The run's own aligner (whatever its kind, scored on the pairs its threshold was tuned on) beside
    the baselines; the Table 2 and Tables 1-2 rows say that they train a paper-kind aligner of their own."""
    rows = []
    if trained:
        rows.append(
            {
                "system": f"this run's aligner ({trained['kind']} kind)",
                "held out": trained.get("threshold_source") or "-",
                "soft F1": trained.get("soft_f1"),
                "exact F1": trained.get("exact_f1"),
                "ECE": trained.get("ece"),
                "null predicted/gold": trained.get("null_share"),
                "test": trained.get("n"),
            }
        )
    if ablation:
        table = ablation.get("table", [])
        keep = [r for r in table if r["system"].startswith("cosine") or "SBCE" in r["system"]]
        rows += [
            {
                "system": r["system"] if r["system"].startswith("cosine") else f"{r['system']} (paper kind)",
                "held out": "Table 2 test split",
                "soft F1": r["soft_f1"],
                "exact F1": r["exact_f1"],
                "ECE": None,
                "test": r["n"],
            }
            for r in keep
        ]
    if comparison:
        for r in comparison.get("table", []):
            if r.get("system"):
                paper = r["system"].startswith("span aligner")
                rows.append(
                    {
                        "system": "span aligner (paper kind)" if paper else r["system"],
                        "held out": "Tables 1-2 test split",
                        "soft F1": r.get("soft_f1"),
                        "exact F1": r.get("exact_f1"),
                        "ECE": None,
                        "test": r.get("n"),
                    }
                )
    return rows


def aligner_section(
    ablation: Mapping[str, Any] | None,
    comparison: Mapping[str, Any] | None,
    trained: Mapping[str, Any] | None = None,
) -> str:
    """The aligner's table with a note on what the run's aligner was trained on (nothing without rows)."""
    return html.macro("aligner_section", "summary_sections.html")(aligner_rows(ablation, comparison, trained), trained)


def human_pairs(human: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    if not human:
        return []
    return [
        ("outputs accepted", human.get("output_acceptance")),
        ("gold in-frame controls accepted", human.get("gold_in_frame_acceptance")),
        ("gold out-of-frame controls accepted", human.get("gold_out_of_frame_acceptance")),
        ("Fleiss' kappa", human.get("fleiss_kappa")),
    ]


def frameid_rows(curves: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The Frame ID curves at their largest training fraction (as a percentage), one row per augmenter."""
    if not curves:
        return "", []
    top = max(float(r["fraction"]) for r in curves)
    rows = [
        {
            "augmenter": label(r["augmenter"]),
            "F1 (mean)": r["f1_mean"],
            "s.d.": r["f1_std"],
            "seeds": r["seeds"],
            "augmented examples": int(float(r["augmented_examples"])),
            "note": r.get("note") or "",
        }
        for r in curves
        if float(r["fraction"]) == top
    ]
    if not any(r["note"] for r in rows):
        rows = [{k: v for k, v in r.items() if k != "note"} for r in rows]
    return f"{top:.0%}", rows


def frame_element_rows(fe: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """FE retention per iteration (the Frame elements page's summary)."""
    return [
        {
            "iteration": r["iteration"],
            "seed FEs to carry": r["fes_to_carry"],
            "carried": r["carried"],
            "lost": r["lost"],
            "retention": r["retention"],
            "outputs keeping every FE": r["outputs_keeping_every_fe"],
            **({"verbatim agreement": r["verbatim_agreement"]} if r.get("verbatim_agreement") is not None else {}),
        }
        for r in (fe or {}).get("per_iteration", [])
    ]


@settings
class SummaryInputs:
    """The result files the summary reads (the optional ones only where their stage ran)."""

    stats: str = setting(help="the intrinsic statistics (JSON)")
    per_iteration: str = setting(help="outputs per iteration (CSV)")
    filters: str = setting(help="the filters summary (JSON)")
    paraphrase: str | None = setting(None, "the decoding statistics per iteration (CSV)")
    ablation: str | None = setting(None, "the aligner's Table 2 summary (JSON)")
    comparison: str | None = setting(None, "the word-aligner comparison (JSON)")
    aligner: str | None = setting(None, "the run's aligner directory (its kind and held-out scores)")
    paraphraser: str | None = setting(None, "the run's paraphraser (its records say whether it is a toy)")
    human_eval: str | None = setting(None, "the human-evaluation summary (JSON)")
    curves: str | None = setting(None, "the Frame ID curves (CSV)")
    frameid_baseline: str | None = setting(None, "the Frame ID lexicon baseline (JSON)")
    frame_elements: str | None = setting(None, "the Frame elements page's summary (JSON)")


def summary_body(
    run: Mapping[str, Any],
    results: SummaryInputs,
    warnings: Sequence[Mapping[str, Any]],
    engines: Sequence[Mapping[str, Any]] = (),
) -> tuple[str, dict[str, Any]]:
    """The summary's HTML (without page chrome) and its numbers as JSON; ``engines``: what decoded
    and aligned the run's shards (``report.warnings.engines``)."""
    stats_data = read_json(results.stats)
    _, iter_rows = read_csv(results.per_iteration)
    para_rows = read_csv(results.paraphrase)[1] if results.paraphrase else []
    filters_data = read_json(results.filters)
    ablation_data = read_json(results.ablation) if results.ablation else None
    comparison_data = read_json(results.comparison) if results.comparison else None
    human_data = read_json(results.human_eval) if results.human_eval else None
    curve_rows = read_csv(results.curves)[1] if results.curves else []
    baseline = read_json(results.frameid_baseline) if results.frameid_baseline else None
    fe_data = read_json(results.frame_elements) if results.frame_elements else None
    iterations, iteration_columns = iteration_rows(iter_rows, para_rows)
    frameid_top, frameid = frameid_rows(curve_rows)
    trained = trained_aligner(results.aligner)
    # The run's own model folder when there is one, else the name the config gives (a hub name, a .gguf file).
    paraphraser = paraphraser_identity(results.paraphraser or run.get("paraphraser_model"))
    body = html.render(
        "summary_body.html",
        run=run,
        paraphraser=paraphraser,
        engines=[e["text"] for e in engines],
        toys=toy_descriptions(toy_models(results.paraphraser, results.aligner)),
        warnings=warnings,
        stages=sorted({r["stage"] for r in warnings}),
        dataset=dataset_pairs(stats_data),
        iterations=iterations,
        iteration_columns=iteration_columns,
        frame_elements=fe_data,
        frame_element_rows=frame_element_rows(fe_data),
        filters=filter_rows(filters_data),
        aligner=aligner_rows(ablation_data, comparison_data, trained),
        trained=trained,
        human=human_pairs(human_data),
        simulated=bool(run.get("simulated_judgments")),
        frameid_top=frameid_top,
        frameid=frameid,
        frameid_baseline=baseline,
    )
    numbers = {
        "run": dict(run),
        **({"paraphraser": paraphraser} if paraphraser else {}),
        "warnings": len(warnings),
        "engines": [dict(e) for e in engines],
        "dataset": {k: v for k, v in stats_data.items() if not isinstance(v, (dict, list))},
        "per_iteration": iter_rows,
        "paraphrase": para_rows,
        "filters": filters_data.get("table", []),
        **({"frame_elements": {k: v for k, v in fe_data.items() if k != "warnings"}} if fe_data else {}),
    }
    return body, numbers


def write_summary(
    body: str, numbers: dict[str, Any], out_html: Path | str, out_fragment: Path | str, out_json: Path | str
) -> None:
    html.write_page(html.render("summary.html", title="Summary", body=Markup(body)), out_html)
    html.write_page(html.render("summary_fragment.html", body=Markup(body)), out_fragment)
    files.write_json(numbers, out_json)
