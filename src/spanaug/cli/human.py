"""``spanaug human ...``: the human-evaluation loop (§6.2)."""

from __future__ import annotations

import logging

from spanaug.cli.options import command, emit, group
from spanaug.core.config import HumanEvalSettings, inherit, setting, settings

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
    counts = export_task(files.augmented, files.sentences, files.out_task, files.out_key, files.n_items, files.seed,
                         definitions)
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
