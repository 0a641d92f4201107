"""``spanaug argid ...``: the downstream argument identifier (frame elements of a given trigger and frame)."""

from __future__ import annotations

from typing import Literal

from spanaug.cli.frameid import CurvesOptions
from spanaug.cli.options import command, emit, group
from spanaug.core.argid_settings import ArgIdTrainSettings, LostFes
from spanaug.core.config import Runtime
from spanaug.core.evaluation_settings import ArgIdSection
from spanaug.core.settings import inherit, setting, settings

group("argid", "the downstream argument identifier (frame elements, given the trigger and its frame)")

_FRAMENET_HELP = (
    "FrameNet release directory: each frame's FEs (decoding chooses among them) and their coreness "
    "(core FEs weigh 1, others 0.5 in the scores, as in open-SESAME); without it, the FEs seen with "
    "the frame in training, and coreness only where the input gives it"
)


def _annotations(paths: list[str]) -> list:
    from spanaug.downstream.argid.data import read_all

    return read_all(paths)


def _release(path: str | None) -> dict | None:
    if not path:
        return None
    from spanaug.downstream.argid.data import release_frames

    return release_frames(path)


@settings
class TrainOptions:
    train: list[str] = setting(help="open-SESAME CoNLL (column 15) or Parquet (sentences or augmented outputs)")
    out: str = setting(help="the model directory")
    encoder: str = inherit(ArgIdSection, "encoder")
    dev: str | None = setting(
        None,
        "dev annotations for early stopping: the best epoch on them is kept "
        "(default: --holdout-share of the training sentences)",
    )
    framenet: str | None = setting(None, _FRAMENET_HELP)


@command("argid", "train", help="train the argument identifier")
def train(options: TrainOptions, training: ArgIdTrainSettings, runtime: Runtime) -> None:
    from spanaug.core.modeldir import write_training_summary
    from spanaug.downstream.argid.training import train_argid

    model, summary = train_argid(
        _annotations(options.train),
        options.encoder,
        training,
        dev=_annotations([options.dev]) if options.dev else None,
        release=_release(options.framenet),
        device=runtime.device,
    )
    model.save_pretrained(options.out)
    write_training_summary(options.out, summary)


@settings
class EvalOptions:
    model: str = setting(help="a trained argument identifier directory")
    test: str = setting(help="test annotations (CoNLL or Parquet), with their gold frames and triggers")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")
    framenet: str | None = setting(None, "FrameNet release directory: the coreness of each frame's FEs for the scores")
    frames: Literal["gold", "predicted"] = setting(
        "gold",
        "gold: arguments of the gold triggers and frames; predicted: of the triggers and frames "
        "--frameid-model finds (the full parse: a wrong frame loses its FEs)",
    )
    frameid_model: str | None = setting(None, "a trained Frame ID directory (with --frames predicted)")


@command("argid", "eval", help="precision, recall and F1 of (role, span), with gold or predicted frames")
def evaluate(options: EvalOptions, runtime: Runtime) -> None:
    from spanaug.core.errors import ConfigError
    from spanaug.downstream.argid.model import ArgumentIdentifier
    from spanaug.downstream.argid.scoring import argument_scores

    if (options.frames == "predicted") != bool(options.frameid_model):
        raise ConfigError("--frameid-model goes with --frames predicted, and --frames predicted needs it")
    if options.frameid_model:  # both folders' kinds before either model's weights load
        from spanaug.downstream.frameid.model import FrameIdentifier

        FrameIdentifier.check_folder(options.frameid_model)
    test = _annotations([options.test])
    model = ArgumentIdentifier.from_pretrained(options.model, device=runtime.device)
    inventory = model.inventory
    release = _release(options.framenet)
    if release:
        inventory.coreness = {**inventory.coreness, **release}
    if options.frames == "gold":
        emit(argument_scores(test, model.predict(test), inventory), options.out)
        return
    from spanaug.downstream.argid.parse import frame_sentences, paired, predicted_annotations
    from spanaug.downstream.frameid.baseline import triple_scores
    from spanaug.downstream.frameid.model import FrameIdentifier

    sentences, keys = frame_sentences(test)
    frames = FrameIdentifier.from_pretrained(options.frameid_model, device=runtime.device).predict(sentences)
    found = predicted_annotations(keys, frames, test)
    scores = argument_scores(*paired(test, found, model.predict(found)), inventory)
    emit({**scores, "frames": "predicted", "frame_id": triple_scores(sentences, frames)}, options.out)


@settings
class PredictOptions:
    model: str = setting(help="a trained argument identifier directory")
    input: str = setting(help="sentences with their triggers and frames (CoNLL or Parquet; their FEs are ignored)")
    out: str = setting(help="the predictions: open-SESAME CoNLL when it ends in .conll, else JSON lines")


@command("argid", "predict", help="label each trigger's frame elements")
def predict(options: PredictOptions, runtime: Runtime) -> None:
    from spanaug.core.files import atomic_path, write_jsonl
    from spanaug.downstream.argid.data import conll_lines, prediction_record
    from spanaug.downstream.argid.model import ArgumentIdentifier

    annotations = _annotations([options.input])
    model = ArgumentIdentifier.from_pretrained(options.model, device=runtime.device)
    predicted = model.predict(annotations)
    if not options.out.endswith(".conll"):
        write_jsonl((prediction_record(a, p) for a, p in zip(annotations, predicted)), options.out)
        return
    numbers: dict[str | None, int] = {}
    with atomic_path(options.out, ".conll") as tmp, open(tmp, "w", encoding="utf-8") as out:
        for a, p in zip(annotations, predicted):
            number = numbers.setdefault(a.sentence, len(numbers))
            out.write("\n".join(conll_lines(a, p, number)) + "\n\n")


@settings
class BaselineOptions:
    train: list[str] = setting(help="training annotations")
    test: str = setting(help="test annotations")
    out: str | None = setting(None, "the scores (JSON; default: standard output)")
    framenet: str | None = setting(None, "FrameNet release directory: the coreness of each frame's FEs for the scores")


@command("argid", "baseline", help="each frame's most frequent roles at their most frequent places")
def baseline(options: BaselineOptions) -> None:
    from spanaug.downstream.argid.data import Inventory
    from spanaug.downstream.argid.scoring import MostFrequentRoleBaseline, argument_scores

    train, test = _annotations(options.train), _annotations([options.test])
    inventory = Inventory.build(train, _release(options.framenet))
    emit(argument_scores(test, MostFrequentRoleBaseline().fit(train).predict(test), inventory), options.out)


@settings
class PointOptions:
    train: list[str] = setting(help="the pool of training annotations to sample sentences from (CoNLL or Parquet)")
    test: str = setting(help="the fixed test split (CoNLL or Parquet)")
    out: str = setting(help="the point's result (JSON)")
    fraction: float = setting(help="share of the pool's sentences", exclusiveMinimum=0, maximum=1)
    augmenter: Literal["none", "paraphrastic", "lexsub"] = setting(
        "none",
        "whose examples of the sampled sentences are added, with the FEs they carry "
        "(--examples; none: no augmentation)",
    )
    dev: str | None = setting(None, "dev annotations for early stopping (default: --holdout-share of the sample)")
    examples: str | None = setting(
        None, "the augmenter's examples (EXAMPLES Parquet: spanaug augment paraphrastic|lexsub)"
    )
    lost_fes: LostFes = inherit(ArgIdSection, "lost_fes")
    encoder: str = inherit(ArgIdSection, "encoder")
    framenet: str | None = setting(None, _FRAMENET_HELP)


def _point_dev(path: str | None) -> list | None:
    """The dev annotations; None (the sample's held-out share) for an empty Parquet dev part, as
    ``frameid split`` writes with ``dev_share: 0``."""
    if not path:
        return None
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        if pq.ParquetFile(path).metadata.num_rows == 0:
            return None
    return _annotations([path])


@command(
    "argid",
    "point",
    help="one point of the augmenter comparison for arguments: a sample (--fraction, drawn by --seed), "
    "plus the augmenter's examples of it, trained and scored on the test split",
)
def point(options: PointOptions, training: ArgIdTrainSettings, runtime: Runtime) -> None:
    from spanaug.core import artifacts
    from spanaug.downstream.argid.experiment import ArgIdPointData, run_argid_point
    from spanaug.downstream.augmenter_comparison import Point

    def table(path: str | None, schema) -> list | None:
        return artifacts.read_table(path, schema).to_pylist() if path else None

    data = ArgIdPointData(
        pool=_annotations(options.train),
        test=_annotations([options.test]),
        dev=_point_dev(options.dev),
        examples=table(options.examples, artifacts.EXAMPLES),
        release=_release(options.framenet),
        lost_fes=options.lost_fes,
    )
    result = run_argid_point(
        Point(options.augmenter, options.fraction, training.seed), data, options.encoder, training, runtime.device
    )
    emit(result, options.out)


@command("argid", "curves", help="average point results over seeds: table and figure (as frameid curves)")
def curves(options: CurvesOptions) -> None:
    from spanaug.downstream.argid.experiment import YLABEL
    from spanaug.downstream.augmenter_comparison import curves_stage

    curves_stage(options.points, options.out_table, options.out_plot, YLABEL)
