"""``spanaug align ...``: the span aligner (train, predict, evaluate, the align stage, ablations, data)."""

from __future__ import annotations

import logging
import time
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
    AlignStageSettings,
    CrossDomainSettings,
    CrossTrainSection,
    LongSpanSettings,
)
from spanaug.core.config import FrameElementSettings, Runtime
from spanaug.core.settings import inherit, setting, settings
from spanaug.pipeline.aligner.kinds import Recipe, pretrain_problem, train_kind

log = logging.getLogger(__name__)
group("align", "the span aligners: the paper's discriminative one and the cross encoder")


@settings
class TrainOptions:
    out: str = setting(help="the trained aligner's directory")
    encoder: str = inherit(AlignerConfig, "encoder")
    kind: Literal["paper", "cross"] = inherit(AlignerSection, "kind")


@command("align", "train", help="train a span aligner (instances, word-aligned corpora, or a bitext's differences)")
def train(options: TrainOptions, train: AlignerTrainSection, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.core.modeldir import write_training_summary
    from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext, read_instances
    from spanaug.pipeline.aligner.training_data import corpus_origins, read_corpora

    if train.pretrain and (problem := pretrain_problem(options.kind)):  # before any file is read
        raise ConfigError(f"--pretrain: {problem} (--kind, aligner.kind: {options.kind})")

    if train.instances or train.word_aligned:
        corpora = read_corpora(train.instances, train.word_aligned)
    elif train.bitext:
        stem = Path(train.bitext).stem
        corpora = {train.bitext: instances_from_bitext(iter_pairs_from_bitext(train.bitext), prefix=stem)}
    else:
        raise ConfigError("--instances, --word-aligned or --bitext: the aligner needs training data")
    instances = [i for part in corpora.values() for i in part]
    dev_corpora = read_corpora(train.dev, train.word_aligned_dev)
    dev = [i for part in dev_corpora.values() for i in part] or None
    extra = [inst for path in train.extra_instances for inst in read_instances(path)]
    made, counts, by_source = _made_sources(train, instances, dev or ())
    extra += made
    pretrain = [inst for path in train.pretrain for inst in read_instances(path)]
    started = time.perf_counter()
    aligner, summary = train_kind(
        options.kind,
        _recipe(train, options.encoder),
        instances,
        dev,
        device=runtime.device,
        progress=True,
        extra=extra,
        pretrain=pretrain,
    )
    seconds = time.perf_counter() - started
    aligner.save_pretrained(options.out)
    log.info("aligner threshold %.4f: %s", aligner.config.threshold, summary["threshold_source"])
    summary["kind"] = options.kind
    summary["corpora"] = corpus_origins(corpora, dev_corpora, by_source)
    if counts:
        summary["extra_sources"] = counts
    summary["instances_per_s"] = _throughput(summary, seconds)
    log.info("trained in %.0f s, %.1f instances/s (every epoch counted)", seconds, summary["instances_per_s"])
    print(f"align train: {summary['instances_per_s']:.1f} instances/s ({seconds:.0f} s)")
    write_training_summary(options.out, summary)


def _recipe(train: AlignerTrainSection, encoder: str) -> Recipe:
    """The recipe of ``align train`` and of the workflow's aligner: the paper kind from the section
    itself, the cross kind from its ``cross`` settings (their defaults when unset)."""
    cross = train.cross or CrossTrainSection()
    return Recipe(
        paper=train.architecture(encoder),
        paper_training=train,
        cross=cross.architecture(encoder, train.k),
        cross_training=cross.training(),
    )


def _throughput(summary: dict, seconds: float) -> float:
    """Training instances seen per second of training (threshold tuning and caching included): each
    epoch's pass counts, the cross aligner's pre-training epochs with their own instances."""
    history = summary.get("loss_history", [])
    if history and isinstance(history[0], dict):  # the cross aligner's: {pretrain_epoch|epoch, loss}
        pre, main = summary["pretrain_instances"], summary["train_instances"]
        seen = sum(pre if "pretrain_epoch" in h else main for h in history)
    else:
        seen = summary["train_instances"] * max(len(history), 1)
    return round(seen / seconds, 2) if seconds > 0 else 0.0


def _made_sources(train: AlignerTrainSection, instances: list, dev: Sequence) -> tuple[list, dict, dict[str, list]]:
    """Reversed and phrase-pair instances of the training pairs (``train.reversed``, the word-aligned
    files of ``train.phrase_sources()``), none on a dev pair; their counts, and each source's instances."""
    from spanaug.pipeline.aligner.training_data import extra_training_instances, read_sources

    phrase_files = train.phrase_sources()
    phrases = phrase_files or (train.bitext_phrases and train.bitext)
    names = (["phrases"] if phrases else []) + (["reversed"] if train.reversed else [])
    if not names:
        return [], {}, {}
    sources = read_sources(train, phrase_files)
    if phrases and not phrase_files:  # the bitext's own diff alignment (the workflow passes it as a file)
        from spanaug.pipeline.aligner.instances import iter_pairs_from_bitext
        from spanaug.pipeline.aligner.word_aligned import pairs_from_bitext

        stem = Path(train.bitext).stem
        sources.gold_pairs = pairs_from_bitext(iter_pairs_from_bitext(train.bitext), prefix=stem)
    by_source: dict[str, list] = {}
    made, counts = extra_training_instances(
        names, instances, sources, seed=train.seed, held_out=dev, by_source=by_source
    )
    log.info("extra training instances: %s", ", ".join(f"{counts[n]} {n}" for n in names))
    return made, counts, by_source


@settings
class PredictOptions:
    model: str = setting(help="a trained aligner directory")
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="predictions JSONL: {id, target_span, score}")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = inherit(AlignerSection, "dtype")


@command("align", "predict", help="predict target spans (an aligner of either kind)")
def predict(options: PredictOptions, runtime: Runtime) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.loading import AutoAligner

    aligner = AutoAligner.from_pretrained(options.model, device=runtime.device, dtype=options.dtype)
    insts = read_instances(options.instances)
    preds = aligner.predict(insts, progress=True)
    write_jsonl(
        ({"id": i.id, "target_span": list(s) if s else None, "score": sc} for i, (s, sc) in zip(insts, preds)),
        options.out,
    )


@settings
class EvalOptions:
    gold: str = setting(help="span-alignment JSONL with gold target spans")
    pred: str = setting(help="predictions JSONL (align predict)")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")
    calibration: bool = setting(False, "also the ECE of the scores and the predicted and gold null shares")


@command("align", "eval", help="soft and exact span precision, recall and F1")
def evaluate(options: EvalOptions) -> None:
    from spanaug.core.errors import InputError
    from spanaug.core.metrics import prediction_metrics, span_metrics
    from spanaug.pipeline.aligner.instances import read_instances, read_predictions

    gold = read_instances(options.gold)
    preds = read_predictions(options.pred, {g.id: len(g.target_tokens) for g in gold})
    missing = [g.id for g in gold if g.id not in preds]
    if missing:
        raise InputError(options.pred, None, f"no prediction for {len(missing)} gold instance(s), e.g. {missing[0]!r}")
    gold_spans = [g.target_span for g in gold]
    if options.calibration:
        emit(prediction_metrics(gold_spans, [(preds[g.id][0], preds[g.id][1] or 0.0) for g in gold]), options.out)
    else:
        emit(span_metrics(gold_spans, [preds[g.id][0] for g in gold]), options.out)


@settings
class AlignStageOptions:
    paraphrases: str = setting(help="a PARAPHRASES shard")
    out: str = setting(help="the ALIGNED shard to write")
    stats: str | None = setting(
        None,
        "alignment statistics (JSON): beams aligned and not, pairs over the encoder's "
        "limit, whether the shard is empty",
    )


@command("align", "paraphrases", help="pipeline stage: align every beam of a paraphrases shard (and its FEs)")
def align_paraphrases(
    options: AlignStageOptions, aligner: AlignStageSettings, runtime: Runtime, frame_elements: FrameElementSettings
) -> None:
    from spanaug.pipeline.aligner.stage import align_stage

    align_stage(
        aligner.model,
        options.paraphrases,
        options.out,
        frame_elements,
        encoder=aligner.encoder,
        device=runtime.device,
        dtype=aligner.dtype,
        batch_size=aligner.batch_size,
        stats_path=options.stats,
    )


@settings
class AblateOptions:
    out_dir: str = setting(help="tables and figures")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    extra_instances: str | None = setting(None, "also test adding these span instances (e.g. `augment graph` output)")
    systems: list[str] = setting(factory=list, help="ablation rows to train (default: all of Table 2)")


@command("align", "ablate", help="Table 2 ablations, breakdowns and the memorisation split")
def ablate(options: AblateOptions, evaluation: AblationSettings, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.aligner_ablation import run_ablation
    from spanaug.pipeline.aligner.instances import read_instances

    if not evaluation.data:
        raise ConfigError("--data: span-alignment JSONL to split by sentence pair")
    summary = run_ablation(
        read_instances(evaluation.data),
        evaluation,
        AlignerConfig(encoder=options.encoder, k=options.k),
        options.out_dir,
        device=runtime.device,
        systems=options.systems or None,
        extra_instances=read_instances(options.extra_instances) if options.extra_instances else (),
    )
    for row in summary["table"]:
        log.info("%-20s soft F1 %.3f  exact F1 %.3f", row["system"], row["soft_f1"], row["exact_f1"])


@settings
class SystemsOptions:
    out_dir: str = setting(help="systems.csv, systems_summary.json, systems.jsonl and each row's predictions")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    resume: bool = setting(False, "keep the rows already in OUT_DIR/systems.jsonl (a killed run goes on)")


@command("align", "systems", help="aligner kinds and extra training data on one held-out split (ECE, null shares)")
def systems(options: SystemsOptions, systems: AlignerSystemsSettings, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.aligner_systems import data_sources, format_table, run_systems
    from spanaug.pipeline.aligner.instances import read_instances

    if not systems.data:
        raise ConfigError("--data: span-alignment JSONL to split by sentence pair")
    summary = run_systems(
        read_instances(systems.data),
        systems,
        AlignerConfig(encoder=options.encoder, k=options.k),
        options.out_dir,
        sources=data_sources(systems),
        device=runtime.device,
        resume=options.resume,
    )
    print(format_table(summary["table"]))


@settings
class CrossDomainOptions:
    out_dir: str = setting(help="cross_domain.csv (a line per cell), cross_domain.json and cross_domain.jsonl")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")
    resume: bool = setting(False, "keep the rows already in OUT_DIR/cross_domain.jsonl (a killed run goes on)")


@command(
    "align",
    "cross-domain",
    help="one aligner recipe trained on each word-aligned corpus and on all, tested on every corpus's held-out pairs",
)
def cross_domain(options: CrossDomainOptions, setup: CrossDomainSettings, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.evaluation.cross_domain import format_table, make_domain, run_cross_domain
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    if not setup.corpora:
        raise ConfigError("--corpora: word-aligned corpora by name (JSON: name -> Edinburgh++ JSON file)")
    unknown = sorted(set(setup.dev) - set(setup.corpora))
    if unknown:
        raise ConfigError(f"--dev names {unknown[0]!r}, which --corpora does not ({sorted(setup.corpora)})")
    setup.inherit_phrases(AlignerTrainSection())  # without a config: aligner.train's defaults
    domains = [
        make_domain(
            name,
            read_aligned_json(path),
            read_aligned_json(setup.dev[name]) if name in setup.dev else None,
            setup,
        )
        for name, path in setup.corpora.items()
    ]
    summary = run_cross_domain(
        domains,
        setup,
        AlignerConfig(encoder=options.encoder, k=options.k),
        options.out_dir,
        synthetic=read_instances(setup.synthetic) if setup.synthetic else (),
        device=runtime.device,
        resume=options.resume,
    )
    print(format_table(summary))


@settings
class LongSpanOptions:
    instances: list[str] = setting(help="span-alignment JSONL of the word-aligned pairs (split by pair; trained on)")
    gold_pairs: list[str] = setting(help="the instances' word-aligned pairs (Edinburgh++ JSON): the phrase pairs")
    out_dir: str = setting(help="long_spans.csv and long_spans.json")
    kinds: list[Literal["paper", "cross"]] = setting(factory=lambda: ["paper", "cross"], help="aligner kinds")
    encoder: str = inherit(AlignerConfig, "encoder")
    k: int = inherit(AlignerConfig, "k")


@command("align", "long-spans", help="both aligner kinds on held-out phrase pairs of several words, by length")
def long_spans(options: LongSpanOptions, setup: LongSpanSettings, runtime: Runtime) -> None:
    from spanaug.evaluation.long_spans import format_table, run_long_spans
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.word_aligned import read_aligned_json

    rows = run_long_spans(
        [i for path in options.instances for i in read_instances(path)],
        [p for path in options.gold_pairs for p in read_aligned_json(path)],
        setup,
        AlignerConfig(encoder=options.encoder, k=options.k),
        options.kinds,
        options.out_dir,
        device=runtime.device,
    )
    print(format_table(rows))


@settings
class SyntheticOptions:
    lexicon: str = setting(help="lexicon JSON (frame -> lexical units, lemma.pos) or a FrameNet release")
    out: str = setting(help="span-alignment JSONL")
    conll: str | None = setting(None, "open-SESAME CoNLL with frame annotations (and PTB tags)")
    sentences: str | None = setting(None, "or imported sentences (SENTENCES Parquet, spanaug import)")
    per_span: int = setting(1, "rewrites per labelled span", minimum=1)
    seed: int = setting(0, "which units and perturbations are drawn")


@command("align", "synthetic", help="pre-training instances: FrameNet triggers rewritten as other units of their frame")
def synthetic(options: SyntheticOptions) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.training_data import synthetic_instances
    from spanaug.pipeline.framenet import read_lexicon

    if (options.conll is None) == (options.sentences is None):
        raise ConfigError("--conll or --sentences: one corpus of labelled triggers")
    lexicon = {frame: sorted(units) for frame, units in read_lexicon(options.lexicon).items()}
    if options.conll:
        from spanaug.pipeline.importers import read_conll

        rows = read_conll(options.conll)
    else:
        from spanaug.core import artifacts

        rows = artifacts.read_table(options.sentences, artifacts.SENTENCES).to_pylist()
    insts = synthetic_instances(
        ((r["tokens"], (r["span_start"], r["span_end"]), r["frame"], r["pos_tags"]) for r in rows),
        lexicon,
        per_span=options.per_span,
        seed=options.seed,
    )
    n = write_jsonl((i.as_json() for i in insts), options.out)
    log.info("%d synthetic span instances from %s", n, options.conll or options.sentences)


@settings
class MakeInstancesOptions:
    bitext: str = setting(help="paraphrase TSV: source<TAB>paraphrase")
    out: str = setting(help="span-alignment JSONL")
    pairs_out: str | None = setting(None, "also the diff's word alignments, as Edinburgh++ JSON")


@command("align", "make-instances", help="span instances from a paraphrase bitext's token differences")
def make_instances(options: MakeInstancesOptions) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import instances_from_bitext, iter_pairs_from_bitext

    prefix = Path(options.bitext).stem
    n = write_jsonl(
        (i.as_json() for i in instances_from_bitext(iter_pairs_from_bitext(options.bitext), prefix=prefix)), options.out
    )
    log.info("%d span instances from %s", n, options.bitext)
    if options.pairs_out:
        from spanaug.pipeline.aligner.word_aligned import pairs_from_bitext, write_aligned_json

        write_aligned_json(pairs_from_bitext(iter_pairs_from_bitext(options.bitext), prefix=prefix), options.pairs_out)


@settings
class ImportAlignedOptions:
    input: str = setting(help="a word-aligned corpus (Edinburgh++ JSON) or a span TSV")
    format: Literal["auto", "edinburgh", "tsv"] = setting("auto", "auto: by the file name (.tsv/.txt: tsv)")
    out: str = setting(help="span-alignment JSONL")
    null_share: float = setting(0.10, "share of instances with no counterpart", minimum=0, maximum=1)
    seed: int = setting(0, "which null instances are kept")
    phrases: Literal["minimal", "all"] = setting(
        "minimal", "Edinburgh++: minimal content-word phrases (the shared data's rule) or every consistent phrase pair"
    )


@command("align", "import-aligned", help="span instances from a word-aligned corpus or a span TSV")
def import_aligned(options: ImportAlignedOptions) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.word_aligned import import_instances

    if options.phrases == "all":
        from spanaug.core.aligner_settings import corpus_name
        from spanaug.pipeline.aligner.training_data import phrase_pair_instances
        from spanaug.pipeline.aligner.word_aligned import read_aligned_json

        insts = phrase_pair_instances(
            read_aligned_json(options.input),
            null_share=options.null_share,
            seed=options.seed,
            prefix=corpus_name(options.input),
        )
    else:
        insts = import_instances(options.input, options.format, null_share=options.null_share, seed=options.seed)
    n = write_jsonl((i.as_json() for i in insts), options.out)
    log.info(
        "%d span instances (%d with no counterpart) from %s",
        n,
        sum(i.target_span is None for i in insts),
        options.input,
    )
