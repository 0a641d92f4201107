"""Settings of the span aligner (both kinds, training, evaluation) and of the word-alignment baselines.

Part of the run configuration (``core.config``): each default, help and bound is written here once.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Literal

from spanaug.core.settings import Settings, inherit, setting, settings

# ---------------------------------------------------------------- the span aligner


def corpus_name(path: Path | str) -> str:
    """A word-aligned corpus's name: its file name up to the first dot. It prefixes the ids of the
    instances made from it and names the file of them a run makes, so two corpora must not share it."""
    return Path(path).name.split(".")[0]


@settings
class AlignerConfig(Settings):
    """The paper aligner's architecture, saved with a trained one (``config.json``)."""

    # Directories saved before this field have no kind; they load as the paper's (pipeline.aligner.loading).
    kind: Literal["paper"] = setting("paper", "the aligner kind (tells a saved model directory's kind)")
    encoder: str = setting(
        "bert-base-cased",
        "the frozen encoder: a hub name or path ('minilm': the offline all-MiniLM-L6-v2)",
        names="encoder",
    )
    features: list[Literal["df", "mx", "cue"]] = setting(
        factory=lambda: ["df", "mx", "cue"],
        help="span-pair features: Df (difference), Mx (maximum), Cue (positions)",
        minItems=1,
        uniqueItems=True,
    )
    loss: Literal["soft", "hard"] = setting("soft", "soft: SBCE labels 2^-distance; hard: 1 for the gold span only")
    k: int = setting(5, "candidate spans differ from the source span's length by at most k tokens", minimum=0)
    hidden: int = setting(770, "units of the scorer's hidden layer", minimum=1)
    # Not in the paper: on Edinburgh++ with MiniLM it raised held-out soft F1 from 0.649 to 0.694.
    normalize_spans: bool = setting(
        True, "L2-normalise span vectors before the features (not in the paper; false reproduces it)"
    )
    finetune_layers: int = setting(
        0, "tune the encoder's top N layers with the scorer (0: frozen, as in the paper)", minimum=0
    )
    max_length: int = setting(512, "encoder input limit in word pieces", minimum=8)
    threshold: float = setting(
        0.0, "aligner score under which a span has no alignment (tuned on dev data)", minimum=0, maximum=1
    )
    threshold_source: str = setting("untuned", "how the threshold was set (dev, held-out pairs or untuned)")
    encoder_dim: int = setting(0, "the encoder's hidden size (set when the aligner is built)", minimum=0)


@settings
class AlignerTrainSettings(Settings):
    """How the aligner is trained (``spanaug align train``)."""

    epochs: int = setting(10, "training epochs", minimum=1)
    batch_size: int = setting(32, "training instances per step", minimum=1)
    learning_rate: float = setting(1e-3, "the scorer's learning rate", exclusiveMinimum=0)
    encoder_learning_rate: float = setting(
        2e-5, "learning rate of the tuned encoder layers (finetune_layers)", exclusiveMinimum=0
    )
    seed: int = setting(0, "training seed")
    threshold_holdout: float = setting(
        0.1,
        "without dev data, this share of the training pairs is held out to tune the null threshold (0: never null)",
        minimum=0,
        exclusiveMaximum=1,
    )
    refit_after_holdout: bool = setting(False, "then train again on all pairs, keeping the threshold")


@settings
class CrossAlignerConfig(Settings):
    """The cross-encoder span aligner (``aligner.kind: cross``), saved with a trained one (``config.json``)."""

    kind: Literal["cross"] = setting("cross", "the aligner kind (tells a saved model directory's kind)")
    encoder: str = inherit(AlignerConfig, "encoder", help="the encoder tuned with the span head ('minilm': offline)")
    k: int = inherit(AlignerConfig, "k")
    max_length: int = inherit(AlignerConfig, "max_length")
    markers: list[str] = setting(factory=lambda: ["[S]", "[/S]"], help="tokens around the span", minItems=2, maxItems=2)
    marker_init: list[str] | None = setting(factory=lambda: ["[", "]"], help="tokens initialising the markers")
    pooling: Literal["first", "mean"] = setting("first", "a word's vector: its first piece's, or its pieces' mean")
    loss: Literal["soft", "hard"] = setting("soft", "soft: cross-entropy against normalised 2^-distance labels; hard")
    tune_layers: int | None = setting(None, "tune only the encoder's top N layers (null: all, end to end)", minimum=0)
    head_dim: int = setting(256, "units of the span head", minimum=1)
    threshold: float = setting(0.5, "null when the null option's probability reaches this (tuned)", minimum=0)
    threshold_source: str = inherit(AlignerConfig, "threshold_source")
    temperature: float = setting(1.0, "softmax temperature of the scores (fitted on held-out data)", exclusiveMinimum=0)
    temperature_source: str = setting("untuned", "how the temperature was set")
    calibration: list[float] | None = setting(
        None,
        "Platt scaling [a, b] of the chosen span's log-odds against exact "
        "correctness (fitted on held-out data; null: none)",
        minItems=2,
        maxItems=2,
    )
    encoder_dim: int = inherit(AlignerConfig, "encoder_dim")


@settings
class CrossTrainSettings(Settings):
    """How the cross aligner is trained."""

    epochs: int = setting(5, "training epochs (the best on the held-out pairs is kept)", minimum=1)
    batch_size: int = setting(16, "training instances per step", minimum=1)
    learning_rate: float = setting(5e-5, "learning rate of the encoder's tuned parameters", exclusiveMinimum=0)
    head_learning_rate: float = setting(1e-3, "learning rate of the span head", exclusiveMinimum=0)
    warmup: float = setting(0.1, "share of the steps warming up linearly (then linear decay)", minimum=0, maximum=1)
    weight_decay: float = setting(0.01, "AdamW weight decay", minimum=0)
    max_grad_norm: float = setting(1.0, "gradient clipping norm", exclusiveMinimum=0)
    seed: int = setting(0, "training seed")
    threshold_holdout: float = inherit(AlignerTrainSettings, "threshold_holdout")
    select_on: Literal["exact_f1", "soft_f1"] = setting("exact_f1", "held-out metric that chooses the epoch")
    tune_threshold_on: Literal["exact_f1", "soft_f1"] = setting("soft_f1", "held-out metric the threshold maximises")
    null_share_tolerance: float | None = setting(
        0.01,
        "the threshold maximises tune_threshold_on among those whose share of null answers on the "
        "held-out data is within this of the gold share (the nearest share when none is; null: any share)",
        minimum=0,
        maximum=1,
    )
    calibrate: bool = setting(
        True,
        "fit the softmax temperature (least NLL) and the score's Platt scaling (against "
        "exact correctness) on the held-out data",
    )
    max_minutes: float | None = setting(None, "stop after this many minutes (null: no limit)", exclusiveMinimum=0)
    prefix_cache_dir: str | None = setting(None, "tune_layers N: keep the frozen layers' outputs here (null: no)")
    pretrain_epochs: int = setting(1, "epochs over pre-training instances (align synthetic) first", minimum=1)


@settings
class CrossTrainSection(CrossTrainSettings):
    """Config section ``aligner.train.cross``: training and architecture of the cross aligner."""

    pooling: Literal["first", "mean"] = inherit(CrossAlignerConfig, "pooling")
    loss: Literal["soft", "hard"] = inherit(CrossAlignerConfig, "loss")
    tune_layers: int | None = inherit(CrossAlignerConfig, "tune_layers")
    head_dim: int = inherit(CrossAlignerConfig, "head_dim")

    def architecture(self, encoder: str, k: int) -> CrossAlignerConfig:
        return CrossAlignerConfig(
            encoder=encoder,
            k=k,
            pooling=self.pooling,
            loss=self.loss,
            tune_layers=self.tune_layers,
            head_dim=self.head_dim,
        )

    def training(self) -> CrossTrainSettings:
        return CrossTrainSettings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(CrossTrainSettings)})


# A setting naming files: a list in the config, where one file may also be written as a string (the
# form configs used before lists; ``as_files`` turns either into the list the code reads).
def files_schema() -> dict[str, object]:
    """The schema bound of such a setting (a fresh list each time, so the schema file has no YAML aliases)."""
    return {"type": ["array", "string", "null"]}


def as_files(value: str | list[str] | None) -> list[str]:
    """A files setting as a list: a single path (older configs) becomes a list of one; null, none."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


#: The settings of ``aligner.train`` that name files and take one path or a list.
TRAIN_FILE_LISTS = ("instances", "dev", "phrase_pairs", "word_aligned", "word_aligned_dev")


@settings
class AlignerTrainSection(AlignerTrainSettings):
    """Config section ``aligner.train``: the training data and the architecture to train."""

    instances: list[str] = setting(
        factory=list,
        help="span-alignment JSONL {id, source_tokens, target_tokens, source_span, target_span} (inclusive "
        "indices): one file or a list",
        **files_schema(),
    )
    bitext: str | None = setting(None, "or a paraphrase TSV whose token differences give the instances")
    dev: list[str] = setting(
        factory=list, help="span-alignment JSONL to tune the null threshold on: one file or a list", **files_schema()
    )
    word_aligned: list[str] = setting(
        factory=list,
        help="word-aligned corpora (Edinburgh++ JSON): the run makes their span instances (align "
        "import-aligned) and trains on them, and on their phrase pairs with word_aligned_phrases",
        **files_schema(),
    )
    word_aligned_dev: list[str] = setting(
        factory=list,
        help="word-aligned corpora whose span instances join the dev instances (tuning only)",
        **files_schema(),
    )
    word_aligned_phrases: bool = setting(
        True, "also train on every consistent phrase pair of the word_aligned corpora (as phrase_pairs)"
    )
    extra_instances: list[str] = setting(
        factory=list, help="more span-alignment JSONL added to training (e.g. composed along paraphrase chains)"
    )
    reversed: bool = setting(False, "also train on every training instance read backwards (target -> source)")
    phrase_pairs: list[str] = setting(
        factory=list,
        help="the training instances' word-aligned pairs (Edinburgh++ JSON; one file or a list): also "
        "train on every consistent phrase pair of a training pair",
        **files_schema(),
    )
    bitext_phrases: bool = setting(
        False,
        "bitext: also train on every consistent phrase pair of its token-difference alignment (made in the "
        "run; the phrase_* settings apply): with phrase_keep_identical, copies for frame elements",
    )
    phrase_max_len: int = setting(4, "phrase pairs: longest source phrase", minimum=1)
    phrase_max_per_pair: int | None = setting(
        None, "phrase pairs: a seeded sample of N per sentence pair (null: all)", minimum=1
    )
    phrase_keep_identical: bool = setting(False, "phrase pairs: keep phrases copied unchanged")
    pretrain: list[str] = setting(
        factory=list, help="kind cross: span-alignment JSONL trained on first (e.g. spanaug align synthetic)"
    )
    synthetic_lexicon: str | None = setting(
        None,
        "kind cross: also pre-train on the imported sentences' triggers "
        "rewritten as other units of their frame in this lexicon (JSON or "
        "FrameNet release; spanaug align synthetic); null: off",
        names="lexicon",
    )
    features: list[Literal["df", "mx", "cue"]] = inherit(AlignerConfig, "features")
    loss: Literal["soft", "hard"] = inherit(AlignerConfig, "loss")
    k: int = inherit(AlignerConfig, "k")
    normalize_spans: bool = inherit(AlignerConfig, "normalize_spans")
    finetune_layers: int = inherit(AlignerConfig, "finetune_layers")
    cross: CrossTrainSection | None = setting(factory=CrossTrainSection, help="aligner.kind cross: its training")

    def __post_init__(self) -> None:
        for name in TRAIN_FILE_LISTS:
            setattr(self, name, as_files(getattr(self, name)))
        super().__post_init__()

    def phrase_sources(self) -> list[str]:
        """The word-aligned files whose phrase pairs are trained on: phrase_pairs, and the word_aligned
        corpora when word_aligned_phrases says so."""
        return [*self.phrase_pairs, *(self.word_aligned if self.word_aligned_phrases else [])]

    def architecture(self, encoder: str) -> AlignerConfig:
        """The aligner to train on ``encoder``."""
        return AlignerConfig(
            encoder=encoder,
            features=list(self.features),
            loss=self.loss,
            k=self.k,
            normalize_spans=self.normalize_spans,
            finetune_layers=self.finetune_layers,
        )


@settings
class AblationSettings(Settings):
    """The aligner's held-out evaluation: Table 2, Figures 4-5, §4.6 (config: ``aligner.evaluation``)."""

    data: str | None = setting(
        None, "span-alignment JSONL, split by sentence pair (null: the instances made from aligner.train.bitext)"
    )
    epochs: int = inherit(AlignerTrainSettings, "epochs")
    seed: int = setting(0, "split and training seed")
    dev_share: float = setting(
        0.1, "share of the sentence pairs held out as dev (the null threshold)", minimum=0, exclusiveMaximum=1
    )
    test_share: float = setting(
        0.2, "share of the sentence pairs held out as test", exclusiveMinimum=0, exclusiveMaximum=1
    )
    finetune_layers: int = setting(0, "> 0: add a row with the encoder's top N layers tuned", minimum=0)
    extra_reversed: bool = setting(False, "add a row trained with reversed instances too")


#: A row of ``spanaug align systems``: the one list of their names (``evaluation.aligner_systems.SYSTEMS``
#: says how each is trained).
AlignerSystem = Literal[
    "paper",
    "paper-untuned",
    "paper-holdout",
    "paper-holdout-refit",
    "paper+phrases",
    "paper+reversed",
    "cross",
    "cross-holdout",
    "cross+phrases",
    "cross+reversed",
    "cross+chains",
    "cross+synthetic",
    "cross+phrases+reversed",
    "cross+reversed+synthetic",
    "cross+all",
]
ALIGNER_SYSTEMS: tuple[str, ...] = typing.get_args(AlignerSystem)


@settings
class AlignerSystemsSettings(Settings):
    """Aligner kinds and data sources on one held-out split (``aligner.systems``; ``spanaug align systems``)."""

    data: str | None = setting(None, "span-alignment JSONL, split by pair (null: as aligner.evaluation.data)")
    rows: list[AlignerSystem] = setting(
        factory=lambda: ["paper", "paper-holdout", "cross"],
        help="systems to train and test",
        minItems=1,
        uniqueItems=True,
    )
    gold_pairs: str | None = setting(None, "the instances' word-aligned pairs (Edinburgh++ JSON): phrases, chains rows")
    synthetic: str | None = setting(None, "pre-training instances (spanaug align synthetic): the synthetic rows")
    epochs: int = inherit(AlignerTrainSettings, "epochs", help="the paper aligner's training epochs")
    seed: int = setting(0, "split and training seed")
    dev_share: float = inherit(AblationSettings, "dev_share")
    test_share: float = inherit(AblationSettings, "test_share")
    phrase_max_len: int = inherit(AlignerTrainSection, "phrase_max_len")
    phrase_max_per_pair: int | None = inherit(AlignerTrainSection, "phrase_max_per_pair")
    phrase_keep_identical: bool = inherit(AlignerTrainSection, "phrase_keep_identical")
    cross: CrossTrainSection | None = setting(None, "the cross rows' training (null: aligner.train.cross)")


@settings
class CrossDomainSettings(Settings):
    """One aligner recipe trained on each word-aligned corpus alone and on all of them, tested on each
    corpus's held-out pairs (``aligner.cross_domain``; ``spanaug align cross-domain``)."""

    corpora: dict[str, str] = setting(
        factory=dict, help="name -> a word-aligned training corpus (Edinburgh++ JSON); its span instances are made"
    )
    dev: dict[str, str] = setting(
        factory=dict,
        help="name -> that corpus's development part (Edinburgh++ JSON), its test set; a corpus without one "
        "holds out test_share of its pairs",
    )
    train_sets: list[str] = setting(
        factory=list,
        help="what each row trains on: a corpus name, names joined by '+', or 'all' (empty: each corpus, then all)",
    )
    kind: Literal["paper", "cross"] = setting("cross", "the aligner kind trained in every row")
    reversed: bool = setting(True, "also train on the training instances read backwards")
    phrases: bool = setting(True, "also train on every consistent phrase pair of the training pairs")
    synthetic: str | None = setting(None, "kind cross: pre-training instances (spanaug align synthetic); null: none")
    epochs: int = inherit(AlignerTrainSettings, "epochs", help="the paper aligner's training epochs")
    seed: int = setting(0, "split and training seed")
    dev_share: float = setting(
        0.1,
        "share of each corpus's training pairs held out to tune on (epoch, calibration, threshold)",
        exclusiveMinimum=0,
        exclusiveMaximum=1,
    )
    test_share: float = inherit(
        AblationSettings, "test_share", help="share of the pairs of a corpus without dev tested on"
    )
    # Null here means aligner.train's, so that the `all` row trains on the production recipe's phrase
    # pairs unless the section says otherwise (AlignerSection fills them in; the command alone,
    # aligner.train's defaults).
    phrase_max_len: int | None = inherit(
        AlignerTrainSection,
        "phrase_max_len",
        default=None,
        help="phrase pairs: longest source phrase (null: aligner.train's)",
    )
    phrase_max_per_pair: int | None = inherit(
        AlignerTrainSection,
        "phrase_max_per_pair",
        default=None,
        help="phrase pairs: a seeded sample of N per sentence pair (null: aligner.train's, which may be all)",
    )
    phrase_keep_identical: bool | None = inherit(
        AlignerTrainSection,
        "phrase_keep_identical",
        default=None,
        help="phrase pairs: keep phrases copied unchanged (null: aligner.train's)",
    )
    cross: CrossTrainSection | None = setting(None, "the cross rows' training (null: aligner.train.cross)")

    def inherit_phrases(self, train: AlignerTrainSection) -> None:
        """The phrase settings left null take ``train``'s."""
        for name in PHRASE_SETTINGS:
            if getattr(self, name) is None:
                setattr(self, name, getattr(train, name))


#: The phrase-pair settings ``aligner.cross_domain`` takes from ``aligner.train`` unless it sets them.
PHRASE_SETTINGS = ("phrase_max_len", "phrase_max_per_pair", "phrase_keep_identical")


@settings
class AlignerSection(Settings):
    """Config section ``aligner``."""

    model: str | None = setting(
        None, "a trained aligner directory, of either kind (null: train one with aligner.train)", names="aligner"
    )
    kind: Literal["paper", "cross"] = setting(
        "paper",
        "paper: frozen encoder + span scorer (§4.1); cross: the "
        "fine-tuned cross-encoder span extractor (aligner.train.cross)",
    )
    encoder: str = inherit(AlignerConfig, "encoder")
    train: AlignerTrainSection | None = setting(
        factory=AlignerTrainSection, help="training data and settings (null: use aligner.model)"
    )
    evaluation: AblationSettings | None = setting(None, "held-out ablations (null: off)")
    systems: AlignerSystemsSettings | None = setting(None, "aligner kinds and data sources compared (null: off)")
    cross_domain: CrossDomainSettings | None = setting(
        None, "one recipe trained on each word-aligned corpus and on all, tested on each (null: off)"
    )
    batch_size: int = setting(256, "sentence pairs per prediction batch (length-sorted)", minimum=1)
    # Inference only: training keeps float32 weights, whatever this says.
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = setting(
        "auto", "the aligner's encoder at prediction: auto, bf16 (or fp16) on GPUs and fp32 on CPU"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        # The systems' cross rows train as this run's cross aligner unless aligner.systems.cross says
        # otherwise. Filled in here, so the filled config and the command a rule runs say it (a rule
        # passes it as --cross; `spanaug align systems` without --cross takes the section's defaults).
        if self.systems and self.systems.cross is None and self.train and self.train.cross:
            self.systems.cross = self.train.cross
        if self.cross_domain and self.cross_domain.cross is None and self.train and self.train.cross:
            self.cross_domain.cross = self.train.cross
        if self.cross_domain:
            self.cross_domain.inherit_phrases(self.train or AlignerTrainSection())


@settings
class AlignStageSettings:
    """The aligner the align stage runs, and how: ``spanaug align paraphrases``' options, which
    ``spanaug iterate --align`` takes too. A plain dataclass, as the command's options were: the
    command checks nothing the section's schema would add."""

    model: str = setting(help="a trained aligner directory")
    encoder: str | None = setting(None, "override the encoder saved with the model")
    batch_size: int = inherit(AlignerSection, "batch_size")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = inherit(AlignerSection, "dtype")


# ---------------------------------------------------------------- word-alignment baselines


@settings
class FastAlignSettings(Settings):
    """FastAlign (config: ``baselines.fastalign``)."""

    lowercase: bool = setting(True, "align lower-cased text")
    iterations: int = setting(5, "EM iterations", minimum=1)
    fast_align_bin: str | None = setting(
        None, "your fast_align binary (the paper's toolchain); null: systran-align in-process"
    )
    atools_bin: str | None = setting(None, "atools for grow-diag-final-and; null: ours")


@settings
class DiscAlignSettings(Settings):
    """DiscAlign's architecture (``spanaug baseline discalign train``)."""

    encoder: str = inherit(AlignerConfig, "encoder")
    projection: int = setting(256, "units of the source and target word projections", minimum=1)
    possible_as_positive: bool = setting(False, "count possible (not only sure) links as positives")
    threshold: float = setting(0.5, "link probability cut (tuned on held-out pairs)", minimum=0, maximum=1)


@settings
class BaselinesSection(Settings):
    """Config section ``baselines``: FastAlign and DiscAlign against the span aligner (Tables 1-2)."""

    instances: str | None = setting(
        None, "span instances from the word-aligned pairs (null: made from aligner.train.bitext)"
    )
    gold_pairs: str | None = setting(None, "the word-aligned pairs (Edinburgh++ JSON) the instances come from")
    extra_text: list[str] = setting(
        factory=list, help="more FastAlign training text ('source ||| target' or TSV lines), e.g. paraphrased FrameNet"
    )
    epochs: int = inherit(AlignerTrainSettings, "epochs")
    seed: int = setting(0, "split and training seed")
    dev_share: float = inherit(AblationSettings, "dev_share")
    test_share: float = inherit(AblationSettings, "test_share")
    fastalign: FastAlignSettings = setting(factory=FastAlignSettings, help="FastAlign's settings")


@settings
class DiscAlignTrainSettings(Settings):
    """How DiscAlign is trained (``spanaug baseline discalign train``)."""

    epochs: int = inherit(BaselinesSection, "epochs")
    seed: int = inherit(BaselinesSection, "seed")
    pretrain_epochs: int = setting(2, "epochs over the automatically aligned pairs first", minimum=1)
    dev_share: float = setting(
        0.1, "gold pairs held out to tune the threshold (0: keep --threshold)", minimum=0, maximum=1
    )


# ---------------------------------------------------------------- long spans (frame elements)


@settings
class LongSpanSettings(Settings):
    """Both aligner kinds on held-out phrase pairs of several words (``spanaug align long-spans``)."""

    min_len: int = setting(3, "shortest test phrase (source words)", minimum=1)
    max_len: int = setting(
        8, "longest test phrase, and the longest phrase pair trained on by the +phrases rows", minimum=1
    )
    per_pair: int | None = setting(
        6, "test (and trained) phrase pairs per sentence pair, a seeded sample (null: all)", minimum=1
    )
    epochs: int = inherit(AlignerTrainSettings, "epochs", help="the paper aligner's training epochs")
    seed: int = setting(0, "split, sample and training seed")
    dev_share: float = inherit(AblationSettings, "dev_share")
    test_share: float = inherit(AblationSettings, "test_share")
    cross: CrossTrainSection | None = setting(None, "the cross rows' training, as JSON (null: its defaults)")
