"""The landing summary: the run described in words that fit it (demo or real) and its headline numbers.

Written twice: as a report page of its own (``summary.html``) and as an HTML fragment that the
report's landing page (``workflow/report/workflow.rst``) embeds, so the numbers are the first
thing a reader sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files
from spanaug.core.provenance import ModelOrigin, toy_models
from spanaug.core.settings import setting, settings
from spanaug.report import html
from spanaug.report.tables import read_csv, read_json

#: The fragment sits in Snakemake's own page: its rules are scoped to it. Snakemake's prose style wraps
#: <code> in backticks, and the landing page (workflow.rst) says what ran in its own words, so the
#: fragment hides the run's paragraph that the summary page shows.
FRAGMENT_STYLE = """
.spanaug-summary table { border-collapse: collapse; margin: .3em 0 .8em; font-size: 13px; }
.spanaug-summary th, .spanaug-summary td { border: 1px solid #d5dbe1; padding: .15em .5em; text-align: left; }
.spanaug-summary td.num { text-align: right; white-space: nowrap; }
.spanaug-summary .banner { padding: .5em .8em; border-radius: 4px; margin: .5em 0; }
.spanaug-summary .banner.demo { background: #fff4ce; border: 1px solid #e0c060; }
.spanaug-summary .banner.warn { background: #fde8e8; border: 1px solid #e0a0a0; }
.spanaug-summary .banner.ok { background: #e6f4ea; border: 1px solid #9ccfa8; }
.spanaug-summary code::before, .spanaug-summary code::after { content: none; }
.spanaug-summary p.run { display: none; }
"""


def run_description(run: Mapping[str, Any]) -> str:
    """What ran, in words that fit the run: the demo's caveat, or the real run's data and models."""
    inputs = ", ".join(f"<code>{html.esc(p)}</code>" for p in run.get("inputs", []))
    para = run.get("paraphraser") or "?"
    what = (
        f'<p class="run">Run <strong>{html.esc(run.get("run_name", "?"))}</strong>: '
        f"the corpus {inputs} expanded by iterative "
        f"paraphrastic augmentation (Culkin et al., TACL 2021) over {run.get('iterations', '?')} iterations in "
        f"{run.get('n_shards', '?')} shards; paraphraser {html.esc(para)}, span aligner on the encoder "
        f"<code>{html.esc(run.get('encoder', '?'))}</code>.</p>"
    )
    if run.get("demo"):
        what += (
            '<div class="banner demo"><strong>Demo run.</strong> The bundled demo corpus, a paraphraser trained '
            "for a minute on 76 sentence pairs and an aligner trained on the same bitext: the outputs and every "
            "number below show the pipeline's mechanics, not paraphrase quality.</div>"
        )
    if run.get("simulated_judgments"):
        what += (
            '<div class="banner demo">The human-evaluation judgments are <strong>simulated</strong>: no person '
            "judged these outputs.</div>"
        )
    return what


def toy_models_banner(toys: Sequence[ModelOrigin]) -> str:
    """Says which of the run's models are toys, as their own records tell (spanaug.core.provenance)."""
    if not toys:
        return ""
    said = "; ".join(html.esc(origin.describe()).replace("`", "") for origin in toys)
    return (
        f'<div class="banner demo"><strong>Toy models.</strong> By their own training records, {said}: the '
        "outputs and every number below show the pipeline's mechanics, not paraphrase quality.</div>"
    )


def _rows(pairs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"": label, "value": value} for label, value in pairs if value is not None]


def _kv_table(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = _rows(pairs)
    return "".join(
        [
            "<table><tbody>",
            *(f"<tr><th>{html.esc(r[''])}</th>{html.cell(r['value'])}</tr>" for r in rows),
            "</tbody></table>",
        ]
    )


def dataset_section(stats: Mapping[str, Any]) -> str:
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
    pos = stats.get("pos_diversity") or {}
    if "not_ext" in pos:
        pairs.append((f"POS changed (¬EXT, {pos.get('pos_tagger')} tagger)", pos.get("not_ext")))
    return "<h2>The augmented dataset</h2>" + _kv_table(pairs)


def iteration_section(per_iteration: Sequence[Mapping[str, Any]], paraphrase: Sequence[Mapping[str, Any]]) -> str:
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
    return "<h2>Per iteration</h2>" + html.table(rows, columns)


def filters_section(filters: Mapping[str, Any]) -> str:
    rows = [
        {
            "filter": r["filter"],
            "outputs": r["outputs"],
            "× seeds": r.get("multiple_over_seeds"),
            **({"precision": r["precision"], "recall": r["recall"]} if "precision" in r else {}),
        }
        for r in filters.get("table", [])
    ]
    return "<h2>Filters (Table 4)</h2>" + html.table(rows)


def trained_aligner(model_dir: Path | str | None) -> dict[str, Any] | None:
    """The run's aligner as its directory describes it: kind, encoder, where its threshold comes from,
    and (trained in the run) its held-out scores and corpora from ``training_summary.json``."""
    if not model_dir or not (Path(model_dir) / "config.json").is_file():
        return None
    config = read_json(Path(model_dir) / "config.json")
    summary_path = Path(model_dir) / "training_summary.json"
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


def aligner_section(
    ablation: Mapping[str, Any] | None,
    comparison: Mapping[str, Any] | None,
    trained: Mapping[str, Any] | None = None,
) -> str:
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
    if not rows:
        return ""
    note = ""
    if trained:
        corpora = ", ".join(trained["corpora"]) or "-"
        note = (
            f'<p class="note">This run aligns every output with a {html.esc(trained["kind"])}-kind aligner on '
            f"{html.esc(trained.get('encoder') or '?')}, trained on {html.esc(corpora)}; its scores are on the "
            "held-out pairs that tuned it. The other rows train aligners of their own on other splits.</p>"
        )
    return "<h2>Span aligner (held-out)</h2>" + html.table(rows) + note


def human_section(human: Mapping[str, Any] | None, simulated: bool) -> str:
    if not human:
        return ""
    label = " (SIMULATED judgments)" if simulated else ""
    pairs = [
        ("outputs accepted", human.get("output_acceptance")),
        ("gold in-frame controls accepted", human.get("gold_in_frame_acceptance")),
        ("gold out-of-frame controls accepted", human.get("gold_out_of_frame_acceptance")),
        ("Fleiss' kappa", human.get("fleiss_kappa")),
    ]
    return f"<h2>Human evaluation{html.esc(label)}</h2>" + _kv_table(pairs)


def frameid_section(curves: Sequence[Mapping[str, Any]], baseline: Mapping[str, Any] | None) -> str:
    if not curves:
        return ""
    top = max(float(r["fraction"]) for r in curves)
    rows = [
        {
            "augmenter": r["augmenter"],
            "F1 (mean)": r["f1_mean"],
            "s.d.": r["f1_std"],
            "seeds": r["seeds"],
            "augmented examples": int(float(r["augmented_examples"])),
        }
        for r in curves
        if float(r["fraction"]) == top
    ]
    text = f"<h2>Frame ID at {top:.0%} of the training sentences (Figure 8)</h2>" + html.table(rows)
    if baseline:
        text += f'<p class="note">Lexicon lookup baseline: F1 {html.fmt(baseline.get("f1"))}.</p>'
    return text


def frame_elements_section(fe: Mapping[str, Any] | None) -> str:
    """FE retention per iteration (the Frame elements page's summary), or that FEs are off."""
    if not fe:
        return ""
    held = f"the seeds hold {fe.get('seed_overt_fes', 0):,} overt frame elements"
    if not fe.get("outputs_carry_fes"):
        state = "off" if fe.get("mode") == "off" else f"mode {fe.get('mode')}, but no output carries any"
        return (
            f"<h2>Frame elements</h2><p>Frame elements: <strong>{html.esc(state)}</strong> "
            f"(<code>frame_elements.mode: {html.esc(fe.get('mode'))}</code>); {held}, and the outputs carry none. "
            "See the Frame elements page.</p>"
        )
    rows = [
        {
            "iteration": r["iteration"],
            "seed FEs to carry": r["fes_to_carry"],
            "carried": r["carried"],
            "lost": r["lost"],
            "retention": r["retention"],
            "outputs keeping every FE": r["outputs_keeping_every_fe"],
        }
        for r in fe.get("per_iteration", [])
    ]
    return (
        f"<h2>Frame elements</h2><p>Mode <code>{html.esc(fe.get('mode'))}</code> (select "
        f"<code>{html.esc(fe.get('select'))}</code>, require <code>{html.esc(fe.get('require'))}</code>): {held}; "
        "retention is the share of them that an iteration's outputs still carry (see the Frame elements page).</p>"
        + html.table(rows)
    )


def warnings_banner(records: Sequence[Mapping[str, Any]]) -> str:
    if not records:
        return '<div class="banner ok">No stage reported an empty or degraded result.</div>'
    empty = sum(r["kind"] == "empty" for r in records)
    stages = sorted({r["stage"] for r in records})
    return (
        f'<div class="banner warn"><strong>{len(records)} warning(s)</strong> ({empty} stage results are empty) '
        f"in: {html.esc(', '.join(stages))}. See the Warnings page.</div>"
    )


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
    run: Mapping[str, Any], results: SummaryInputs, warnings: Sequence[Mapping[str, Any]]
) -> tuple[str, dict[str, Any]]:
    """The summary's HTML (without page chrome) and its numbers as JSON."""
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
    body = "".join(
        [
            run_description(run),
            toy_models_banner(toy_models(results.paraphraser, results.aligner)),
            warnings_banner(warnings),
            dataset_section(stats_data),
            iteration_section(iter_rows, para_rows),
            frame_elements_section(fe_data),
            filters_section(filters_data),
            aligner_section(ablation_data, comparison_data, trained_aligner(results.aligner)),
            human_section(human_data, bool(run.get("simulated_judgments"))),
            frameid_section(curve_rows, baseline),
        ]
    )
    numbers = {
        "run": dict(run),
        "warnings": len(warnings),
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
    html.write_page(html.page("Summary", body), out_html)
    fragment = f'<div class="spanaug-summary"><style>{FRAGMENT_STYLE}</style>{body}</div>\n'
    with files.atomic_path(out_fragment, ".html") as tmp:
        tmp.write_text(fragment, encoding="utf-8")
    files.write_json(numbers, out_json)
