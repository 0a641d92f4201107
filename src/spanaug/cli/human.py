"""``spanaug human ...``: the human-evaluation loop (§6.2)."""

from __future__ import annotations

import logging

from spanaug.cli.options import command, emit, group
from spanaug.core.evaluation_settings import HumanEvalSettings
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)
group("human", "the human-evaluation loop")


@settings
class ExportOptions:
    augmented: str = setting(help="the augmented dataset")
    sentences: str = setting(help="the imported corpus: gold controls and examples")
    out_task: str = setting(help="the task CSV for the crowd tool")
    out_key: str = setting(help="which candidate is which (CSV)")
    framenet: str | None = setting(None, "FrameNet release directory for frame definitions")
    n_items: int = inherit(HumanEvalSettings, "n_items")
    seed: int = inherit(HumanEvalSettings, "seed")
    summary: str | None = setting(None, "counts and warnings (JSON), for the report's warnings page")


@command("human", "export", help="an annotation task CSV and its key")
def export(options: ExportOptions) -> None:
    from spanaug.evaluation.human_eval import export_task

    definitions = None
    if options.framenet:
        from spanaug.pipeline.framenet import framenet_definitions

        definitions = framenet_definitions(options.framenet)
    counts = export_task(
        options.augmented,
        options.sentences,
        options.out_task,
        options.out_key,
        options.n_items,
        options.seed,
        definitions,
    )
    if options.summary:
        from spanaug.core.files import write_json

        write_json(counts, options.summary)
    log.info("annotation task: %(items)d items (%(skipped_without_controls)d outputs had no gold controls)", counts)


@settings
class SimulateOptions:
    key: str = setting(help="the task key")
    out: str = setting(help="simulated crowd results (CSV)")
    raters: int = inherit(HumanEvalSettings, "raters")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "simulate", help="simulated crowd results for a task key (demo and tests only)")
def simulate(options: SimulateOptions) -> None:
    from spanaug.evaluation.human_eval import simulate_judgments

    n = simulate_judgments(options.key, options.out, options.raters, options.seed)
    log.warning("wrote %d SIMULATED judgment rows to %s (no person judged these)", n, options.out)


@settings
class ImportOptions:
    results: str = setting(help="crowd results: item_id, worker_id, candidate_N_score")
    key: str = setting(help="the task key")
    out_dir: str = setting(help="agreement, acceptance, the histogram and judgments.csv")


@command("human", "import", help="acceptance, agreement and judgments for the neural filter")
def import_results(options: ImportOptions) -> None:
    from spanaug.evaluation.human_eval import import_judgments

    emit(import_judgments(options.results, options.key, options.out_dir), None)


group("span-task", "the span-alignment annotation task (§4.1): export, simulated answers, import")


@settings
class SpanExportOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds (the sources of iteration 1)")
    out_task: str = setting(help="the task CSV for the crowd tool")
    out_key: str = setting(help="output ids and the pipeline aligner's answers (CSV, not for annotators)")
    span_items: int = inherit(HumanEvalSettings, "span_items")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "span-task", "export", help="outputs for annotators to mark the trigger's counterpart span in")
def span_export(options: SpanExportOptions) -> None:
    from spanaug.evaluation.span_task import export_span_task

    counts = export_span_task(
        options.augmented, options.seeds, options.out_task, options.out_key, options.span_items, options.seed
    )
    log.info("span-alignment task: %(items)d items of %(outputs)d outputs", counts)


@settings
class SpanSimulateOptions:
    task: str = setting(help="the span task CSV")
    key: str = setting(help="the span task key")
    out: str = setting(help="simulated answers (CSV)")
    raters: int = inherit(HumanEvalSettings, "raters")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "span-task", "simulate", help="simulated span answers (demo and tests only)")
def span_simulate(options: SpanSimulateOptions) -> None:
    from spanaug.evaluation.span_task import simulate_span_answers

    n = simulate_span_answers(options.task, options.key, options.out, options.raters, options.seed)
    log.warning("wrote %d SIMULATED span answers to %s (no person marked these spans)", n, options.out)


@settings
class SpanImportOptions:
    results: str = setting(
        help="answers CSV: item_id, worker_id, target_start, target_end (both empty: no "
        "counterpart; inclusive 0-based paraphrase token indices)"
    )
    task: str = setting(help="the span task CSV")
    key: str = setting(help="the span task key")
    out: str = setting(help="span-alignment JSONL of the majority answers (for aligner.train.extra_instances)")
    out_summary: str = setting(help="agreement and the aligner against the majority (JSON)")


@command("human", "span-task", "import", help="agreement and span-alignment JSONL from annotators' answers")
def span_import(options: SpanImportOptions) -> None:
    from spanaug.evaluation.span_task import import_span_answers

    summary = import_span_answers(options.results, options.task, options.key, options.out, options.out_summary)
    log.info(
        "%d instances from %d answered items; Krippendorff's alpha (tokens) %s, pairwise exact agreement %s",
        summary["instances"],
        summary["items_answered"],
        summary["krippendorff_alpha_tokens"],
        summary["pairwise_exact_agreement"],
    )
