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

from spanaug.core.aligner_settings import AlignerSection, BaselinesSection
from spanaug.core.errors import ConfigError
from spanaug.core.evaluation_settings import (
    ArgIdSection,
    AugmentersSection,
    FilteringSection,
    FrameIdSection,
    HumanEvalSettings,
    StatsSettings,
)
from spanaug.core.settings import (
    Settings,
    build,
    default_of,
    inherit,
    schema_error_message,
    schema_of,
    setting,
    settings,
)

#: The device names a model job accepts: what torch.device takes for the backends spanaug runs on.
DEVICE_PATTERN = r"^(auto|cpu|mps|cuda(:[0-9]+)?)$"


@settings
class Runtime(Settings):
    """Where a model runs (config: ``device``)."""

    # The schema's pattern is the one check of a device name: the preflight validates a config file
    # with it, and every command's settings are checked against it when made (core.settings).
    device: str = setting("auto", "auto (CUDA when present), cpu, cuda, cuda:N or mps", pattern=DEVICE_PATTERN)


# ---------------------------------------------------------------- data and seeds


@settings
class ImportSettings(Settings):
    """The input corpus (config: ``data``; ``spanaug import``)."""

    format: Literal["framenet", "conll", "jsonl"] = setting(
        "framenet",
        "framenet: a release directory read with NLTK; conll: open-SESAME CoNLL files; "
        'jsonl: {"tokens", "span": [s, e], "frame"} lines',
    )
    inputs: list[str] = setting(help="the corpus: a FrameNet release directory, or CoNLL/JSONL files", minItems=1)
    parts: list[Literal["exemplar", "fulltext"]] = setting(
        factory=lambda: ["exemplar", "fulltext"], help="FrameNet corpus parts to read", minItems=1, uniqueItems=True
    )
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


@settings
class FrameElementSettings(Settings):
    """Frame elements carried across each paraphrase (config: ``frame_elements``; ``spanaug align
    paraphrases`` places them, ``spanaug select`` weighs and requires them)."""

    mode: Literal["off", "align", "keep"] = setting(
        "off",
        "off: outputs carry no FEs (the paper); align: the span aligner places the FEs of every beam selection "
        "may choose (the cross kind, with select: trigger and require: none, only the chosen beam's); keep: an FE "
        "is found where its words occur verbatim",
    )
    select: Literal["trigger", "joint"] = setting(
        "trigger", "beam selection by the trigger's aligner score, or by the mean of it and every FE's (lost: 0)"
    )
    require: Literal["none", "core", "all"] = setting(
        "none", "beams kept when an FE is lost: any, those keeping every core FE (unknown coreness: core), or all"
    )
    candidates: int = setting(
        5,
        "align: candidate spans per FE among which the best consistent placement is searched (at most 100: the "
        "search is exponential in it, and the aligner ranks far fewer spans worth trying)",
        minimum=1,
        maximum=100,
    )
    min_verbatim_agreement: float = setting(
        0.8,
        "the report warns when, of the FEs whose words an output repeats verbatim (once), fewer than this share "
        "were placed on those words (an aligner that never saw a copied phrase places them elsewhere)",
        minimum=0,
        maximum=1,
    )

    def contradictions(self) -> list[str]:
        """Settings of a run that act on carried FEs while none are carried (``mode: off``): a config
        that says both is refused rather than run as if one of them were not written. (A stage given
        ``select`` or ``require`` alone, as ``spanaug select``, acts on the FEs its input carries.)"""
        if self.mode != "off":
            return []
        return [
            f"frame_elements.{key}: {value} needs frame elements carried (frame_elements.mode: align or keep), "
            f"but frame_elements.mode is off"
            for key, value, default in (("require", self.require, "none"), ("select", self.select, "trigger"))
            if value != default
        ]


# ---------------------------------------------------------------- the paraphraser


@settings
class DecodeSettings(Settings):
    """How the paraphraser decodes under the constraints (config: ``paraphraser``; ``spanaug paraphrase``)."""

    model: str | None = setting(
        None,
        "any AutoModelForSeq2SeqLM or decoder-only AutoModelForCausalLM (Llama, Gemma 3, Qwen2, ...) on the hub or "
        "on disk, a .gguf file (converted once, cached by its hash), or gguf:gemma3-270m / gguf:smollm2-135m (the "
        "offline models of the [lm] extra); not with paraphraser.train, which trains one",
        names="paraphraser",
    )
    # auto: on CPU, ct2 decoded a shard about 9 times faster than hf with the same outputs; on a GPU,
    # static keeps the GPU busy with generate's beams (docs/gpus.md); ct2 can batch sentences under
    # their own constraints only one sentence per call.
    backend: Literal["auto", "hf", "ct2", "static"] = setting(
        "auto",
        "auto: static on CUDA (hf for model families it lacks), hf on MPS, ct2 on CPU (hf when CTranslate2 is "
        "not installed); hf: transformers' generate; ct2: CTranslate2 (pip install 'spanaug[ct2]'); static: "
        "beam search on a static cache, generate's beams (T5, BART, mBART, Pegasus, Marian)",
    )
    prefix: str = setting("", "text put before each source sentence, e.g. 'paraphrase: ' for T5 paraphrasers")
    # Decoder-only models only (pipeline.paraphraser.prompts): the model continues a prompt.
    instruction: str = setting(
        "Rewrite each sentence so that it keeps its meaning but does not use the given word.",
        "decoder-only models: the instruction that opens the prompt (empty: none)",
    )
    prompt: str = setting(
        "Word: {word}\nSentence: {sentence}\nRewrite:",
        "decoder-only models: one sentence's block of the prompt, {sentence} its source and {word} (optional) its "
        "span's text; the model's continuation up to the first newline or end of sequence is the paraphrase",
        minLength=1,
    )
    few_shot: str | None = setting(
        None,
        'decoder-only models: a JSONL file of examples {"word", "sentence", "rewrite"} shown before each sentence '
        "(null: the built-in examples; an empty file: none)",
        names="file",
    )
    prompt_format: Literal["auto", "chat", "plain"] = setting(
        "auto",
        "decoder-only models: chat puts the prompt in the tokenizer's chat template (examples as turns), plain "
        "writes it as text; auto: chat when the tokenizer has a chat template",
    )
    mode: Literal["beam", "sample"] = setting("beam", "beam search or top-k sampling")
    beam_size: int = setting(20, "beams searched", minimum=1)
    return_top: int = setting(3, "beam mode: best beams kept per sentence", minimum=1)
    top_k: int = setting(20, "sample mode: tokens sampled from", minimum=1)
    num_samples: int = setting(3, "sample mode: samples per sentence", minimum=1)
    seed: int = setting(0, "sampling seed")
    batch_size: int | None = setting(
        None, "at most this many sentences per batch (null: no cap; batches are set by max_batch_tokens)", minimum=1
    )
    max_batch_tokens: int | None = setting(
        None,
        "batch budget: sentences x longest source (tokenizer ids) x beams or samples (null: a default per device)",
        minimum=1,
    )
    max_new_tokens: int | None = setting(
        None, "new tokens per sentence, in both backends (null: ceil(1.5 x the sentence's source ids) + 10)", minimum=1
    )
    cuda_graphs: bool = setting(
        True, "static backend on CUDA: replay each decoder step from CUDA graphs (false: launch it op by op)"
    )
    require_cuda_graphs: bool = setting(
        False,
        "on CUDA, decode with the static backend's CUDA graphs or stop: a capture that fails, a model the "
        "static backend lacks or another backend is an error (false: the job decodes on without graphs, and "
        "its statistics and the report's warnings page say so); no effect on other devices",
    )
    ct2_batching: Literal["exact", "union"] = setting(
        "exact",
        "ct2 only: exact, one call per constraint set (outputs equal hf's); union, one call per batch "
        "under the union of its sentences' sets (real batches; a sentence also avoids its batch-mates' phrases)",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16", "int8"] = setting(
        "auto",
        "auto: bf16 (or fp16) on GPUs, fp32 on CPU; int8: int8 weights and matrix products (ct2's int8 compute "
        "type; on CPU, the hf backend's linear layers, the output projection included, quantised per channel, "
        "their inputs per row, the rest float32; the bans still apply to the logits exactly)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode == "beam" and self.return_top > self.beam_size:
            raise ConfigError(f"return_top ({self.return_top}) must not exceed beam_size ({self.beam_size})")
        if self.require_cuda_graphs and not self.cuda_graphs:
            raise ConfigError("require_cuda_graphs is true but cuda_graphs is false: set one of them the other way")

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
    """Training the paper's paraphraser, or fine-tuning a pretrained one (config: ``paraphraser.train``;
    ``spanaug paraphraser train``)."""

    bitext: str = setting(help="TSV of source<TAB>paraphrase lines (e.g. ParaBank 2)")
    init: str | None = setting(
        None,
        "a pretrained model to fine-tune on the bitext: a seq2seq or decoder-only model folder or hub id, a .gguf "
        "file or gguf:gemma3-270m (a decoder-only model learns to continue paraphraser.prompt); null: train the "
        "paper's architecture from scratch. The architecture settings above do not apply to a fine-tune",
        names="pretrained",
    )
    heldout_share: float = setting(
        0.05,
        "share of the bitext's source sentences held out of training (chosen by hash) to report held-out loss, "
        "chrF and BLEU (heldout_metrics.json beside the model); 0: none",
        minimum=0,
        maximum=0.5,
    )
    heldout_decode: int = setting(
        500, "at most this many held-out pairs decoded for chrF and BLEU (the loss uses them all); 0: none", minimum=0
    )
    heldout_beam: int = setting(4, "beam of the held-out decoding (its best output is scored)", minimum=1)
    label_smoothing: float = setting(
        0.1,
        "label smoothing of the training loss (fine-tuning: 0 suits a pretrained model, whose large vocabulary "
        "would take the smoothed mass)",
        minimum=0,
        maximum=1,
    )
    learning_rate: float = setting(3e-4, "peak learning rate (inverse square-root schedule)", exclusiveMinimum=0)
    warmup_steps: int = setting(4000, "linear warm-up steps before the inverse square-root decay", minimum=0)
    weight_decay: float = setting(0.0, "AdamW weight decay", minimum=0)
    batch_size: int = setting(64, "sentence pairs per step", minimum=1)
    max_steps: int = setting(100000, "training steps", minimum=1)
    max_minutes: float | None = setting(None, "stop after this much training time (null: no limit)", exclusiveMinimum=0)
    checkpoint_every: int = setting(1000, "steps between checkpoints; a rerun resumes from the last", minimum=1)
    keep_checkpoints: int = setting(2, "checkpoints kept (the newest)", minimum=1)
    seed: int = setting(0, "training seed")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init is None:
            return
        # A fine-tune keeps the pretrained model's shape and vocabulary: a changed architecture
        # setting would be silently ignored, so it is refused.
        changed = [
            f.name
            for f in dataclasses.fields(ParaphraserArchitecture)
            if getattr(self, f.name) != default_of(ParaphraserArchitecture, f.name)
        ]
        if changed:
            raise ConfigError(
                f"paraphraser.train: {', '.join(changed)} set, but the architecture settings do not apply to "
                f"fine-tuning paraphraser.train.init ({self.init}): remove them"
            )


@settings
class ParaphraserSection(DecodeSettings):
    """Config section ``paraphraser``: decoding, and optionally training the paper's model first."""

    train: ParaphraserTrainSettings | None = setting(
        None,
        "train the paper's architecture on a bitext first, or fine-tune a pretrained model on it (train.init); "
        "null: use paraphraser.model",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        # Either would be silently ignored: the run trains a paraphraser when train is set.
        if self.model and self.train:
            raise ConfigError(
                "paraphraser.model and paraphraser.train are both set: give one (train trains a paraphraser, "
                "model names one; to use your model over a config that sets train, also set paraphraser.train: null)"
            )


@settings
class ReportSettings(Settings):
    """The HTML report's own pages (config: ``report``)."""

    chains: int = setting(12, "seeds shown with their paraphrase chains on the example-chains page", minimum=1)
    seed: int = setting(0, "sampling seed of the example chains")
    max_rows: int = setting(
        200, "rows shown per table page (the raw file, linked from the page, has them all)", minimum=1
    )


#: Upper bounds of a job's resources: a job runs on one node, so each is above what any one node has
#: (or any queue allows), and a typo of a few extra digits is refused before SLURM is asked for it.
MAX_GPUS = 64  # nodes hold 4-16 GPUs
MAX_MEM_MB = 16 * 1024 * 1024  # 16 TiB in MiB (SLURM's --mem unit): the largest nodes hold 4-12 TiB
MAX_RUNTIME = 30 * 24 * 60  # 30 days in minutes: longer than any usual partition time limit
MAX_CPUS = 1024  # cores of one node (the largest hold 256-512)


@settings
class Resources(Settings):
    """What a job asks the scheduler for."""

    gpus: int = setting(
        0, f"GPUs (SLURM gres=gpu:N; at most {MAX_GPUS}, above any one node)", minimum=0, maximum=MAX_GPUS
    )
    mem_mb: int = setting(8000, "memory in MB (at most 16 TiB, above any one node)", minimum=1, maximum=MAX_MEM_MB)
    runtime: int = setting(
        120, "minutes (at most 30 days, above any usual partition's limit)", minimum=1, maximum=MAX_RUNTIME
    )
    cpus: int = setting(
        1, f"CPU cores (threads of the job; at most {MAX_CPUS}, above any one node)", minimum=1, maximum=MAX_CPUS
    )
    slurm_partition: str | None = setting(None, "SLURM partition (null: the cluster's default)")


@settings
class ResourcesSection(Settings):
    """Config section ``resources``: GPU rules (model training and inference) and CPU rules."""

    gpu: Resources = setting(
        factory=lambda: Resources(gpus=1, mem_mb=32000, runtime=240, cpus=4),
        help="GPU rules: model training and inference",
    )
    cpu: Resources = setting(factory=Resources, help="CPU rules: data, constraints, selection, statistics")


# ---------------------------------------------------------------- the whole config file


@settings
class RunConfig(Settings):
    """A config file (config/config.yaml, config/demo.yaml): every section above."""

    run_name: str = setting("framenet", "results go to results_dir/run_name", pattern="^[A-Za-z0-9_.-]+$")
    results_dir: str = setting("results", "the folder of every run's results", pattern=r"\S")
    data: ImportSettings = setting(help="the input corpus")
    seeds: SeedSettings = setting(factory=SeedSettings, help="which rows seed the expansion")
    iterations: int = setting(10, "paraphrasing iterations", minimum=1)
    # Each shard's iteration is a job that pays its processes' start-up, model loading and checks
    # whatever its size (scripts/bench_jobs.py): 640 jobs at 64 shards, 80 at 8 (docs/gpus.md).
    n_shards: int = setting(
        8, "shards per iteration (one job each): as many as the GPUs your jobs hold at once", minimum=1
    )
    # A job per stage lets a single rule rerun for an ablation; a job per shard pays the start-up (about
    # 13 s of imports on a GPU node, docs/gpus.md) and the model loading once for all its iterations.
    shard_jobs: Literal["iteration", "chain"] = setting(
        "iteration",
        "iteration: each shard's iteration is a paraphrase and an align job (single rules rerun); chain: one job "
        "per shard runs all its iterations with each model loaded once (spanaug iterate; fewer GPU-hours)",
    )
    device: str = inherit(
        Runtime, "device", help="device of every model job: auto (CUDA when present), cpu, cuda, cuda:N or mps"
    )
    constraints: ConstraintSettings = setting(factory=ConstraintSettings, help="constraint expansion")
    frame_elements: FrameElementSettings = setting(
        factory=FrameElementSettings, help="frame elements carried across each paraphrase"
    )
    paraphraser: ParaphraserSection = setting(factory=ParaphraserSection, help="the constrained paraphraser")
    aligner: AlignerSection = setting(factory=AlignerSection, help="the span aligner")
    baselines: BaselinesSection | None = setting(None, "word aligners against the span aligner (null: off)")
    filtering: FilteringSection = setting(factory=FilteringSection, help="heuristic and neural filters (§6.2)")
    human_eval: HumanEvalSettings | None = setting(None, "annotation task export and judgment import (null: off)")
    augmenters: AugmentersSection | None = setting(None, "augmenters for the Frame ID comparison (null: off)")
    frameid: FrameIdSection | None = setting(None, "the Figure 8 experiment (null: off)")
    argid: ArgIdSection | None = setting(
        None, "argument identification with and without the carried FEs, on frameid's split (null: off)"
    )
    stats: StatsSettings = setting(factory=StatsSettings, help="intrinsic statistics")
    report: ReportSettings = setting(
        factory=ReportSettings, help="the HTML report's tables, example chains and warnings"
    )
    resources: ResourcesSection = setting(factory=ResourcesSection, help="what jobs ask the scheduler for")


def config_schema() -> dict[str, Any]:
    """The JSON schema of a config file (written to workflow/schemas/config.schema.yaml)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema_of(RunConfig)}


def load_run_config(raw: dict[str, Any]) -> RunConfig:
    """A config file's contents as settings: checked against the schema, every default filled in."""
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(config_schema()).iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        raise ConfigError(schema_error_message(errors[0]))
    cfg = build(RunConfig, raw)
    problems = cfg.frame_elements.contradictions()
    if problems:
        raise ConfigError(problems[0])
    if cfg.argid and not cfg.frameid:
        raise ConfigError("argid: trains and tests on frameid's split: give frameid a section (it is null)")
    return cfg
