"""``spanaug baseline ...``: the word-alignment baselines (FastAlign, DiscAlign) and Tables 1-2."""

from __future__ import annotations

import logging

from spanaug.cli.options import command, group
from spanaug.core.aligner_settings import (
    AlignerConfig,
    BaselinesSection,
    DiscAlignSettings,
    DiscAlignTrainSettings,
    FastAlignSettings,
)
from spanaug.core.config import Runtime
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)
group("baseline", "word-alignment baselines")
group("discalign", "the discriminative word aligner")


def _text_pairs(paths: list[str]) -> list:
    from spanaug.evaluation.fastalign import read_text_pairs

    return [pair for path in paths for pair in read_text_pairs(path)]


@settings
class FastAlignOptions:
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="span predictions JSONL")
    links_out: str | None = setting(None, "also the links, as Edinburgh++-format JSON")
    extra_text: list[str] = inherit(BaselinesSection, "extra_text")


@command("baseline", "fastalign", help="FastAlign links projected to spans")
def fastalign(options: FastAlignOptions, fastalign: FastAlignSettings) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.evaluation.fastalign import fast_align
    from spanaug.evaluation.word_alignment import pairs_of, span_predictions, write_links
    from spanaug.pipeline.aligner.instances import read_instances

    insts = read_instances(options.instances)
    links = fast_align(pairs_of(insts), _text_pairs(options.extra_text), fastalign, origin=options.instances)
    write_jsonl(span_predictions(insts, links), options.out)
    if options.links_out:
        write_links(links, options.links_out)


@settings
class DiscAlignTrainOptions:
    gold: str = setting(help="word-aligned pairs, Edinburgh++ JSON")
    out: str = setting(help="the model directory")
    pretrain: str | None = setting(None, "automatically aligned pairs (Edinburgh++ JSON) to train on first")


@command("baseline", "discalign", "train", help="train DiscAlign on gold word alignments")
def discalign_train(
    options: DiscAlignTrainOptions, model: DiscAlignSettings, training: DiscAlignTrainSettings, runtime: Runtime
) -> None:
    from spanaug.core.modeldir import write_training_summary
    from spanaug.evaluation.discalign import train_discalign
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    pretrain = read_aligned_json(options.pretrain) if options.pretrain else ()
    trained, history = train_discalign(read_aligned_json(options.gold), model, training, pretrain, runtime.device)
    trained.save_pretrained(options.out)
    write_training_summary(options.out, history)


@settings
class DiscAlignPredictOptions:
    model: str = setting(help="a trained DiscAlign directory")
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="span predictions JSONL")
    links_out: str | None = setting(None, "also the links, as Edinburgh++-format JSON")


@command("baseline", "discalign", "predict", help="DiscAlign links projected to spans")
def discalign_predict(options: DiscAlignPredictOptions, runtime: Runtime) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.evaluation.discalign import DiscAligner
    from spanaug.evaluation.word_alignment import pairs_of, span_predictions, write_links
    from spanaug.pipeline.aligner.instances import read_instances

    insts = read_instances(options.instances)
    links = DiscAligner.from_pretrained(options.model, device=runtime.device).align(pairs_of(insts))
    write_jsonl(span_predictions(insts, links), options.out)
    if options.links_out:
        write_links(links, options.links_out)


@settings
class CompareOptions:
    instances: str = setting(help="span instances from the word-aligned pairs")
    gold_pairs: str = setting(help="the word-aligned pairs (Edinburgh++ JSON) the instances come from")
    out_dir: str = setting(help="comparison table, figure and summary")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    extra_text: list[str] = inherit(BaselinesSection, "extra_text")
    epochs: int = inherit(BaselinesSection, "epochs")
    seed: int = inherit(BaselinesSection, "seed")
    dev_share: float = inherit(BaselinesSection, "dev_share")
    test_share: float = inherit(BaselinesSection, "test_share")


@command("baseline", "compare", help="Tables 1-2: FastAlign, DiscAlign and the span aligner on one split")
def compare(options: CompareOptions, fastalign: FastAlignSettings, runtime: Runtime) -> None:
    from spanaug.evaluation.aligner_comparison import run_comparison
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    cfg = BaselinesSection(
        instances=options.instances,
        gold_pairs=options.gold_pairs,
        extra_text=options.extra_text,
        epochs=options.epochs,
        seed=options.seed,
        dev_share=options.dev_share,
        test_share=options.test_share,
        fastalign=fastalign,
    )
    rows = run_comparison(
        read_instances(options.instances),
        read_aligned_json(options.gold_pairs),
        cfg,
        AlignerConfig(encoder=options.encoder, k=options.k),
        options.out_dir,
        extra_text=_text_pairs(options.extra_text),
        device=runtime.device,
    )
    for row in rows:
        log.info(
            "%-20s soft F1 %.3f  exact F1 %.3f  AER %s", row["system"], row["soft_f1"], row["exact_f1"], row["aer"]
        )
