"""``spanaug augment ...``: the augmenters compared downstream (§6.3) and the chain-graph instances."""

from __future__ import annotations

from spanaug.cli.options import command, emit, group
from spanaug.core.evaluation_settings import FilteringSection, GecaSettings, LexsubSettings
from spanaug.core.settings import inherit, setting, settings

group("augment", "augmenters compared downstream")


@settings
class FilteredOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out: str = setting(help="EXAMPLES Parquet (graph: span instances JSONL)")
    counts: str | None = setting(None, "JSON summary (default: standard output)")
    filter: str | None = setting(None, "a filter's name (default: every aligned output)")
    filters: dict | None = inherit(FilteringSection, "filters")


@settings
class LexsubOptions(FilteredOptions):
    pos_tagger: str = inherit(LexsubSettings, "pos_tagger")


def _inputs(options: FilteredOptions) -> tuple:
    """The augmented dataset, its seeds (every output's seed among them), the filter's bounds (the
    named filters' on the aligner-score scale the dataset records) and what scored it."""
    import pyarrow.compute as pc

    from spanaug.core import artifacts, score_scale
    from spanaug.core.errors import InputError
    from spanaug.evaluation.filtering import named_filter

    augmented = artifacts.read_table(options.augmented, artifacts.AUGMENTED)
    seeds = artifacts.read_table(options.seeds, artifacts.SENTENCES)
    known = pc.is_in(augmented.column("seed_id"), value_set=seeds.column("sentence_id").combine_chunks())
    if augmented.num_rows and not pc.all(known).as_py():
        row = pc.index(known, False).as_py()
        raise InputError(
            options.augmented,
            f"row {row}",
            f"seed_id {augmented.column('seed_id')[row].as_py()!r} is not "
            f"in the seeds {options.seeds} (expected the run's seeds.parquet)",
        )
    scorers = score_scale.read(options.augmented)
    return augmented, seeds, named_filter(options.filter, options.filters, scorers), scorers


def _write_examples(
    rows: list,
    counts: dict,
    out: str,
    counts_path: str | None,
    augmenter: str,
    bounds: dict | None = None,
    scorers: object = None,
) -> None:
    from spanaug.core import artifacts
    from spanaug.downstream.augmenters import augmenter_warnings

    artifacts.write_table(rows, out, artifacts.EXAMPLES)
    counts = {"examples": len(rows), **counts}
    emit({**counts, "warnings": augmenter_warnings(augmenter, counts, bounds, scorers)}, counts_path)


@command("augment", "paraphrastic", help="the pipeline's outputs under a named filter")
def paraphrastic(options: FilteredOptions) -> None:
    from spanaug.downstream.augmenters import filter_counts, paraphrastic_examples

    augmented, seeds, bounds, scorers = _inputs(options)
    rows = paraphrastic_examples(augmented, seeds, bounds)
    counts = filter_counts(augmented, options.filter, bounds, scorers)
    _write_examples(rows, counts, options.out, options.counts, "paraphrastic", bounds, scorers)


@command("augment", "lexsub", help="aligned triggers put back into their seed sentences (POS must match)")
def lexsub(options: LexsubOptions) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.core.tagging import load_tagger
    from spanaug.downstream.augmenters import filter_counts, lexsub_examples

    tagger, why = load_tagger(options.pos_tagger)
    if tagger is None:
        raise ConfigError(f"lexsub needs a POS tagger: {why}")
    augmented, seeds, bounds, scorers = _inputs(options)
    rows, counts = lexsub_examples(augmented, seeds, tagger, bounds)
    _write_examples(
        rows,
        {**filter_counts(augmented, options.filter, bounds, scorers), "pos_tagger": options.pos_tagger, **counts},
        options.out,
        options.counts,
        "lexsub",
        bounds,
        scorers,
    )


@command("augment", "graph", help="span-alignment instances between all members of each paraphrase chain")
def graph(options: FilteredOptions) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.downstream.augmenters import augmenter_warnings, chain_members, filter_counts
    from spanaug.pipeline.aligner.training_data import graph_instances

    augmented, seeds, bounds, scorers = _inputs(options)
    instances, counts = graph_instances(chain_members(augmented, seeds, bounds))
    write_jsonl((i.as_json() for i in instances), options.out)
    counts = {**filter_counts(augmented, options.filter, bounds, scorers), **counts}
    emit({**counts, "warnings": augmenter_warnings("graph", counts, bounds, scorers)}, options.counts)


@settings
class GecaOptions:
    train: list[str] = setting(help="CoNLL or Parquet sentences")
    out: str = setting(help="EXAMPLES Parquet")
    counts: str | None = setting(None, "JSON summary (default: standard output)")


@command("augment", "geca", help="Good-Enough Compositional Augmentation over trigger spans")
def geca(options: GecaOptions, geca: GecaSettings) -> None:
    from spanaug.downstream.augmenters import geca_examples
    from spanaug.downstream.frameid.data import read_sentences

    rows, counts = geca_examples(read_sentences(options.train), geca)
    _write_examples(rows, counts, options.out, options.counts, "geca")
