"""``spanaug report ...``: the HTML report's pages (tables, example chains, warnings, the summary)."""

from __future__ import annotations

import logging
from typing import Any

from spanaug.cli.options import command, group
from spanaug.core.config import FrameElementSettings, ReportSettings
from spanaug.core.settings import inherit, setting, settings
from spanaug.report.summary import SummaryInputs

log = logging.getLogger(__name__)
group("report", "pages of the HTML report: tables, example chains, frame elements, warnings, summary")


@settings
class TablesOptions:
    inputs: list[str] = setting(help="CSV or JSON results")
    outputs: list[str] = setting(help="one HTML page per input, in the same order")
    titles: list[str] = setting(factory=list, help="page titles, one per input (default: the file names)")
    max_rows: int = inherit(ReportSettings, "max_rows")
    paraphraser: str | None = setting(
        None, "the paraphraser the results derive from: a page says so when its records make it a toy"
    )
    aligner: str | None = setting(None, "the aligner the results derive from (as --paraphraser)")


@command("report", "tables", help="render CSV/JSON results as HTML tables (the raw file a download on the page)")
def tables(options: TablesOptions) -> None:
    from spanaug.core.provenance import toy_models
    from spanaug.report.tables import render_tables

    toys = toy_models(options.paraphraser, options.aligner)
    render_tables(options.inputs, options.outputs, options.max_rows, options.titles, toys)


@settings
class ChainsOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out: str = setting(help="the example-chains page (HTML)")
    chains: int = inherit(ReportSettings, "chains")
    seed: int = inherit(ReportSettings, "seed")
    demo: bool = setting(False, "say that the run is the demo (tiny models)")


@command("report", "chains", help="example chains: sampled seeds with every iteration's aligned paraphrase")
def chains(options: ChainsOptions) -> None:
    from spanaug.report.chains import chains_page
    from spanaug.report.html import write_page

    write_page(chains_page(options.augmented, options.seeds, options.chains, options.seed, options.demo), options.out)


@settings
class FrameElementsOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out_html: str = setting(help="the Frame elements page (HTML)")
    out_csv: str = setting(help="FE counts and retention per iteration (CSV)")
    out_names_csv: str = setting(help="FE counts and retention per FE name (CSV)")
    out_json: str = setting(help="the page's numbers and warnings (JSON), for the warnings and summary pages")
    chains: int = inherit(ReportSettings, "chains")
    seed: int = inherit(ReportSettings, "seed")
    max_rows: int = inherit(ReportSettings, "max_rows")
    demo: bool = setting(False, "say that the run is the demo (tiny models)")


@command(
    "report",
    "frame-elements",
    help="frame elements: retention per iteration and per FE, FE scores, example chains with every FE marked",
)
def frame_elements(options: FrameElementsOptions, fe: FrameElementSettings) -> None:
    from spanaug.report import frame_elements as page

    report = page.build(options.augmented, options.seeds, fe, options.chains, options.seed, options.max_rows)
    outputs = page.FrameElementOutputs(options.out_html, options.out_csv, options.out_names_csv, options.out_json)
    page.write_report(report, outputs, options.demo)
    log.info(
        "frame elements (mode %s): %d iteration(s), %d FE name(s)",
        fe.mode,
        len(report.per_iteration),
        len(report.by_name),
    )


@settings
class WarningsOptions:
    out_json: str = setting(help="every warning (JSON)")
    out_html: str = setting(help="the warnings page")
    summaries: list[str] = setting(factory=list, help="stage summaries (JSON) whose 'warnings' lists are collected")
    paraphrase_stats: list[str] = setting(
        factory=list, help="the paraphrase stage's shard statistics (iter<N>/shard<J>.paraphrase_stats.json)"
    )
    select_stats: list[str] = setting(
        factory=list,
        help="the selection stage's shard statistics (iter<N>/shard<J>.select_stats.json): chains require ended",
    )
    align_stats: list[str] = setting(
        factory=list,
        help="the align stage's shard statistics (iter<N>/shard<J>.align_stats.json): the aligners' engines",
    )
    width: int | None = setting(None, "candidates decoded per request (beam size or samples)", minimum=1)
    out_paraphrase_csv: str | None = setting(None, "the decoding statistics per iteration (CSV)")
    out_paraphrase_html: str | None = setting(None, "the same as a report page")
    aligner: str | None = setting(None, "the pipeline's aligner directory (its null threshold is checked)")
    per_iteration: str | None = setting(None, "outputs per iteration (CSV of spanaug stats)")
    curves: str | None = setting(None, "the Frame ID curves (CSV)")
    argid_curves: str | None = setting(None, "the argument ID curves (CSV)")
    comparison: str | None = setting(None, "the word-aligner comparison (JSON): the span aligner below a word aligner")
    simulated_judgments: str | None = setting(None, "the human-evaluation summary, when its judgments are simulated")
    base: str | None = setting(None, "the run's folder: sources are shown relative to it")
    demo: bool = setting(False, "say that the run is the demo (tiny models)")
    max_rows: int = inherit(ReportSettings, "max_rows")


@command("report", "warnings", help="every stage that yielded nothing or ran degraded, on one page")
def warnings_page(options: WarningsOptions) -> None:
    from spanaug.core.files import write_csv
    from spanaug.report import warnings as w
    from spanaug.report.html import write_page
    from spanaug.report.tables import table_page

    records, para_rows, engines = w.collect(
        options.summaries,
        options.paraphrase_stats,
        options.width,
        options.aligner,
        options.per_iteration,
        options.curves,
        options.simulated_judgments,
        options.base,
        options.comparison,
        options.select_stats,
        options.argid_curves,
        options.align_stats,
    )
    w.write_warnings(records, options.out_json, options.out_html, options.demo, engines)
    if options.out_paraphrase_csv:
        write_csv(para_rows, options.out_paraphrase_csv, fields=w.PARAPHRASE_COLUMNS)
        if options.out_paraphrase_html:
            write_page(
                table_page(options.out_paraphrase_csv, options.max_rows, "Paraphrase stage per iteration"),
                options.out_paraphrase_html,
            )
    for r in records:
        log.warning("%s [%s]: %s", r["stage"], r["kind"], r["message"])
    for e in engines:
        log.info("engine: %s", e["text"])
    log.info("%d warning(s)", len(records))


@settings
class SummaryOptions(SummaryInputs):
    run: dict[str, Any] = setting(
        help="what ran (JSON): run_name, inputs, paraphraser, encoder, iterations, n_shards, demo, simulated_judgments"
    )
    warnings: str = setting(help="the run's warnings (JSON of spanaug report warnings)")
    out_html: str = setting(help="the summary page")
    out_fragment: str = setting(help="the same as a fragment for the report's landing page")
    out_json: str = setting(help="the headline numbers (JSON)")


@command("report", "summary", help="the landing summary: what ran, in fitting words, and its headline numbers")
def summary(options: SummaryOptions) -> None:
    from spanaug.report import warnings as w
    from spanaug.report.summary import summary_body, write_summary

    body, numbers = summary_body(options.run, options, w.load(options.warnings), w.load_engines(options.warnings))
    write_summary(body, numbers, options.out_html, options.out_fragment, options.out_json)
