"""The run configuration: one dataclass per config section; each setting's default, help and bounds, once.

Everything else is generated from these dataclasses: the JSON schema that Snakemake validates a
config file against and whose defaults it fills in (``workflow/schemas/config.schema.yaml``,
written by ``spanaug config schema``), and the options of every ``spanaug`` command (through
transformers' ``HfArgumentParser``). A rule passes a config section to its command as options of
the same names, so a default that changes here changes for the workflow and the CLI alike.

The defaults are the seed paper's production settings (Culkin et al., TACL 2021, FrameNet 1.7).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from spanaug.core.errors import ConfigError
from spanaug.core.settings import Settings, build, inherit, schema_of, setting, settings


@settings
class Runtime(Settings):
    """Where a model runs (config: ``device``)."""

    device: str = setting("auto", "auto (CUDA when present), cpu, cuda or cuda:N")


# ---------------------------------------------------------------- data and seeds


@settings
class ImportSettings(Settings):
    """The input corpus (config: ``data``; ``spanaug import``)."""

    format: Literal["framenet", "conll", "jsonl"] = setting(
        "framenet", "framenet: a release directory read with NLTK; conll: open-SESAME CoNLL files; "
        "jsonl: {\"tokens\", \"span\": [s, e], \"frame\"} lines")
    inputs: list[str] = setting(help="the corpus: a FrameNet release directory, or CoNLL/JSONL files", minItems=1)
    parts: list[Literal["exemplar", "fulltext"]] = setting(
        factory=lambda: ["exemplar", "fulltext"], help="FrameNet corpus parts to read", minItems=1, uniqueItems=True)
    max_tokens: int | None = setting(80, "skip sentences longer than this many tokens (null: keep all)", minimum=1)


@settings
class SeedSettings(Settings):
    """Which imported rows seed the expansion (config: ``seeds``; ``spanaug seeds``)."""

    mode: Literal["all", "from_scratch"] = setting("all", "all rows, or from scratch as in the paper's §6.1")
    n_frames: int = setting(20, "from_scratch: frames to seed", minimum=1)
    lus_per_frame: int = setting(3, "from_scratch: first lexical units of each frame", minimum=1)
    annotations_per_lu: int = setting(3, "from_scratch: first annotations of each lexical unit", minimum=1)


@settings
class ConstraintSettings(Settings):
    """How a span's text is expanded into forbidden phrases (config: ``constraints``)."""

    case_variants: bool = setting(True, "forbid the span lower-cased, capitalised and upper-cased too")
    inflections: bool = setting(True, "forbid every inflection of the span's head lemma (lemminflect)")


# ---------------------------------------------------------------- the paraphraser


@settings
class DecodeSettings(Settings):
    """How the paraphraser decodes under the constraints (config: ``paraphraser``; ``spanaug paraphrase``)."""

    model: str | None = setting(None, "any AutoModelForSeq2SeqLM on the hub or on disk; ignored when "
                                      "paraphraser.train is set")
    backend: Literal["hf", "ct2"] = setting("hf", "hf: transformers; ct2: CTranslate2 (pip install 'spanaug[ct2]')")
    prefix: str = setting("", "text put before each source sentence, e.g. 'paraphrase: ' for T5 paraphrasers")
    mode: Literal["beam", "sample"] = setting("beam", "beam search or top-k sampling")
    beam_size: int = setting(20, "beams searched", minimum=1)
    return_top: int = setting(3, "beam mode: best beams kept per sentence", minimum=1)
    top_k: int = setting(20, "sample mode: tokens sampled from", minimum=1)
    num_samples: int = setting(3, "sample mode: samples per sentence", minimum=1)
    seed: int = setting(0, "sampling seed")
    batch_size: int | None = setting(None, "at most this many sentences per batch (null: no cap; batches are "
                                           "set by max_batch_tokens)", minimum=1)
    max_batch_tokens: int | None = setting(None, "batch budget: sentences x longest source (tokenizer ids) x beams "
                                                 "or samples (null: a default per device)", minimum=1)
    max_new_tokens: int | None = setting(None, "new tokens per sentence, in both backends (null: ceil(1.5 x the "
                                               "sentence's source ids) + 10)", minimum=1)
    ct2_batching: Literal["exact", "union"] = setting(
        "exact", "ct2 only: exact, one call per constraint set (outputs equal hf's); union, one call per batch "
        "under the union of its sentences' sets (real batches; a sentence also avoids its batch-mates' phrases)")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = setting(
        "auto", "auto: bf16 (or fp16) on GPUs, fp32 on CPU")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode == "beam" and self.return_top > self.beam_size:
            raise ConfigError(f"return_top ({self.return_top}) must not exceed beam_size ({self.beam_size})")

    @property
    def width(self) -> int:
        """Outputs decoded per sentence."""
        return self.beam_size if self.mode == "beam" else self.num_samples


@settings
class ParaphraserArchitecture(Settings):
    """The paper's paraphraser: a 6-layer encoder, a 4-layer decoder, 8 heads, d_model 512,
    feed-forward 2048, on SentencePiece unigrams (built as a BART model)."""

    vocab_size: int = setting(32000, "SentencePiece unigram vocabulary size", minimum=8)
    d_model: int = setting(512, "model width", minimum=8)
    encoder_layers: int = setting(6, "encoder layers", minimum=1)
    decoder_layers: int = setting(4, "decoder layers", minimum=1)
    attention_heads: int = setting(8, "attention heads", minimum=1)
    ffn_dim: int = setting(2048, "feed-forward width", minimum=8)
    max_positions: int = setting(256, "longest sequence in tokens", minimum=8)
    dropout: float = setting(0.1, "dropout rate", minimum=0, maximum=1)


@settings
class ParaphraserTrainSettings(ParaphraserArchitecture):
    """Training the paper's paraphraser (config: ``paraphraser.train``; ``spanaug paraphraser train``)."""

    bitext: str = setting(help="TSV of source<TAB>paraphrase lines (e.g. ParaBank 2)")
    label_smoothing: float = setting(0.1, "label smoothing of the training loss", minimum=0, maximum=1)
    learning_rate: float = setting(3e-4, "peak learning rate (inverse square-root schedule)", exclusiveMinimum=0)
    warmup_steps: int = setting(4000, "linear warm-up steps before the inverse square-root decay", minimum=0)
    weight_decay: float = setting(0.0, "AdamW weight decay", minimum=0)
    batch_size: int = setting(64, "sentence pairs per step", minimum=1)
    max_steps: int = setting(100000, "training steps", minimum=1)
    max_minutes: float | None = setting(None, "stop after this much training time (null: no limit)", exclusiveMinimum=0)
    checkpoint_every: int = setting(1000, "steps between checkpoints; a rerun resumes from the last", minimum=1)
    keep_checkpoints: int = setting(2, "checkpoints kept (the newest)", minimum=1)
    seed: int = setting(0, "training seed")


@settings
class ParaphraserSection(DecodeSettings):
    """Config section ``paraphraser``: decoding, and optionally training the paper's model first."""

    train: ParaphraserTrainSettings | None = setting(None, "train the paper's architecture on a bitext first "
                                                           "(null: use paraphraser.model)")


# ---------------------------------------------------------------- the span aligner


@settings
class AlignerConfig(Settings):
    """The span aligner's architecture, saved with a trained aligner (``aligner_config.json``)."""

    encoder: str = setting("bert-base-cased", "the frozen encoder: a hub name or path ('minilm': the offline "
                                              "all-MiniLM-L6-v2)")
    features: list[Literal["df", "mx", "cue"]] = setting(
        factory=lambda: ["df", "mx", "cue"], help="span-pair features: Df (difference), Mx (maximum), Cue (positions)",
        minItems=1, uniqueItems=True)
    loss: Literal["soft", "hard"] = setting("soft", "soft: SBCE labels 2^-distance; hard: 1 for the gold span only")
    k: int = setting(5, "candidate spans differ from the source span's length by at most k tokens", minimum=0)
    hidden: int = setting(770, "units of the scorer's hidden layer", minimum=1)
    # Not in the paper: on Edinburgh++ with MiniLM it raised held-out soft F1 from 0.649 to 0.694.
    normalize_spans: bool = setting(True, "L2-normalise span vectors before the features (not in the paper; "
                                          "false reproduces it)")
    finetune_layers: int = setting(0, "tune the encoder's top N layers with the scorer (0: frozen, as in the paper)",
                                   minimum=0)
    max_length: int = setting(512, "encoder input limit in word pieces", minimum=8)
    threshold: float = setting(0.0, "aligner score under which a span has no alignment (tuned on dev data)",
                               minimum=0, maximum=1)
    threshold_source: str = setting("untuned", "how the threshold was set (dev, held-out pairs or untuned)")
    encoder_dim: int = setting(0, "the encoder's hidden size (set when the aligner is built)", minimum=0)


@settings
class AlignerTrainSettings(Settings):
    """How the aligner is trained (``spanaug align train``)."""

    epochs: int = setting(10, "training epochs", minimum=1)
    batch_size: int = setting(32, "training instances per step", minimum=1)
    learning_rate: float = setting(1e-3, "the scorer's learning rate", exclusiveMinimum=0)
    encoder_learning_rate: float = setting(2e-5, "learning rate of the tuned encoder layers (finetune_layers)",
                                           exclusiveMinimum=0)
    seed: int = setting(0, "training seed")
    threshold_holdout: float = setting(0.1, "without dev data, this share of the training pairs is held out to tune "
                                            "the null threshold (0: never null)", minimum=0, exclusiveMaximum=1)
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
    calibration: list[float] | None = setting(None, "Platt scaling [a, b] of the chosen span's log-odds against exact "
                                                    "correctness (fitted on held-out data; null: none)",
                                              minItems=2, maxItems=2)
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
    calibrate: bool = setting(True, "fit the softmax temperature (least NLL) and the score's Platt scaling (against "
                                    "exact correctness) on the held-out data")
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
        return CrossAlignerConfig(encoder=encoder, k=k, pooling=self.pooling, loss=self.loss,
                                  tune_layers=self.tune_layers, head_dim=self.head_dim)

    def training(self) -> CrossTrainSettings:
        return CrossTrainSettings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(CrossTrainSettings)})


@settings
class AlignerTrainSection(AlignerTrainSettings):
    """Config section ``aligner.train``: the training data and the architecture to train."""

    instances: str | None = setting(None, "span-alignment JSONL {id, source_tokens, target_tokens, source_span, "
                                          "target_span} (inclusive indices)")
    bitext: str | None = setting(None, "or a paraphrase TSV whose token differences give the instances")
    dev: str | None = setting(None, "span-alignment JSONL to tune the null threshold on")
    extra_instances: list[str] = setting(factory=list, help="more span-alignment JSONL added to training "
                                                            "(e.g. composed along paraphrase chains)")
    reversed: bool = setting(False, "also train on every training instance read backwards (target -> source)")
    phrase_pairs: str | None = setting(None, "the training instances' word-aligned pairs (Edinburgh++ JSON): also "
                                             "train on every consistent phrase pair of a training pair")
    phrase_max_len: int = setting(4, "phrase pairs: longest source phrase", minimum=1)
    phrase_max_per_pair: int | None = setting(None, "phrase pairs: a seeded sample of N per sentence pair (null: all)",
                                              minimum=1)
    phrase_keep_identical: bool = setting(False, "phrase pairs: keep phrases copied unchanged")
    pretrain: list[str] = setting(factory=list, help="kind cross: span-alignment JSONL trained on first "
                                                     "(e.g. spanaug align synthetic)")
    synthetic_lexicon: str | None = setting(None, "kind cross: also pre-train on the imported sentences' triggers "
                                                  "rewritten as other units of their frame in this lexicon (JSON or "
                                                  "FrameNet release; spanaug align synthetic); null: off")
    features: list[Literal["df", "mx", "cue"]] = inherit(AlignerConfig, "features")
    loss: Literal["soft", "hard"] = inherit(AlignerConfig, "loss")
    k: int = inherit(AlignerConfig, "k")
    normalize_spans: bool = inherit(AlignerConfig, "normalize_spans")
    finetune_layers: int = inherit(AlignerConfig, "finetune_layers")
    cross: CrossTrainSection | None = setting(factory=CrossTrainSection, help="aligner.kind cross: its training")

    def architecture(self, encoder: str) -> AlignerConfig:
        """The aligner to train on ``encoder``."""
        return AlignerConfig(encoder=encoder, features=list(self.features), loss=self.loss, k=self.k,
                             normalize_spans=self.normalize_spans, finetune_layers=self.finetune_layers)


@settings
class AblationSettings(Settings):
    """The aligner's held-out evaluation: Table 2, Figures 4-5, §4.6 (config: ``aligner.evaluation``)."""

    data: str | None = setting(None, "span-alignment JSONL, split by sentence pair (null: the instances made "
                                     "from aligner.train.bitext)")
    epochs: int = inherit(AlignerTrainSettings, "epochs")
    seed: int = setting(0, "split and training seed")
    finetune_layers: int = setting(0, "> 0: add a row with the encoder's top N layers tuned", minimum=0)
    extra_reversed: bool = setting(False, "add a row trained with reversed instances too")


#: Rows of ``spanaug align systems`` (evaluation.aligner_systems.SYSTEMS says how each is trained).
ALIGNER_SYSTEMS = ("paper", "paper-untuned", "paper-holdout", "paper-holdout-refit", "paper+phrases", "paper+reversed",
                   "cross", "cross-holdout", "cross+phrases", "cross+reversed", "cross+chains", "cross+synthetic",
                   "cross+phrases+reversed", "cross+reversed+synthetic", "cross+all")


@settings
class AlignerSystemsSettings(Settings):
    """Aligner kinds and data sources on one held-out split (``aligner.systems``; ``spanaug align systems``)."""

    data: str | None = setting(None, "span-alignment JSONL, split by pair (null: as aligner.evaluation.data)")
    rows: list[Literal[ALIGNER_SYSTEMS]] = setting(factory=lambda: ["paper", "paper-holdout", "cross"],
                                                   help="systems to train and test", minItems=1, uniqueItems=True)
    gold_pairs: str | None = setting(None, "the instances' word-aligned pairs (Edinburgh++ JSON): phrases, chains rows")
    synthetic: str | None = setting(None, "pre-training instances (spanaug align synthetic): the synthetic rows")
    epochs: int = inherit(AlignerTrainSettings, "epochs", help="the paper aligner's training epochs")
    seed: int = setting(0, "split and training seed")
    phrase_max_len: int = inherit(AlignerTrainSection, "phrase_max_len")
    phrase_max_per_pair: int | None = inherit(AlignerTrainSection, "phrase_max_per_pair")
    phrase_keep_identical: bool = inherit(AlignerTrainSection, "phrase_keep_identical")
    cross: CrossTrainSection | None = setting(None, "the cross rows' training (null: aligner.train.cross)")


@settings
class AlignerSection(Settings):
    """Config section ``aligner``."""

    model: str | None = setting(None, "a trained aligner directory, of either kind (null: train one with "
                                      "aligner.train)")
    kind: Literal["paper", "cross"] = setting("paper", "paper: frozen encoder + span scorer (§4.1); cross: the "
                                                       "fine-tuned cross-encoder span extractor (aligner.train.cross)")
    encoder: str = inherit(AlignerConfig, "encoder")
    train: AlignerTrainSection | None = setting(factory=AlignerTrainSection,
                                                help="training data and settings (null: use aligner.model)")
    evaluation: AblationSettings | None = setting(None, "held-out ablations (null: off)")
    systems: AlignerSystemsSettings | None = setting(None, "aligner kinds and data sources compared (null: off)")
    batch_size: int = setting(64, "sentence pairs per prediction batch", minimum=1)


# ---------------------------------------------------------------- word-alignment baselines


@settings
class FastAlignSettings(Settings):
    """FastAlign (config: ``baselines.fastalign``)."""

    lowercase: bool = setting(True, "align lower-cased text")
    iterations: int = setting(5, "EM iterations", minimum=1)
    fast_align_bin: str | None = setting(None, "your fast_align binary (the paper's toolchain); null: systran-align "
                                               "in-process")
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

    instances: str | None = setting(None, "span instances from the word-aligned pairs (null: made from "
                                          "aligner.train.bitext)")
    gold_pairs: str | None = setting(None, "the word-aligned pairs (Edinburgh++ JSON) the instances come from")
    extra_text: list[str] = setting(factory=list, help="more FastAlign training text ('source ||| target' or TSV "
                                                       "lines), e.g. paraphrased FrameNet")
    epochs: int = inherit(AlignerTrainSettings, "epochs")
    seed: int = setting(0, "split and training seed")
    fastalign: FastAlignSettings = setting(factory=FastAlignSettings, help="FastAlign's settings")


# ---------------------------------------------------------------- filtering and human evaluation


@settings
class FilterBounds(Settings):
    """One heuristic filter: a conjunction of bounds (paper's Table 4)."""

    max_iteration: int | None = setting(None, "outputs of this iteration or earlier", minimum=1)
    max_paraphrase_score: float | None = setting(None, "length-normalised NLL: lower is better")
    min_aligner_score: float | None = setting(None, "aligner score at least this", minimum=0, maximum=1)


@settings
class ClassifierSettings(Settings):
    """The neural P/R-classifiers trained on human judgments (config: ``filtering``)."""

    downweight: float = setting(0.5, "weight of the down-weighted class (P: positives, R: negatives)",
                                exclusiveMinimum=0)
    epochs: int = setting(300, "full-batch training epochs", minimum=1)
    learning_rate: float = setting(0.01, "Adam learning rate", exclusiveMinimum=0)
    test_share: float = setting(0.1, "judged outputs held out", exclusiveMinimum=0, exclusiveMaximum=1)
    seed: int = setting(0, "split and training seed")


@settings
class FilteringSection(ClassifierSettings):
    """Config section ``filtering``."""

    filters: dict[str, FilterBounds] | None = setting(None, "name -> bounds (null: the paper's Table 4)")


@settings
class HumanEvalSettings(Settings):
    """The annotation task and its judgments (§6.2; config: ``human_eval``)."""

    n_items: int = setting(100, "task items", minimum=1)
    seed: int = setting(0, "sampling seed of the task (and of simulated raters)")
    results: str | None = setting(None, "crowd results CSV: item_id, worker_id, candidate_N_score (0-100)")
    simulate: bool = setting(False, "simulated annotators when no results exist (demo and tests only)")
    raters: int = setting(3, "simulated raters per item", minimum=2)
    span_items: int = setting(100, "items of the span-alignment task (§4.1): outputs whose counterpart span "
                                   "annotators mark", minimum=1)
    span_results: str | None = setting(None, "span-alignment answers CSV: item_id, worker_id, target_start, "
                                             "target_end (empty: no counterpart)")


# ---------------------------------------------------------------- augmenters and Frame ID


@settings
class GecaConfig(Settings):
    """GECA's window and the caps that bound its output on a corpus the size of FrameNet."""

    window: int = setting(1, "k: tokens each side of a trigger forming its environment", minimum=0)
    max_fragments_per_environment: int = setting(50, "fragments sampled from a crowded environment", minimum=2)
    max_templates_per_pair: int = setting(20, "sentences filled per pair of fragments", minimum=1)
    max_outputs: int = setting(100000, "examples at most", minimum=1)
    seed: int = setting(0, "sampling seed")


@settings
class FilteredAugmenter(Settings):
    """An augmenter fed with the pipeline's outputs under a filter."""

    filter: str | None = setting(None, "a filter's name (filtering.filters, else Table 4); null: every aligned output")


@settings
class LexsubSettings(FilteredAugmenter):
    pos_tagger: str = setting("lexicon", "'lexicon' (offline) or 'spacy:<model>': the new trigger must get the "
                                         "original's POS")


@settings
class GraphSettings(FilteredAugmenter):
    selftrain: bool = setting(False, "add an aligner ablation row trained with the chain instances "
                                     "(needs aligner.evaluation)")


@settings
class AugmentersSection(Settings):
    """Config section ``augmenters``: Frame ID training data (§6.3) and chain-graph aligner data."""

    paraphrastic: FilteredAugmenter = setting(factory=FilteredAugmenter, help="the pipeline's outputs")
    lexsub: LexsubSettings = setting(factory=LexsubSettings, help="aligned triggers put back into their seeds")
    geca: GecaConfig = setting(factory=GecaConfig, help="Good-Enough Compositional Augmentation (Andreas 2020)")
    graph: GraphSettings = setting(factory=GraphSettings, help="span alignments composed along paraphrase chains")


@settings
class FrameIdTrainConfig(Settings):
    """Training the Frame ID model (``spanaug frameid train``)."""

    # Defaults measured on the shared FrameNet 1.7 split (README, Frame ID): with early stopping on a
    # held-out share and a refit, the model trained with only the required options beats the lexicon
    # baseline; 10 fixed epochs without dev kept the last (overfitted) epoch.
    epochs: int = setting(30, "most training epochs (early stopping on dev may end sooner)", minimum=1)
    batch_size: int = setting(16, "sentences per step", minimum=1)
    learning_rate: float = setting(1e-3, "Adam learning rate", exclusiveMinimum=0)
    patience: int = setting(5, "stop after this many epochs without a better dev F1 (0: never stop early); "
                               "the best epoch's weights are kept", minimum=0)
    holdout_share: float = setting(0.15, "without a dev set: share of the full-text training sentences held out "
                                         "as dev (drawn by the seed); 0: every epoch is trained and the last kept",
                                   minimum=0, exclusiveMaximum=1)
    refit: bool = setting(True, "after early stopping on a held-out share, train again on all the training "
                                "sentences for the best epoch's number of epochs")
    threads: int = setting(1, "CPU threads while training (0: torch's default); the small LSTMs gain nothing "
                              "from more, and extra threads slow down badly on a busy machine", minimum=0)
    seed: int = setting(0, "weights, batch order and the held-out share")


@settings
class SplitSettings(Settings):
    """Splitting imported sentences for Frame ID, whole documents at a time (``spanaug frameid split``)."""

    parts: list[Literal["exemplar", "fulltext"]] = setting(
        factory=lambda: ["fulltext"], help="corpus parts in the pool (CoNLL and JSONL rows count as full text)",
        minItems=1, uniqueItems=True)
    dev_share: float = setting(0.1, "share of the groups held out as dev", minimum=0, maximum=1)
    test_share: float = setting(0.2, "share of the groups held out as test", exclusiveMinimum=0, maximum=1)


@settings
class FrameIdSection(SplitSettings):
    """Config section ``frameid``: the Figure 8 experiment (Frame ID with and without each augmenter)."""

    epochs: int = inherit(FrameIdTrainConfig, "epochs")
    batch_size: int = inherit(FrameIdTrainConfig, "batch_size")
    learning_rate: float = inherit(FrameIdTrainConfig, "learning_rate")
    patience: int = inherit(FrameIdTrainConfig, "patience")
    train: str | None = setting(None, "CoNLL/Parquet pool of training sentences (null: split the imported corpus)")
    dev: str | None = setting(None, "dev sentences (CoNLL/Parquet): the best epoch on them is kept")
    test: str | None = setting(None, "the fixed test split (null: from the same split)")
    encoder: str = setting("bert-base-cased", "the frozen encoder")
    lexicon: str | None = setting(None, "lexicon JSON or FrameNet release restricting each span's frames")
    fractions: list[float] = setting(factory=lambda: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
                                     help="shares of the training sentences", minItems=1, uniqueItems=True)
    seeds: list[int] = setting(factory=lambda: [0, 1, 2, 3, 4], help="samples per share", minItems=1,
                               uniqueItems=True)
    augmenters: list[Literal["paraphrastic", "lexsub", "geca"]] = setting(
        factory=lambda: ["paraphrastic", "lexsub", "geca"], help="augmenters compared with none", uniqueItems=True)


# ---------------------------------------------------------------- statistics and resources


@settings
class StatsConfig(Settings):
    """Intrinsic statistics of the augmented dataset (config: ``stats``; ``spanaug stats``)."""

    bleu_sample: int = setting(2000, "chains sampled for the BLEU measures", minimum=1)
    lexicon: str | None = setting(None, "lexicon JSON or FrameNet release for from-scratch LU precision/recall")
    pos_tagger: str | None = setting(None, "'lexicon' or 'spacy:<model>' for POS diversity (null: skipped)")
    pos_sample: int = setting(5000, "aligned outputs tagged for POS diversity", minimum=1)


@settings
class ReportSettings(Settings):
    """The HTML report's own pages (config: ``report``)."""

    chains: int = setting(12, "seeds shown with their paraphrase chains on the example-chains page", minimum=1)
    seed: int = setting(0, "sampling seed of the example chains")
    max_rows: int = setting(200, "rows shown per table page (the raw file, linked from the page, has them all)",
                            minimum=1)


@settings
class Resources(Settings):
    """What a job asks the scheduler for."""

    gpus: int = setting(0, "GPUs (SLURM gres=gpu:N)", minimum=0)
    mem_mb: int = setting(8000, "memory in MB", minimum=1)
    runtime: int = setting(120, "minutes", minimum=1)
    cpus: int = setting(1, "CPU cores (threads of the job)", minimum=1)
    slurm_partition: str | None = setting(None, "SLURM partition (null: the cluster's default)")


@settings
class ResourcesSection(Settings):
    """Config section ``resources``: GPU rules (model training and inference) and CPU rules."""

    gpu: Resources = setting(factory=lambda: Resources(gpus=1, mem_mb=32000, runtime=240, cpus=4),
                             help="GPU rules: model training and inference")
    cpu: Resources = setting(factory=Resources, help="CPU rules: data, constraints, selection, statistics")


# ---------------------------------------------------------------- the whole config file


@settings
class RunConfig(Settings):
    """A config file (config.yaml, config/demo.yaml): every section above."""

    run_name: str = setting("framenet", "results go to results_dir/run_name", pattern="^[A-Za-z0-9_.-]+$")
    results_dir: str = setting("results", "the folder of every run's results")
    data: ImportSettings = setting(help="the input corpus")
    seeds: SeedSettings = setting(factory=SeedSettings, help="which rows seed the expansion")
    iterations: int = setting(10, "paraphrasing iterations", minimum=1)
    n_shards: int = setting(64, "shards per iteration (one job each)", minimum=1)
    device: str = inherit(Runtime, "device", help="device of every model job: auto (CUDA when present), cpu, cuda, cuda:N")
    constraints: ConstraintSettings = setting(factory=ConstraintSettings, help="constraint expansion")
    paraphraser: ParaphraserSection = setting(factory=ParaphraserSection, help="the constrained paraphraser")
    aligner: AlignerSection = setting(factory=AlignerSection, help="the span aligner")
    baselines: BaselinesSection | None = setting(None, "word aligners against the span aligner (null: off)")
    filtering: FilteringSection = setting(factory=FilteringSection, help="heuristic and neural filters (§6.2)")
    human_eval: HumanEvalSettings | None = setting(None, "annotation task export and judgment import (null: off)")
    augmenters: AugmentersSection | None = setting(None, "augmenters for the Frame ID comparison (null: off)")
    frameid: FrameIdSection | None = setting(None, "the Figure 8 experiment (null: off)")
    stats: StatsConfig = setting(factory=StatsConfig, help="intrinsic statistics")
    report: ReportSettings = setting(factory=ReportSettings, help="the HTML report's tables, example chains and "
                                                                  "warnings")
    resources: ResourcesSection = setting(factory=ResourcesSection, help="what jobs ask the scheduler for")


def config_schema() -> dict[str, Any]:
    """The JSON schema of a config file (written to workflow/schemas/config.schema.yaml)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema_of(RunConfig)}


def load_run_config(raw: dict[str, Any]) -> RunConfig:
    """A config file's contents as settings: checked against the schema, every default filled in."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(config_schema()).iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        where = ".".join(map(str, errors[0].absolute_path)) or "config"
        raise ConfigError(f"{where}: {errors[0].message}")
    return build(RunConfig, raw)
