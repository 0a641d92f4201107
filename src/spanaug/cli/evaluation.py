"""``spanaug stats`` and ``spanaug filter``: intrinsic statistics and the filters of the augmented dataset."""

from __future__ import annotations

import logging

from spanaug.cli.options import command
from spanaug.core.evaluation_settings import FilteringSection, StatsConfig
from spanaug.core.settings import setting, settings

log = logging.getLogger(__name__)


@settings
class StatsFiles:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out_json: str = setting(help="the statistics (JSON)")
    out_csv: str = setting(help="outputs and scores per iteration (CSV)")
    out_plot: str | None = setting(None, "outputs per iteration (PNG)")
    out_dist_plot: str | None = setting(None, "span length and position-difference histograms (PNG)")


@command("stats", help="intrinsic statistics of the augmented dataset")
def stats(files: StatsFiles, stats: StatsConfig) -> None:
    from spanaug.evaluation.statistics import write_stats

    write_stats(files.augmented, files.seeds, files.out_json, files.out_csv, files.out_plot, stats, files.out_dist_plot)


@settings
class FilterFiles:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out_dir: str = setting(help="subsets, the scored dataset and the filters table")
    judgments: str | None = setting(None, "CSV/Parquet of output_id, score (0/1 or 0-100) for the neural filter")


@command("filter", help="heuristic filters (Table 4) and the neural P/R-classifiers")
def filter_outputs(files: FilterFiles, filtering: FilteringSection) -> None:
    from spanaug.evaluation.filtering import filter_stage

    rows = filter_stage(files.augmented, files.seeds, files.out_dir, filtering.filters, files.judgments, filtering)
    for row in rows:
        log.info("%-40s %6d outputs (x%.2f)", row["filter"], row["outputs"], row["multiple_over_seeds"] or 0)
