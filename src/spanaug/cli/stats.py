"""``spanaug stats``: intrinsic statistics of the augmented dataset."""

from __future__ import annotations

from spanaug.cli.options import command
from spanaug.core.evaluation_settings import StatsSettings
from spanaug.core.settings import setting, settings


@settings
class StatsOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out_json: str = setting(help="the statistics (JSON)")
    out_csv: str = setting(help="outputs and scores per iteration (CSV)")
    out_plot: str | None = setting(None, "outputs per iteration (PNG)")
    out_dist_plot: str | None = setting(None, "span length and position-difference histograms (PNG)")


@command("stats", help="intrinsic statistics of the augmented dataset")
def stats(options: StatsOptions, stats: StatsSettings) -> None:
    from spanaug.evaluation.statistics import write_stats

    write_stats(
        options.augmented,
        options.seeds,
        options.out_json,
        options.out_csv,
        options.out_plot,
        stats,
        options.out_dist_plot,
    )
