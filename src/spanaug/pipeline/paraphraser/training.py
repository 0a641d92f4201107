"""Train the seed paper's paraphraser on a bitext: SentencePiece unigrams + a Transformer seq2seq;
or fine-tune a pretrained one on it (``paraphraser.train.init``, :mod:`.finetune`).

The paper's model: 6-layer encoder, 4-layer decoder, 8 heads, d_model 512, feed-forward 2048,
trained with teacher forcing on a paraphrase bitext (ParaBank 2). We build that shape as a
Hugging Face BART model so the ``hf`` decoding backend loads it with ``from_pretrained``.

Either way a share of the bitext's sources is held out (``heldout_share``) and the trained model
is scored on it (:mod:`.heldout`): loss, chrF and BLEU, in ``heldout_metrics.json`` beside it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from spanaug.core import files, modeldir
from spanaug.core.bitext import read_bitext
from spanaug.core.config import DecodeSettings, ParaphraserArchitecture, ParaphraserTrainSettings
from spanaug.core.devices import choose_device, choose_dtype
from spanaug.core.errors import InputError
from spanaug.pipeline.paraphraser import finetune
from spanaug.pipeline.paraphraser import heldout as heldout_mod
from spanaug.pipeline.paraphraser.bitext import split_heldout

log = logging.getLogger(__name__)

SPECIAL = {"pad": "<pad>", "eos": "</s>", "unk": "<unk>", "bos": "<s>"}


def train_tokenizer(texts: list[str], vocab_size: int):
    """A SentencePiece unigram model trained on ``texts``, as a fast HF tokenizer.

    Trained with the ``sentencepiece`` library (deterministic for a given input), then its pieces
    and scores become a ``tokenizers`` Unigram model, so the result saves and loads as a plain
    Hugging Face tokenizer (``tokenizer.json``).
    """
    import io

    import sentencepiece as spm
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type="unigram",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=3,
        pad_piece=SPECIAL["pad"],
        eos_piece=SPECIAL["eos"],
        unk_piece=SPECIAL["unk"],
        bos_piece=SPECIAL["bos"],
        hard_vocab_limit=False,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tok = Tokenizer(models.Unigram(pieces, unk_id=sp.unk_id()))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(list(SPECIAL.values()))
    tok.post_processor = TemplateProcessing(
        single=f"$A {SPECIAL['eos']}", special_tokens=[(SPECIAL["eos"], sp.eos_id())]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=SPECIAL["pad"],
        eos_token=SPECIAL["eos"],
        unk_token=SPECIAL["unk"],
        bos_token=SPECIAL["bos"],
    )


def build_model(cfg: ParaphraserArchitecture, tokenizer):
    from transformers import BartConfig, BartForConditionalGeneration

    config = BartConfig(
        vocab_size=len(tokenizer),
        d_model=cfg.d_model,
        encoder_layers=cfg.encoder_layers,
        decoder_layers=cfg.decoder_layers,
        encoder_attention_heads=cfg.attention_heads,
        decoder_attention_heads=cfg.attention_heads,
        encoder_ffn_dim=cfg.ffn_dim,
        decoder_ffn_dim=cfg.ffn_dim,
        max_position_embeddings=cfg.max_positions,
        dropout=cfg.dropout,
        scale_embedding=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id,
        forced_bos_token_id=None,
        forced_eos_token_id=None,
        # BART is post-norm; CTranslate2's converter still reads this field, which transformers 5 dropped.
        normalize_before=False,
    )
    model = BartForConditionalGeneration(config)
    gen = model.generation_config
    gen.forced_bos_token_id = None
    gen.forced_eos_token_id = None
    gen.no_repeat_ngram_size = 0
    gen.num_beams = 1
    return model


class PairCollator:
    """Tokenizes a batch of (source, paraphrase) pairs when the batch is drawn, padded per batch,
    ``prefix`` before each source (``paraphraser.prefix``, as the backends put it at decode time).

    The decoder inputs are made here from the labels (the trainer computes a label-smoothed loss
    itself, so the model is not given the labels).
    """

    def __init__(self, tokenizer, model, max_length: int, prefix: str = ""):
        self.tokenizer = tokenizer
        self.model = model
        self.max_length = max_length
        self.prefix = prefix

    def __call__(self, batch: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
        enc = dict(
            self.tokenizer(
                [self.prefix + s for s, _ in batch],
                text_target=[t for _, t in batch],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
        )
        enc["decoder_input_ids"] = self.model.prepare_decoder_input_ids_from_labels(labels=enc["labels"])
        enc["labels"] = enc["labels"].masked_fill(enc["labels"] == self.tokenizer.pad_token_id, -100)
        return enc


def _deadline_callback(minutes: float):
    """A trainer callback that stops training once ``minutes`` of it have passed."""
    from transformers import TrainerCallback

    class Deadline(TrainerCallback):
        def __init__(self) -> None:
            self.deadline = time.monotonic() + minutes * 60

        def on_step_end(self, args, state, control, **kwargs):
            if time.monotonic() > self.deadline:
                control.should_training_stop = True
            return control

    return Deadline()


def _umask_callback(checkpoints: Path):
    """A trainer callback that gives each checkpoint the umask's permissions once it is saved (its
    weights are written 0600 through safetensors' temporary file), so a killed job's checkpoints
    are as readable as every other artifact."""
    from transformers import TrainerCallback

    class Umask(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            files.apply_umask_tree(checkpoints)
            return control

    return Umask()


@dataclasses.dataclass
class Setup:
    """What a run trains: the model and tokenizer, its rows, collator and trainer class, the held-out
    rows (scored for the loss), the held-out pairs (decoded for chrF and BLEU) and the function that
    gives a held-out batch's summed loss and token count."""

    model: Any
    tokenizer: Any
    kind: str  # "scratch", "seq2seq" or "causal"
    train: list[Any]
    heldout: list[Any]
    heldout_pairs: list[tuple[str, str]]
    collator: Any
    trainer_cls: Any
    nll: Callable[[Any, dict[str, torch.Tensor]], tuple[torch.Tensor, int]]


def _setup(
    cfg: ParaphraserTrainSettings, decode: DecodeSettings, pairs: list[tuple[str, str]], last: str | None
) -> Setup:
    """The model (from ``last``, a checkpoint to resume from, when there is one) and the rows of
    ``pairs`` it trains on, by kind: the paper's model from scratch, a seq2seq fine-tune or a
    decoder-only fine-tune."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, Seq2SeqTrainer

    train, heldout = split_heldout(pairs, cfg.heldout_share)
    # Train on both directions: paraphrase is symmetric, and it doubles tiny bitexts.
    both = train + [(b, a) for a, b in train]
    if cfg.init is None:
        if last is not None:
            tokenizer, model = AutoTokenizer.from_pretrained(last), AutoModelForSeq2SeqLM.from_pretrained(last)
        else:
            tokenizer = train_tokenizer([t for pair in train for t in pair], cfg.vocab_size)
            model = build_model(cfg, tokenizer)
        collator = PairCollator(tokenizer, model, cfg.max_positions, decode.prefix)
        return Setup(
            model, tokenizer, "scratch", both, heldout, heldout, collator, Seq2SeqTrainer, heldout_mod.seq2seq_nll
        )
    log.info(
        "paraphraser.train.init %s: fine-tuning it; the architecture settings (vocab_size, d_model, ...) do not apply",
        cfg.init,
    )
    kind = finetune.kind_of(cfg.init)
    model, tokenizer = finetune.load_checkpoint(kind, last) if last else finetune.load_initial(cfg.init, kind)
    if kind == "seq2seq":
        length = finetune.seq2seq_max_length(model, tokenizer)
        collator = PairCollator(tokenizer, model, length, decode.prefix)
        return Setup(
            model, tokenizer, "seq2seq", both, heldout, heldout, collator, Seq2SeqTrainer, heldout_mod.seq2seq_nll
        )
    tokenizer = finetune.prepare_tokenizer(tokenizer)
    prompt = finetune.causal_prompt(decode, tokenizer)
    collator = finetune.CausalCollator(tokenizer, prompt)
    limit = getattr(model.config, "max_position_embeddings", None)
    rows = finetune.fitting(collator, finetune.examples(both, prompt, "training pairs"), limit, "training pairs")
    held = finetune.fitting(collator, finetune.examples(heldout, prompt, "held-out pairs"), limit, "held-out pairs")
    if not rows:
        raise InputError(cfg.bitext, None, "no training pair left to fine-tune on (see the log)")
    return Setup(
        model,
        tokenizer,
        "causal",
        rows,
        held,
        heldout,
        collator,
        finetune.causal_trainer_class(),
        finetune.answer_nll,
    )


def _heldout_loss(setup: Setup, model: Any, batch_size: int, device: torch.device) -> float | None:
    batches = [setup.collator(setup.heldout[i : i + batch_size]) for i in range(0, len(setup.heldout), batch_size)]
    return heldout_mod.mean_loss(model, batches, setup.nll, device)


#: The pretrained model's held-out loss, kept beside the checkpoints for a resumed run's metrics.
INITIAL_LOSS_FILE = "initial_heldout_loss.json"


def _initial_loss(
    setup: Setup, cfg: ParaphraserTrainSettings, checkpoints: Path, last: str | None, dev: torch.device
) -> float | None:
    """A fine-tune's held-out loss before training (what it gained), computed once, before the first step."""
    if setup.kind == "scratch" or not setup.heldout:
        return None
    record = checkpoints / INITIAL_LOSS_FILE
    if last is not None:
        return files.read_json(record).get("loss") if record.is_file() else None
    loss = _heldout_loss(setup, setup.model.to(dev), cfg.batch_size, dev)
    log.info("held-out loss of %s before fine-tuning: %s", cfg.init, loss)
    files.write_json({"init": cfg.init, "loss": loss}, record)
    return loss


def train_paraphraser(
    cfg: ParaphraserTrainSettings,
    out: Path | str,
    device: str = "auto",
    progress: bool = True,
    decode: DecodeSettings | None = None,
) -> dict:
    """Train (or resume) a paraphraser with transformers' ``Seq2SeqTrainer`` (a decoder-only
    fine-tune: ``Trainer`` with the prompt masked out of the loss); saved into ``out``.

    From scratch, the paper's optimisation: AdamW (0.9, 0.98), linear warm-up then inverse square-root
    decay, label smoothing, gradient clipping at 1; a fine-tune of ``cfg.init`` uses the same.
    Checkpoints go to ``out/checkpoints`` every ``checkpoint_every`` steps; a rerun resumes from the
    last one. ``decode`` (the paraphrase stage's settings; defaults when None) gives the prefix of a
    seq2seq model, the prompt of a decoder-only one, and the settings of the held-out decoding. The
    held-out metrics (:mod:`.heldout`) go to ``out/heldout_metrics.json`` and the training summary.
    """
    from transformers import Seq2SeqTrainingArguments, set_seed
    from transformers.trainer_utils import get_last_checkpoint

    decode = decode or DecodeSettings()
    # The device first: a job given a GPU that torch cannot use stops before anything is written.
    dev = choose_device(device)
    # Mixed precision where the GPU has bf16 (float32 weights, bf16 compute); float32 elsewhere.
    bf16 = choose_dtype(dev, "bfloat16" if dev.type == "cuda" and torch.cuda.is_bf16_supported() else "float32")
    out = Path(out)
    checkpoints = out / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    pairs = read_bitext(cfg.bitext)
    set_seed(cfg.seed)
    last = get_last_checkpoint(str(checkpoints))
    if last is not None:
        log.info("resuming from %s", last)
    setup = _setup(cfg, decode, pairs, last)
    initial_loss = _initial_loss(setup, cfg, checkpoints, last, dev)
    args = Seq2SeqTrainingArguments(
        output_dir=str(checkpoints),
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="inverse_sqrt",
        warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay,
        adam_beta1=0.9,
        adam_beta2=0.98,
        adam_epsilon=1e-9,
        max_grad_norm=1.0,
        label_smoothing_factor=cfg.label_smoothing,
        save_strategy="steps",
        save_steps=cfg.checkpoint_every,
        save_total_limit=cfg.keep_checkpoints,
        seed=cfg.seed,
        data_seed=cfg.seed,
        logging_steps=10,
        report_to=[],
        remove_unused_columns=False,
        dataloader_num_workers=0,
        disable_tqdm=not progress,
        use_cpu=dev.type == "cpu",
        bf16=bf16 == torch.bfloat16,
    )
    trainer = setup.trainer_cls(
        model=setup.model,
        args=args,
        train_dataset=setup.train,
        data_collator=setup.collator,
        processing_class=setup.tokenizer,
        callbacks=[_umask_callback(checkpoints)]
        + ([_deadline_callback(cfg.max_minutes)] if cfg.max_minutes is not None else []),
    )
    result = trainer.train(resume_from_checkpoint=last)
    trainer.save_model(str(out))
    # Checked on every load (hf_backend); the checkpoints, the summary and the metrics change on a resumed run.
    modeldir.write_manifest(out, skip=("checkpoints", modeldir.TRAINING_SUMMARY, heldout_mod.METRICS_FILE))
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    loss = _heldout_loss(setup, trainer.model, cfg.batch_size, dev) if setup.heldout else None
    metrics = heldout_mod.evaluate(
        out, setup.heldout_pairs, decode, cfg.heldout_beam, cfg.heldout_decode, device=device, loss=loss
    )
    metrics = {"model": cfg.init or "the paper's architecture, from scratch", **metrics}
    if cfg.init is not None:
        metrics["initial_loss"] = None if initial_loss is None else round(initial_loss, 4)
    files.write_json(metrics, out / heldout_mod.METRICS_FILE)
    log.info("paraphraser held out: %s", heldout_mod.describe(metrics))
    summary = {
        "steps": trainer.state.global_step,
        "final_loss": losses[-1] if losses else result.training_loss,
        "pairs": len(pairs),
        "train_rows": len(setup.train),
        "init": cfg.init,
        "heldout": {k: v for k, v in metrics.items() if k != "examples"},
        "config": dataclasses.asdict(cfg),
    }
    modeldir.write_training_summary(out, summary)
    files.apply_umask_tree(out)  # the saved weights, as the checkpoints' (see _umask_callback)
    log.info("paraphraser trained: %s", {k: v for k, v in summary.items() if k != "config"})
    return summary
