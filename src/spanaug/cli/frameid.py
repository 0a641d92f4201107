"""``spanaug frameid ...``: the downstream Frame ID model and the augmenter comparison (Figure 8)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Literal

from spanaug.cli.options import command, emit, group
from spanaug.core.config import Runtime
from spanaug.core.evaluation_settings import FrameIdSection, FrameIdTrainSettings, GecaSettings, SplitSettings
from spanaug.core.settings import inherit, setting, settings

log = logging.getLogger(__name__)
group("frameid", "the downstream Frame ID model")


def _sentences(paths: list[str]) -> list:
    from spanaug.downstream.frameid.data import read_sentences

    return read_sentences(paths)


def _lexicon(path: str | None) -> dict | None:
    """Frame -> LUs from a lexicon JSON or a FrameNet release (None when unset)."""
    if not path:
        return None
    from spanaug.pipeline.framenet import read_lexicon

    return read_lexicon(path)


@settings
class TrainOptions:
    train: list[str] = setting(help="open-SESAME CoNLL or Parquet (sentences, augmented outputs or examples)")
    out: str = setting(help="the model directory")
    encoder: str = inherit(FrameIdSection, "encoder")
    dev: str | None = setting(
        None,
        "dev sentences for early stopping: the best epoch on them is kept "
        "(default: --holdout-share of the training sentences)",
    )
    glove: str | None = setting(None, "GloVe-format word vectors")
    lexicon: str | None = inherit(
        FrameIdSection,
        "lexicon",
        help="lexicon JSON or FrameNet release: each span also "
        "chooses among the frames its lemma can evoke (without it, only among the "
        "frames its text or lemma had as a training trigger)",
    )


@command("frameid", "train", help="train the Frame ID model")
def train(options: TrainOptions, training: FrameIdTrainSettings, runtime: Runtime) -> None:
    from spanaug.core.modeldir import write_training_summary
    from spanaug.downstream.frameid.training import train_frameid

    model, summary = train_frameid(
        _sentences(options.train),
        options.encoder,
        training,
        dev=_sentences([options.dev]) if options.dev else None,
        glove=options.glove,
        device=runtime.device,
        lexicon=_lexicon(options.lexicon),
    )
    model.save_pretrained(options.out)
    write_training_summary(options.out, summary)


@settings
class EvalOptions:
    model: str = setting(help="a trained Frame ID directory")
    test: str = setting(help="test sentences (CoNLL or Parquet)")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")


@command("frameid", "eval", help="precision, recall and F1 over (sentence, span, frame) triples")
def evaluate(options: EvalOptions, runtime: Runtime) -> None:
    from spanaug.downstream.frameid.baseline import triple_scores
    from spanaug.downstream.frameid.model import FrameIdentifier

    test = _sentences([options.test])
    model = FrameIdentifier.from_pretrained(options.model, device=runtime.device)
    emit(triple_scores(test, model.predict(test)), options.out)


@settings
class BaselineOptions:
    train: list[str] = setting(help="training sentences")
    test: str = setting(help="test sentences")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")


@command("frameid", "baseline", help="most frequent frame per trigger string")
def baseline(options: BaselineOptions) -> None:
    from spanaug.downstream.frameid.baseline import LexiconBaseline, triple_scores

    test = _sentences([options.test])
    emit(triple_scores(test, LexiconBaseline().fit(_sentences(options.train)).predict(test)), options.out)


@settings
class SplitOptions:
    out_dir: str = setting(help="train/dev/test files")
    conll: str | None = setting(None, "open-SESAME CoNLL: writes train/dev/test.conll (contiguous sentence ranges)")
    sentences: str | None = setting(None, "imported sentences Parquet: writes train/dev/test.parquet (documents)")


@command("frameid", "split", help="train/dev/test CoNLL (contiguous sentence ranges) or Parquet (documents)")
def split(options: SplitOptions, split: SplitSettings) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.downstream.frameid.data import split_conll, split_sentences

    if (options.conll is None) == (options.sentences is None):
        raise ConfigError("give exactly one of --conll and --sentences")
    if options.conll:
        emit(split_conll(options.conll, options.out_dir, split), None)
    else:
        emit(split_sentences(options.sentences, options.out_dir, split), None)


@settings
class PointOptions:
    train: list[str] = setting(help="the pool of training sentences to sample from")
    test: str = setting(help="the fixed test split")
    out: str = setting(help="the point's result (JSON)")
    fraction: float = setting(help="share of the training sentences", exclusiveMinimum=0, maximum=1)
    seed: int = setting(0, "the sample's and the training's seed")
    augmenter: Literal["none", "paraphrastic", "lexsub", "geca"] = setting(
        "none", "whose examples are added (none: no augmentation)"
    )
    dev: str | None = setting(None, "dev sentences for early stopping (default: --holdout-share of the sample)")
    examples: str | None = setting(None, "the augmenter's EXAMPLES Parquet (paraphrastic, lexsub)")
    geca_window: int = inherit(GecaSettings, "window")
    encoder: str = inherit(FrameIdSection, "encoder")
    lexicon: str | None = inherit(FrameIdSection, "lexicon")
    epochs: int = inherit(FrameIdTrainSettings, "epochs")
    batch_size: int = inherit(FrameIdTrainSettings, "batch_size")
    learning_rate: float = inherit(FrameIdTrainSettings, "learning_rate")
    patience: int = inherit(FrameIdTrainSettings, "patience")
    holdout_share: float = inherit(FrameIdTrainSettings, "holdout_share")
    refit: bool = inherit(FrameIdTrainSettings, "refit")
    threads: int = inherit(FrameIdTrainSettings, "threads")

    def training(self) -> FrameIdTrainSettings:
        """The training settings among these options (the seed is the point's)."""
        names = {f.name for f in dataclasses.fields(FrameIdTrainSettings)}
        return FrameIdTrainSettings(**{n: getattr(self, n) for n in names})


@command("frameid", "point", help="one point of the augmenter comparison (Figure 8)")
def point(options: PointOptions, runtime: Runtime) -> None:
    from spanaug.core import artifacts
    from spanaug.downstream.augmenter_comparison import Point, PointData, run_point

    data = PointData(
        pool=_sentences(options.train),
        test=_sentences([options.test]),
        dev=_sentences([options.dev]) if options.dev else None,
        examples=artifacts.read_table(options.examples, artifacts.EXAMPLES).to_pylist() if options.examples else None,
        lexicon=_lexicon(options.lexicon),
    )
    result = run_point(
        Point(options.augmenter, options.fraction, options.seed),
        data,
        options.encoder,
        options.training(),
        geca=GecaSettings(window=options.geca_window),
        device=runtime.device,
    )
    emit(result, options.out)


@settings
class CurvesOptions:
    points: list[str] = setting(help="point results (JSON)")
    out_table: str = setting(help="F1 mean and s.d. per augmenter and share (CSV)")
    out_plot: str = setting(help="the curves (PNG)")


@command("frameid", "curves", help="average point results over seeds: table and figure")
def curves(options: CurvesOptions) -> None:
    from spanaug.downstream.augmenter_comparison import curves_stage

    for row in curves_stage(options.points, options.out_table, options.out_plot):
        log.info(
            "%-14s %5.0f%%: F1 %.3f +- %.3f (%d seeds)",
            row["augmenter"],
            100 * row["fraction"],
            row["f1_mean"],
            row["f1_std"],
            row["seeds"],
        )
