"""``spanaug export ...``: the augmented dataset for other tools (open-SESAME CoNLL) and its dataset card."""

from __future__ import annotations

import logging
from typing import Any

from spanaug.cli.options import command, group
from spanaug.core.settings import setting, settings

log = logging.getLogger(__name__)
group("export", "the augmented dataset for release: open-SESAME CoNLL and a dataset card")


@settings
class ConllOptions:
    augmented: str = setting(help="the augmented dataset (or one of its filtered subsets)")
    out: str = setting(help="the CoNLL file: one block per aligned output")
    out_ids: str | None = setting(None, "TSV mapping each block's sentence number to its output id, seed and iteration")
    pos_tagger: str | None = setting(
        None, "'lexicon' or 'spacy:<model>' fills the lemma and POS columns (universal POS); null leaves them '_'"
    )
    summary: str | None = setting(None, "counts and warnings (JSON), for the report's warnings page")


@command("export", "conll", help="every aligned output as an open-SESAME CoNLL block")
def conll(options: ConllOptions) -> None:
    from spanaug.downstream.export import export_conll

    counts = export_conll(options.augmented, options.out, options.out_ids, options.pos_tagger)
    if options.summary:
        from spanaug.core.files import write_json

        write_json(counts, options.summary)
    log.info(
        "%(blocks)d CoNLL blocks (%(unaligned_left_out)d outputs without an aligned span left out; "
        "%(null_instantiated_fes_left_out)d null-instantiated FEs and %(lost_fes_left_out)d FEs the paraphrases "
        "lost, which have no words to tag, left out)",
        counts,
    )


@settings
class CardOptions:
    augmented: str = setting(help="the augmented dataset")
    seeds: str = setting(help="the run's seeds")
    out_dir: str = setting(help="the release folder: README.md and data/*.parquet are written there")
    run: dict[str, Any] = setting(
        help="what ran (JSON): run_name, inputs, format, paraphraser, encoder, frame_elements (mode, select, "
        "require), ... (the workflow passes it)"
    )
    filters: str | None = setting(None, "the filters summary (JSON of spanaug filter)")
    conll: str | None = setting(None, "the CoNLL export in the same folder, to list it")
    paraphraser_model: str | None = setting(None, "the run's paraphraser (its records say whether it is a toy)")
    aligner_model: str | None = setting(None, "the run's aligner directory (its records say whether it is a toy)")


@command("export", "card", help="a dataset card (README.md) beside a copy of the Parquet data, loadable by datasets")
def card(options: CardOptions) -> None:
    from spanaug.core.provenance import toy_models
    from spanaug.downstream.card import write_card

    toys = toy_models(options.paraphraser_model, options.aligner_model)
    run = {**options.run, "toy_models": [origin.describe() for origin in toys]}
    counts = write_card(options.augmented, options.seeds, options.out_dir, run, options.filters, options.conll)
    log.info("dataset card for %(outputs)d outputs (%(aligned)d aligned) of %(seeds)d seeds, %(frames)d frames", counts)
