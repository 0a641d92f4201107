"""``spanaug align ...``: the span aligner (train, predict, evaluate, the align stage, ablations, data)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from spanaug.cli.options import command, emit, group
from spanaug.core.config import (
    AblationSettings,
    AlignerConfig,
    AlignerSection,
    AlignerTrainSection,
    Runtime,
    inherit,
    setting,
    settings,
)

log = logging.getLogger(__name__)
group("align", "the discriminative span aligner")


@settings
class TrainFiles:
    out: str = setting(help="the trained aligner's directory")
    encoder: str = inherit(AlignerConfig, "encoder")


@command("align", "train", help="train the span aligner (instances, or a bitext's token differences)")
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
    aligner, summary = train_aligner(instances, train.architecture(files.encoder), train, dev=dev,
                                     device=runtime.device, extra=extra)
    aligner.save_pretrained(files.out)
    write_json(summary, Path(files.out) / "training_summary.json")


@settings
class PredictFiles:
    model: str = setting(help="a trained aligner directory")
    instances: str = setting(help="span-alignment JSONL")
    out: str = setting(help="predictions JSONL: {id, target_span, score}")


@command("align", "predict", help="predict target spans")
def predict(files: PredictFiles, runtime: Runtime) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.instances import read_instances
    from spanaug.pipeline.aligner.model import SpanAligner

    aligner = SpanAligner.from_pretrained(files.model, device=runtime.device)
    insts = read_instances(files.instances)
    preds = aligner.predict(insts, progress=True)
    write_jsonl(({"id": i.id, "target_span": list(s) if s else None, "score": sc}
                 for i, (s, sc) in zip(insts, preds)), files.out)


@settings
class EvalFiles:
    gold: str = setting(help="span-alignment JSONL with gold target spans")
    pred: str = setting(help="predictions JSONL (align predict)")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")


@command("align", "eval", help="soft and exact span precision, recall and F1")
def evaluate(files: EvalFiles) -> None:
    from spanaug.core.errors import InputError
    from spanaug.core.metrics import span_metrics
    from spanaug.pipeline.aligner.instances import read_instances, read_predictions

    gold = read_instances(files.gold)
    preds = read_predictions(files.pred, {g.id: len(g.target_tokens) for g in gold})
    missing = [g.id for g in gold if g.id not in preds]
    if missing:
        raise InputError(files.pred, None, f"no prediction for {len(missing)} gold instance(s), e.g. {missing[0]!r}")
    emit(span_metrics([g.target_span for g in gold], [preds[g.id][0] for g in gold]), files.out)


@settings
class AlignStageFiles:
    model: str = setting(help="a trained aligner directory")
    paraphrases: str = setting(help="a PARAPHRASES shard")
    out: str = setting(help="the ALIGNED shard to write")
    stats: str | None = setting(None, "alignment statistics (JSON): beams aligned and not, pairs over the encoder's "
                                      "limit, whether the shard is empty")
    encoder: str | None = setting(None, "override the encoder saved with the model")
    batch_size: int = inherit(AlignerSection, "batch_size")


@command("align", "paraphrases", help="pipeline stage: align every beam of a paraphrases shard")
def align_paraphrases(files: AlignStageFiles, runtime: Runtime) -> None:
    from spanaug.pipeline.aligner.stage import align_stage

    align_stage(files.model, files.paraphrases, files.out, encoder=files.encoder, device=runtime.device,
                batch_size=files.batch_size, stats_path=files.stats)


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
    summary = run_ablation(read_instances(evaluation.data), evaluation, AlignerConfig(encoder=files.encoder, k=files.k),
                           files.out_dir, device=runtime.device, systems=files.systems or None,
                           extra_instances=read_instances(files.extra_instances) if files.extra_instances else ())
    for row in summary["table"]:
        log.info("%-20s soft F1 %.3f  exact F1 %.3f", row["system"], row["soft_f1"], row["exact_f1"])


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
    n = write_jsonl((i.as_json() for i in instances_from_bitext(iter_pairs_from_bitext(files.bitext), prefix=prefix)),
                    files.out)
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


@command("align", "import-aligned", help="span instances from a word-aligned corpus or a span TSV")
def import_aligned(files: ImportAlignedFiles) -> None:
    from spanaug.core.files import write_jsonl
    from spanaug.pipeline.aligner.word_aligned import import_instances

    insts = import_instances(files.input, files.format, null_share=files.null_share, seed=files.seed)
    n = write_jsonl((i.as_json() for i in insts), files.out)
    log.info("%d span instances (%d with no counterpart) from %s", n, sum(i.target_span is None for i in insts),
             files.input)
