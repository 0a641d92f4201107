"""What a run makes: its targets, the optional part of the config that makes each result (written
once, in MADE_BY), the report's tables and pages, and the augmenters' names."""

from __future__ import annotations

import dataclasses
import typing

from spanaug.core.evaluation_settings import FrameIdSection
from spanaug.downstream.curve_checks import BASELINE

#: The augmenters whose examples and counts the run makes (augmenters.smk has one rule each).
AUGMENTERS = ("paraphrastic", "lexsub", "geca", "graph")
#: The augmenters Figure 8 can compare with no augmentation (frameid.augmenters), and its ``augmenter``
#: wildcard (with the baseline's key).
FRAMEID_AUGMENTERS = typing.get_args(typing.get_args(typing.get_type_hints(FrameIdSection)["augmenters"])[0])
AUGMENTER_WILDCARD = "|".join([BASELINE, *FRAMEID_AUGMENTERS])

#: Which optional part of the config makes which results: the first prefix (of a path in the run
#: folder) that matches names the part; a path no prefix matches is made by every run. The targets,
#: the report's table pages, its warnings page and its summary all ask :meth:`Plan.makes`.
MADE_BY = (
    ("aligner_eval/table2/", "evaluation"),
    ("aligner_eval/selftrain/", "selftrain"),
    ("aligner_eval/systems/", "systems"),
    ("aligner_eval/cross_domain/", "cross_domain"),
    ("aligner_eval/comparison", "baselines"),
    ("augmenters/", "augmenters"),
    ("frameid/", "frameid"),
    ("argid/", "argid"),
    ("human_eval/human_eval", "human_results"),
    ("human_eval/score_histogram", "human_results"),
    ("human_eval/judgments", "human_results"),
    ("human_eval/span_agreement", "span_results"),
    ("human_eval/span_alignment", "span_results"),
    ("human_eval/", "human_eval"),
)

#: The run's results, in the run folder: the targets of rule all (those of an optional part only
#: when it is on), besides the report's pages.
TARGETS = (
    "augmented.parquet",
    "report/stats.json",
    "report/per_iteration.csv",
    "report/per_iteration.png",
    "filtering/filters.csv",
    "aligner_eval/table2/ablation.csv",
    "aligner_eval/systems/systems.csv",
    "aligner_eval/cross_domain/cross_domain.csv",
    "aligner_eval/comparison.csv",
    *(f"augmenters/{name}.json" for name in AUGMENTERS),
    "aligner_eval/selftrain/ablation.csv",
    "frameid/curves.csv",
    "frameid/lexicon_baseline.json",
    "argid/curves.csv",
    "human_eval/task.csv",
    "human_eval/span_task.csv",
    "human_eval/human_eval.json",
    "human_eval/span_agreement.json",
    "release/README.md",
    "release/augmented.conll",
)

#: The results whose warnings the warnings page collects (``--summaries``).
WARNING_SUMMARIES = (
    "data/import_stats.json",
    "report/stats.json",
    "filtering/filters.json",
    "release/export_conll.json",
    "report/frame_elements.json",
    *(f"augmenters/{name}.json" for name in AUGMENTERS),
    "aligner_eval/table2/summary.json",
    "aligner_eval/selftrain/summary.json",
    "human_eval/task_summary.json",
    "human_eval/span_agreement.json",
)

#: Optional results that the warnings page (and the summary) read by an option of their own.
OPTIONAL_READS = {
    "comparison": "aligner_eval/comparison.json",
    "curves": "frameid/curves.csv",
    "human_eval": "human_eval/human_eval.json",
}

#: What the summary page reads: its own inputs, then its optional ones.
SUMMARY_READS = {
    "stats": "report/stats.json",
    "per_iteration": "report/per_iteration.csv",
    "filters": "filtering/filters.json",
    "warnings": "report/warnings.json",
    "paraphrase": "report/paraphrase_stage.csv",
    "frame_elements": "report/frame_elements.json",
}
SUMMARY_OPTIONAL = {
    "ablation": "aligner_eval/table2/summary.json",
    **OPTIONAL_READS,
    "frameid_baseline": "frameid/lexicon_baseline.json",
}


@dataclasses.dataclass(frozen=True)
class Table:
    """A report page of one CSV/JSON result: its source in the run folder (stem.ext), title, caption
    (workflow/report/NAME.rst), category and subcategory in the report's menu, and whether its numbers
    derive from the run's paraphraser and aligner (the page then says when their records make them
    toys: a downstream curve over a toy's outputs shows mechanics only)."""

    stem: str
    ext: str
    title: str
    caption: str
    category: str
    subcategory: str | None = None
    from_models: bool = False

    @property
    def source(self) -> str:
        return f"{self.stem}.{self.ext}"

    @property
    def page(self) -> str:
        return f"{self.stem}.html"

    @property
    def slug(self) -> str:
        """The page's name for its rule, log and benchmark: its path in the run, as one word."""
        return self.stem.replace("/", "_")


AUGMENTER_TITLES = {
    "paraphrastic": ("Augmenter: paraphrastic", "augmenters"),
    "lexsub": ("Augmenter: lexical substitution", "augmenters"),
    "geca": ("Augmenter: GECA", "augmenters"),
    "graph": ("Chain graph: span-alignment instances", "graph"),
}


ALIGNER = "Span aligner"


def _ablation_tables(ablation: str) -> list[Table]:
    rows = [
        ("ablation", "Table 2 ablations", "ablation"),
        ("memorisation", "Memorisation split (§4.6)", "memorisation"),
        ("by_span_length", "F1 by span length (Figure 4)", "breakdowns"),
        ("by_position_difference", "F1 by position difference (Figure 5)", "breakdowns"),
    ]
    if ablation == "selftrain":
        rows[0] = ("ablation", "Self-training round", "selftrain")
    return [
        Table(f"aligner_eval/{ablation}/{name}", "csv", title, caption, "Span aligner", ablation)
        for name, title, caption in rows
    ]


#: Every table the report can show (the raw files are no report entries of their own: each page shows
#: the table and carries its raw file as a download link).
TABLES = (
    Table("data/import_stats", "json", "What the importer kept", "import_stats", "Input corpus"),
    Table("data/seeds_report", "json", "Seed selection", "seeds", "Input corpus"),
    Table("report/stats", "json", "Statistics of the augmented dataset", "stats", "Augmented dataset"),
    Table("report/per_iteration", "csv", "Outputs and scores per iteration", "per_iteration", "Augmented dataset"),
    Table("filtering/filters", "csv", "Filters (Table 4)", "filters", "Augmented dataset"),
    *(Table(f"augmenters/{name}", "json", *AUGMENTER_TITLES[name], "Augmenters") for name in AUGMENTERS),
    Table("frameid/lexicon_baseline", "json", "Frame ID: lexicon baseline", "frameid_baseline", "Frame ID"),
    Table("frameid/curves", "csv", "Frame ID curves (Figure 8)", "frameid_curves", "Frame ID", from_models=True),
    Table(
        "argid/curves",
        "csv",
        "Argument ID curves (with and without augmentation)",
        "argid_curves",
        "Argument identification",
        from_models=True,
    ),
    Table("human_eval/task", "csv", "Annotation task (frame evocation)", "human_task", "Human evaluation"),
    Table("human_eval/human_eval", "json", "Human judgments", "human_eval", "Human evaluation"),
    Table("human_eval/span_task", "csv", "Span-alignment task (§4.1)", "span_task", "Human evaluation"),
    Table(
        "human_eval/span_agreement", "json", "Span-alignment answers: agreement", "span_agreement", "Human evaluation"
    ),
    Table(
        "aligner_eval/comparison",
        "csv",
        "Span aligner against word aligners (Tables 1-2)",
        "comparison",
        "Span aligner",
    ),
    Table(
        "aligner_eval/cross_domain/cross_domain", "csv", "Span aligner across domains", "cross_domain", "Span aligner"
    ),
    *_ablation_tables("table2"),
    *_ablation_tables("selftrain"),
)

#: Report pages every run has besides its tables.
PAGES = ("summary", "warnings", "chains", "frame_elements")
