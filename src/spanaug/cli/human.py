"""``spanaug human ...``: the human-evaluation loop (§6.2)."""

from __future__ import annotations

import logging

from spanaug.cli.options import command, emit, group
from spanaug.core.evaluation_settings import HumanEvalSettings
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)
group("human", "the human-evaluation loop")


@settings
class ExportFiles:
    augmented: str = setting(help="the augmented dataset")
    sentences: str = setting(help="the imported corpus: gold controls and examples")
    out_task: str = setting(help="the task CSV for the crowd tool")
    out_key: str = setting(help="which candidate is which (CSV)")
    framenet: str | None = setting(None, "FrameNet release directory for frame definitions")
    n_items: int = inherit(HumanEvalSettings, "n_items")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "export", help="an annotation task CSV and its key")
def export(files: ExportFiles) -> None:
    from spanaug.evaluation.human_eval import export_task

    definitions = None
    if files.framenet:
        from spanaug.pipeline.framenet import framenet_definitions

        definitions = framenet_definitions(files.framenet)
    counts = export_task(
        files.augmented, files.sentences, files.out_task, files.out_key, files.n_items, files.seed, definitions
    )
    log.info("annotation task: %(items)d items (%(skipped_without_controls)d outputs had no gold controls)", counts)


@settings
class SimulateFiles:
    key: str = setting(help="the task key")
    out: str = setting(help="simulated crowd results (CSV)")
    raters: int = inherit(HumanEvalSettings, "raters")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "simulate", help="simulated crowd results for a task key (demo and tests only)")
def simulate(files: SimulateFiles) -> None:
    from spanaug.evaluation.human_eval import simulate_judgments

    n = simulate_judgments(files.key, files.out, files.raters, files.seed)
    log.warning("wrote %d SIMULATED judgment rows to %s (no person judged these)", n, files.out)


@settings
class ImportFiles:
    results: str = setting(help="crowd results: item_id, worker_id, candidate_N_score")
    key: str = setting(help="the task key")
    out_dir: str = setting(help="agreement, acceptance, the histogram and judgments.csv")


@command("human", "import", help="acceptance, agreement and judgments for the neural filter")
def import_results(files: ImportFiles) -> None:
    from spanaug.evaluation.human_eval import import_judgments

    emit(import_judgments(files.results, files.key, files.out_dir), None)


group("span-task", "the span-alignment annotation task (§4.1): export, simulated answers, import")


@settings
class SpanExportFiles:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds (the sources of iteration 1)")
    out_task: str = setting(help="the task CSV for the crowd tool")
    out_key: str = setting(help="output ids and the pipeline aligner's answers (CSV, not for annotators)")
    span_items: int = inherit(HumanEvalSettings, "span_items")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "span-task", "export", help="outputs for annotators to mark the trigger's counterpart span in")
def span_export(files: SpanExportFiles) -> None:
    from spanaug.evaluation.span_task import export_span_task

    counts = export_span_task(files.augmented, files.seeds, files.out_task, files.out_key, files.span_items, files.seed)
    log.info("span-alignment task: %(items)d items of %(outputs)d outputs", counts)


@settings
class SpanSimulateFiles:
    task: str = setting(help="the span task CSV")
    key: str = setting(help="the span task key")
    out: str = setting(help="simulated answers (CSV)")
    raters: int = inherit(HumanEvalSettings, "raters")
    seed: int = inherit(HumanEvalSettings, "seed")


@command("human", "span-task", "simulate", help="simulated span answers (demo and tests only)")
def span_simulate(files: SpanSimulateFiles) -> None:
    from spanaug.evaluation.span_task import simulate_span_answers

    n = simulate_span_answers(files.task, files.key, files.out, files.raters, files.seed)
    log.warning("wrote %d SIMULATED span answers to %s (no person marked these spans)", n, files.out)


@settings
class SpanImportFiles:
    results: str = setting(
        help="answers CSV: item_id, worker_id, target_start, target_end (both empty: no "
        "counterpart; inclusive 0-based paraphrase token indices)"
    )
    task: str = setting(help="the span task CSV")
    key: str = setting(help="the span task key")
    out: str = setting(help="span-alignment JSONL of the majority answers (for aligner.train.extra_instances)")
    out_summary: str = setting(help="agreement and the aligner against the majority (JSON)")


@command("human", "span-task", "import", help="agreement and span-alignment JSONL from annotators' answers")
def span_import(files: SpanImportFiles) -> None:
    from spanaug.evaluation.span_task import import_span_answers

    summary = import_span_answers(files.results, files.task, files.key, files.out, files.out_summary)
    log.info(
        "%d instances from %d answered items; Krippendorff's alpha (tokens) %s, pairwise exact agreement %s",
        summary["instances"],
        summary["items_answered"],
        summary["krippendorff_alpha_tokens"],
        summary["pairwise_exact_agreement"],
    )
