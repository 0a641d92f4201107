"""``spanaug baseline ...``: the word-alignment baselines (FastAlign, DiscAlign) and Tables 1-2."""

from __future__ import annotations

import logging
from pathlib import Path

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
class FastAlignFiles:
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="span predictions JSONL")
    links_out: str | None = setting(None, "also the links, as Edinburgh++-format JSON")
    extra_text: list[str] = inherit(BaselinesSection, "extra_text")


@command("baseline", "fastalign", help="FastAlign links projected to spans")
def fastalign(files: FastAlignFiles, fastalign: FastAlignSettings) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.evaluation.fastalign import fast_align
    from spanaug.evaluation.word_alignment import pairs_of, span_predictions, write_links
    from spanaug.pipeline.aligner.instances import read_instances

    insts = read_instances(files.instances)
    links = fast_align(pairs_of(insts), _text_pairs(files.extra_text), fastalign, origin=files.instances)
    write_jsonl(span_predictions(insts, links), files.out)
    if files.links_out:
        write_links(links, files.links_out)


@settings
class DiscAlignTrainFiles:
    gold: str = setting(help="word-aligned pairs, Edinburgh++ JSON")
    out: str = setting(help="the model directory")
    pretrain: str | None = setting(None, "automatically aligned pairs (Edinburgh++ JSON) to train on first")


@command("baseline", "discalign", "train", help="train DiscAlign on gold word alignments")
def discalign_train(
    files: DiscAlignTrainFiles, model: DiscAlignSettings, training: DiscAlignTrainSettings, runtime: Runtime
) -> None:
    from spanaug.core.files import write_json
    from spanaug.evaluation.discalign import train_discalign
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    pretrain = read_aligned_json(files.pretrain) if files.pretrain else ()
    trained, history = train_discalign(read_aligned_json(files.gold), model, training, pretrain, runtime.device)
    trained.save_pretrained(files.out)
    write_json(history, Path(files.out) / "training_summary.json")


@settings
class DiscAlignPredictFiles:
    model: str = setting(help="a trained DiscAlign directory")
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="span predictions JSONL")
    links_out: str | None = setting(None, "also the links, as Edinburgh++-format JSON")


@command("baseline", "discalign", "predict", help="DiscAlign links projected to spans")
def discalign_predict(files: DiscAlignPredictFiles, runtime: Runtime) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.evaluation.discalign import DiscAligner
    from spanaug.evaluation.word_alignment import pairs_of, span_predictions, write_links
    from spanaug.pipeline.aligner.instances import read_instances

    insts = read_instances(files.instances)
    links = DiscAligner.from_pretrained(files.model, device=runtime.device).align(pairs_of(insts))
    write_jsonl(span_predictions(insts, links), files.out)
    if files.links_out:
        write_links(links, files.links_out)


@settings
class CompareFiles:
    instances: str = setting(help="span instances from the word-aligned pairs")
    gold_pairs: str = setting(help="the word-aligned pairs (Edinburgh++ JSON) the instances come from")
    out_dir: str = setting(help="comparison table, figure and summary")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    extra_text: list[str] = inherit(BaselinesSection, "extra_text")
    epochs: int = inherit(BaselinesSection, "epochs")
    seed: int = inherit(BaselinesSection, "seed")


@command("baseline", "compare", help="Tables 1-2: FastAlign, DiscAlign and the span aligner on one split")
def compare(files: CompareFiles, fastalign: FastAlignSettings, runtime: Runtime) -> None:
    from spanaug.evaluation.aligner_comparison import run_comparison
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    cfg = BaselinesSection(
        instances=files.instances,
        gold_pairs=files.gold_pairs,
        extra_text=files.extra_text,
        epochs=files.epochs,
        seed=files.seed,
        fastalign=fastalign,
    )
    rows = run_comparison(
        read_instances(files.instances),
        read_aligned_json(files.gold_pairs),
        cfg,
        AlignerConfig(encoder=files.encoder, k=files.k),
        files.out_dir,
        extra_text=_text_pairs(files.extra_text),
        device=runtime.device,
    )
    for row in rows:
        log.info(
            "%-20s soft F1 %.3f  exact F1 %.3f  AER %s", row["system"], row["soft_f1"], row["exact_f1"], row["aer"]
        )
