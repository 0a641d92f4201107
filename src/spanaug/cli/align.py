"""``spanaug align ...``: the span aligner (train, predict, evaluate, the align stage, ablations, data)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from spanaug.cli.options import command, emit, group
from spanaug.core.aligner_settings import (
    AblationSettings,
    AlignerConfig,
    AlignerSection,
    AlignerSystemsSettings,
    AlignerTrainSection,
)
from spanaug.core.config import Runtime
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)
group("align", "the span aligners: the paper's discriminative one and the cross encoder")


@settings
class TrainFiles:
    out: str = setting(help="the trained aligner's directory")
    encoder: str = inherit(AlignerConfig, "encoder")
    kind: Literal["paper", "cross"] = inherit(AlignerSection, "kind")


@command("align", "train", help="train a span aligner (instances, or a bitext's token differences)")
def train(files: TrainFiles, train: AlignerTrainSection, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.core.files import write_json
    from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext, read_instances
    from spanaug.pipeline.aligner.training import train_aligner

    if train.instances:
        instances = read_instances(train.instances)
    elif train.bitext:
        instances = instances_from_bitext(iter_pairs_from_bitext(train.bitext), prefix=Path(train.bitext).stem)
    else:
        raise ConfigError("--instances or --bitext: the aligner needs training data")
    dev = read_instances(train.dev) if train.dev else None
    extra = [inst for path in train.extra_instances for inst in read_instances(path)]
    made, counts = _made_sources(train, instances, dev or ())
    extra += made
    if files.kind == "cross":
        from spanaug.core.aligner_settings import CrossTrainSection
        from spanaug.pipeline.aligner.cross_training import train_cross_aligner

        cross = train.cross or CrossTrainSection()
        pretrain = [inst for path in train.pretrain for inst in read_instances(path)]
        aligner, summary = train_cross_aligner(
            instances,
            cross.architecture(files.encoder, train.k),
            cross.training(),
            dev=dev,
            device=runtime.device,
            extra=extra,
            pretrain=pretrain,
        )
    else:
        if train.pretrain:
            raise ConfigError("--pretrain: only the cross aligner pre-trains (aligner.kind: cross)")
        aligner, summary = train_aligner(
            instances, train.architecture(files.encoder), train, dev=dev, device=runtime.device, extra=extra
        )
    aligner.save_pretrained(files.out)
    log.info("aligner threshold %.4f: %s", aligner.config.threshold, summary["threshold_source"])
    if counts:
        summary["extra_sources"] = counts
    write_json(summary, Path(files.out) / "training_summary.json")


def _made_sources(train: AlignerTrainSection, instances: list, dev: Sequence) -> tuple[list, dict]:
    """Reversed and phrase-pair instances of the training pairs (``train.reversed``, ``train.phrase_pairs``),
    none on a dev pair."""
    from spanaug.pipeline.aligner.training_data import extra_training_instances, read_sources

    names = (["phrases"] if train.phrase_pairs else []) + (["reversed"] if train.reversed else [])
    if not names:
        return [], {}
    made, counts = extra_training_instances(
        names, instances, read_sources(train, train.phrase_pairs), seed=train.seed, held_out=dev
    )
    log.info("extra training instances: %s", ", ".join(f"{counts[n]} {n}" for n in names))
    return made, counts


@settings
class PredictFiles:
    model: str = setting(help="a trained aligner directory")
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="predictions JSONL: {id, target_span, score}")


@command("align", "predict", help="predict target spans (an aligner of either kind)")
def predict(files: PredictFiles, runtime: Runtime) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.loading import AutoAligner

    aligner = AutoAligner.from_pretrained(files.model, device=runtime.device)
    insts = read_instances(files.instances)
    preds = aligner.predict(insts, progress=True)
    write_jsonl(
        ({"id": i.id, "target_span": list(s) if s else None, "score": sc} for i, (s, sc) in zip(insts, preds)),
        files.out,
    )


@settings
class EvalFiles:
    gold: str = setting(help="span-alignment JSONL with gold target spans")
    pred: str = setting(help="predictions JSONL (align predict)")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")
    calibration: bool = setting(False, "also the ECE of the scores and the predicted and gold null shares")


@command("align", "eval", help="soft and exact span precision, recall and F1")
def evaluate(files: EvalFiles) -> None:
    from spanaug.core.errors import InputError
    from spanaug.core.metrics import prediction_metrics, span_metrics
    from spanaug.pipeline.aligner.instances import read_instances, read_predictions

    gold = read_instances(files.gold)
    preds = read_predictions(files.pred, {g.id: len(g.target_tokens) for g in gold})
    missing = [g.id for g in gold if g.id not in preds]
    if missing:
        raise InputError(files.pred, None, f"no prediction for {len(missing)} gold instance(s), e.g. {missing[0]!r}")
    gold_spans = [g.target_span for g in gold]
    if files.calibration:
        emit(prediction_metrics(gold_spans, [(preds[g.id][0], preds[g.id][1] or 0.0) for g in gold]), files.out)
    else:
        emit(span_metrics(gold_spans, [preds[g.id][0] for g in gold]), files.out)


@settings
class AlignStageFiles:
    model: str = setting(help="a trained aligner directory")
    paraphrases: str = setting(help="a PARAPHRASES shard")
    out: str = setting(help="the ALIGNED shard to write")
    stats: str | None = setting(
        None,
        "alignment statistics (JSON): beams aligned and not, pairs over the encoder's "
        "limit, whether the shard is empty",
    )
    encoder: str | None = setting(None, "override the encoder saved with the model")
    batch_size: int = inherit(AlignerSection, "batch_size")


@command("align", "paraphrases", help="pipeline stage: align every beam of a paraphrases shard")
def align_paraphrases(files: AlignStageFiles, runtime: Runtime) -> None:
    from spanaug.pipeline.aligner.stage import align_stage

    align_stage(
        files.model,
        files.paraphrases,
        files.out,
        encoder=files.encoder,
        device=runtime.device,
        batch_size=files.batch_size,
        stats_path=files.stats,
    )


@settings
class AblateFiles:
    out_dir: str = setting(help="tables and figures")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    extra_instances: str | None = setting(None, "also test adding these span instances (e.g. `augment graph` output)")
    systems: list[str] = setting(factory=list, help="ablation rows to train (default: all of Table 2)")


@command("align", "ablate", help="Table 2 ablations, breakdowns and the memorisation split")
def ablate(files: AblateFiles, evaluation: AblationSettings, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.aligner_ablation import run_ablation
    from spanaug.pipeline.aligner.instances import read_instances

    if not evaluation.data:
        raise ConfigError("--data: span-alignment JSONL to split by sentence pair")
    summary = run_ablation(
        read_instances(evaluation.data),
        evaluation,
        AlignerConfig(encoder=files.encoder, k=files.k),
        files.out_dir,
        device=runtime.device,
        systems=files.systems or None,
        extra_instances=read_instances(files.extra_instances) if files.extra_instances else (),
    )
    for row in summary["table"]:
        log.info("%-20s soft F1 %.3f  exact F1 %.3f", row["system"], row["soft_f1"], row["exact_f1"])


@settings
class SystemsFiles:
    out_dir: str = setting(help="systems.csv, systems_summary.json, systems.jsonl and each row's predictions")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    resume: bool = setting(False, "keep the rows already in OUT_DIR/systems.jsonl (a killed run goes on)")


@command("align", "systems", help="aligner kinds and extra training data on one held-out split (ECE, null shares)")
def systems(files: SystemsFiles, systems: AlignerSystemsSettings, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.aligner_systems import data_sources, format_table, run_systems
    from spanaug.pipeline.aligner.instances import read_instances

    if not systems.data:
        raise ConfigError("--data: span-alignment JSONL to split by sentence pair")
    summary = run_systems(
        read_instances(systems.data),
        systems,
        files.encoder,
        files.out_dir,
        sources=data_sources(systems),
        k=files.k,
        device=runtime.device,
        resume=files.resume,
    )
    print(format_table(summary["table"]))


@settings
class SyntheticFiles:
    lexicon: str = setting(help="lexicon JSON (frame -> lexical units, lemma.pos) or a FrameNet release")
    out: str = setting(help="span-alignment JSONL")
    conll: str | None = setting(None, "open-SESAME CoNLL with frame annotations (and PTB tags)")
    sentences: str | None = setting(None, "or imported sentences (SENTENCES Parquet, spanaug import)")
    per_span: int = setting(1, "rewrites per labelled span", minimum=1)
    seed: int = setting(0, "which units and perturbations are drawn")


@command("align", "synthetic", help="pre-training instances: FrameNet triggers rewritten as other units of their frame")
def synthetic(files: SyntheticFiles) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.training_data import synthetic_instances
    from spanaug.pipeline.framenet import read_lexicon

    if (files.conll is None) == (files.sentences is None):
        raise ConfigError("--conll or --sentences: one corpus of labelled triggers")
    lexicon = {frame: sorted(units) for frame, units in read_lexicon(files.lexicon).items()}
    if files.conll:
        from spanaug.pipeline.importers import read_conll

        rows = read_conll(files.conll)
    else:
        from spanaug.core import artifacts

        rows = artifacts.read_table(files.sentences, artifacts.SENTENCES).to_pylist()
    insts = synthetic_instances(
        ((r["tokens"], (r["span_start"], r["span_end"]), r["frame"], r["pos_tags"]) for r in rows),
        lexicon,
        per_span=files.per_span,
        seed=files.seed,
    )
    n = write_jsonl((i.as_json() for i in insts), files.out)
    log.info("%d synthetic span instances from %s", n, files.conll or files.sentences)


@settings
class MakeInstancesFiles:
    bitext: str = setting(help="paraphrase TSV: source<TAB>paraphrase")
    out: str = setting(help="span-alignment JSONL")
    pairs_out: str | None = setting(None, "also the diff's word alignments, as Edinburgh++ JSON")


@command("align", "make-instances", help="span instances from a paraphrase bitext's token differences")
def make_instances(files: MakeInstancesFiles) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext

    prefix = Path(files.bitext).stem
    n = write_jsonl(
        (i.as_json() for i in instances_from_bitext(iter_pairs_from_bitext(files.bitext), prefix=prefix)), files.out
    )
    log.info("%d span instances from %s", n, files.bitext)
    if files.pairs_out:
        from spanaug.pipeline.aligner.word_aligned import pairs_from_bitext, write_aligned_json

        write_aligned_json(pairs_from_bitext(iter_pairs_from_bitext(files.bitext), prefix=prefix), files.pairs_out)


@settings
class ImportAlignedFiles:
    input: str = setting(help="a word-aligned corpus (Edinburgh++ JSON) or a span TSV")
    format: Literal["auto", "edinburgh", "tsv"] = setting("auto", "auto: by the file name (.tsv/.txt: tsv)")
    out: str = setting(help="span-alignment JSONL")
    null_share: float = setting(0.10, "share of instances with no counterpart", minimum=0, maximum=1)
    seed: int = setting(0, "which null instances are kept")
    phrases: Literal["minimal", "all"] = setting(
        "minimal", "Edinburgh++: minimal content-word phrases (the shared data's rule) or every consistent phrase pair"
    )


@command("align", "import-aligned", help="span instances from a word-aligned corpus or a span TSV")
def import_aligned(files: ImportAlignedFiles) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.word_aligned import import_instances

    if files.phrases == "all":
        from spanaug.pipeline.aligner.training_data import phrase_pair_instances
        from spanaug.pipeline.aligner.word_aligned import read_aligned_json

        insts = phrase_pair_instances(
            read_aligned_json(files.input),
            null_share=files.null_share,
            seed=files.seed,
            prefix=Path(files.input).name.split(".")[0],
        )
    else:
        insts = import_instances(files.input, files.format, null_share=files.null_share, seed=files.seed)
    n = write_jsonl((i.as_json() for i in insts), files.out)
    log.info(
        "%d span instances (%d with no counterpart) from %s", n, sum(i.target_span is None for i in insts), files.input
    )
