"""``spanaug filter``: the heuristic filters and the neural P/R-classifiers of the augmented dataset."""

from __future__ import annotations

import logging

from spanaug.cli.options import command
from spanaug.core.evaluation_settings import FilteringSection
from spanaug.core.settings import setting, settings

log = logging.getLogger(__name__)


@settings
class FilterOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out_dir: str = setting(help="subsets, the scored dataset and the filters table")
    judgments: str | None = setting(None, "CSV/Parquet of output_id, score (0/1 or 0-100) for the neural filter")


@command("filter", help="heuristic filters (Table 4) and the neural P/R-classifiers")
def filter_outputs(options: FilterOptions, filtering: FilteringSection) -> None:
    from spanaug.evaluation.filtering import filter_stage

    rows = filter_stage(
        options.augmented, options.seeds, options.out_dir, filtering.filters, options.judgments, filtering
    )
    for row in rows:
        log.info("%-40s %6d outputs (x%.2f)", row["filter"], row["outputs"], row["multiple_over_seeds"] or 0)
