"""``spanaug paraphrase``: one iteration's constrained decoding; ``spanaug paraphraser train``: the paper's
paraphraser trained on a bitext, or a pretrained one fine-tuned on it; ``spanaug paraphraser bitext``: a
bitext made of word-aligned corpora."""

from __future__ import annotations

import logging

from spanaug.cli.options import command, group, parse_settings
from spanaug.core.config import DecodeSettings, ParaphraserTrainSettings, Runtime
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)

group("paraphraser", "the paper's paraphraser, or a pretrained one fine-tuned")


@settings
class ParaphraseOptions:
    requests: str = setting(help="a REQUESTS shard")
    out: str = setting(help="the PARAPHRASES shard to write")
    stats: str | None = setting(None, "decoding statistics (JSON): outputs, constraint violations dropped")


@command("paraphrase", help="constrained decoding: requests -> paraphrases")
def paraphrase(options: ParaphraseOptions, decode: DecodeSettings, runtime: Runtime) -> None:
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    paraphrase_stage(options.requests, options.out, decode, runtime.device, stats_path=options.stats)


#: What ``--paraphrase`` is for, in the help of the commands that take it.
PARAPHRASE_HELP = (
    "spanaug paraphrase's settings, as its options (--prefix 'paraphrase: ', --prompt ..., --few-shot FILE, "
    "--dtype ...): the prefix a seq2seq model is trained with, the prompt a decoder-only model is fine-tuned on, "
    "and the held-out decoding (its beam is --heldout-beam's)"
)


@settings
class ParaphraserOptions:
    out: str = setting(help="the model directory (save_pretrained); a rerun resumes from its last checkpoint")
    paraphrase: str = setting("", PARAPHRASE_HELP)


@command("paraphraser", "train", help="train SentencePiece + Transformer on a bitext TSV, or fine-tune --init on it")
def train(options: ParaphraserOptions, train: ParaphraserTrainSettings, runtime: Runtime) -> None:
    from spanaug.pipeline.paraphraser.training import train_paraphraser

    (decode,) = parse_settings(options.paraphrase, [DecodeSettings], "--paraphrase")
    train_paraphraser(train, options.out, device=runtime.device, decode=decode)


@settings
class EvaluateOptions:
    model: str = setting(help="the paraphraser to score: as paraphraser.model (a folder, hub id, .gguf file, gguf:...)")
    bitext: str = inherit(ParaphraserTrainSettings, "bitext", help="the bitext whose held-out pairs score it")
    out: str | None = setting(None, "the metrics (JSON; default: printed)")
    heldout_share: float = inherit(ParaphraserTrainSettings, "heldout_share")
    heldout_decode: int = inherit(ParaphraserTrainSettings, "heldout_decode")
    heldout_beam: int = inherit(ParaphraserTrainSettings, "heldout_beam")
    paraphrase: str = setting("", PARAPHRASE_HELP)


@command(
    "paraphraser",
    "evaluate",
    help="held-out chrF and BLEU of any paraphraser on the pairs paraphraser train holds out (e.g. a prompted LM)",
)
def evaluate(options: EvaluateOptions, runtime: Runtime) -> None:
    from spanaug.cli.options import emit
    from spanaug.core.bitext import read_bitext
    from spanaug.pipeline.paraphraser import heldout
    from spanaug.pipeline.paraphraser.bitext import split_heldout

    (decode,) = parse_settings(options.paraphrase, [DecodeSettings], "--paraphrase")
    _, held = split_heldout(read_bitext(options.bitext), options.heldout_share)
    metrics = heldout.evaluate(
        options.model, held, decode, options.heldout_beam, options.heldout_decode, device=runtime.device
    )
    log.info("%s held out: %s", options.model, heldout.describe(metrics))
    emit({"model": options.model, **metrics}, options.out)


@settings
class BitextOptions:
    files: list[str] = setting(
        help="word-aligned corpora in the Edinburgh++ JSON format (e.g. ../shared/data/*train.gold.json)", minItems=1
    )
    out: str = setting(help="the bitext to write: source<TAB>paraphrase lines")
    detokenize: bool = setting(True, "join the corpora's tokens into plain text (false: keep them space-separated)")


@command("paraphraser", "bitext", help="a paraphrase bitext (TSV) of word-aligned corpora's sentence pairs")
def bitext(options: BitextOptions) -> None:
    from spanaug.pipeline.paraphraser.bitext import pairs_from_aligned, write_bitext

    pairs, counts = pairs_from_aligned(options.files, detok=options.detokenize)
    write_bitext(pairs, options.out)
    for path, n in counts.items():
        log.info("%s: %d pairs", path, n)
    log.info("%s: %d sentence pairs (copies and repeats left out)", options.out, len(pairs))
