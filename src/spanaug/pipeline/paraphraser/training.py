"""Train the seed paper's paraphraser on a bitext: SentencePiece unigrams + a Transformer seq2seq.

The paper's model: 6-layer encoder, 4-layer decoder, 8 heads, d_model 512, feed-forward 2048,
trained with teacher forcing on a paraphrase bitext (ParaBank 2). We build that shape as a
Hugging Face BART model so the ``hf`` decoding backend loads it with ``from_pretrained``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import shutil
import time
from pathlib import Path

import torch
from tqdm import tqdm

from spanaug.core.devices import choose_device
from spanaug.core.errors import InputError

log = logging.getLogger(__name__)

SPECIAL = {"pad": "<pad>", "eos": "</s>", "unk": "<unk>", "bos": "<s>"}


@dataclasses.dataclass
class ParaphraserConfig:
    """Architecture and optimisation; the defaults are the paper's architecture."""

    vocab_size: int = 32000
    d_model: int = 512
    encoder_layers: int = 6
    decoder_layers: int = 4
    attention_heads: int = 8
    ffn_dim: int = 2048
    max_positions: int = 256
    dropout: float = 0.1
    label_smoothing: float = 0.1
    learning_rate: float = 3e-4
    warmup_steps: int = 4000
    weight_decay: float = 0.0
    batch_size: int = 64
    max_steps: int = 100000
    max_minutes: float | None = None
    checkpoint_every: int = 1000
    keep_checkpoints: int = 2
    seed: int = 0


def read_bitext(path: Path | str) -> list[tuple[str, str]]:
    """``source<TAB>paraphrase`` lines; a malformed line is an error naming its number."""
    pairs = []
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 2 or not cols[0].strip() or not cols[1].strip():
                raise InputError(path, lineno, "expected 'source<TAB>paraphrase' with both sides non-empty")
            pairs.append((cols[0].strip(), cols[1].strip()))
    if not pairs:
        raise InputError(path, None, "bitext holds no pairs")
    return pairs


def train_tokenizer(texts: list[str], vocab_size: int):  # noqa: ANN201
    """A SentencePiece unigram model trained on ``texts``, as a fast HF tokenizer.

    Trained with the ``sentencepiece`` library (deterministic for a given input), then its pieces
    and scores become a ``tokenizers`` Unigram model, so the result saves and loads as a plain
    Hugging Face tokenizer (``tokenizer.json``).
    """
    import io

    import sentencepiece as spm
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
    )
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=buf, vocab_size=vocab_size, model_type="unigram",
        pad_id=0, eos_id=1, unk_id=2, bos_id=3, pad_piece=SPECIAL["pad"], eos_piece=SPECIAL["eos"],
        unk_piece=SPECIAL["unk"], bos_piece=SPECIAL["bos"], hard_vocab_limit=False, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tok = Tokenizer(models.Unigram(pieces, unk_id=sp.unk_id()))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(list(SPECIAL.values()))
    tok.post_processor = TemplateProcessing(single=f"$A {SPECIAL['eos']}", special_tokens=[(SPECIAL["eos"], sp.eos_id())])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=SPECIAL["pad"], eos_token=SPECIAL["eos"],
                                   unk_token=SPECIAL["unk"], bos_token=SPECIAL["bos"])


def build_model(cfg: ParaphraserConfig, tokenizer):  # noqa: ANN001, ANN201
    from transformers import BartConfig, BartForConditionalGeneration

    config = BartConfig(
        vocab_size=len(tokenizer), d_model=cfg.d_model, encoder_layers=cfg.encoder_layers,
        decoder_layers=cfg.decoder_layers, encoder_attention_heads=cfg.attention_heads,
        decoder_attention_heads=cfg.attention_heads, encoder_ffn_dim=cfg.ffn_dim, decoder_ffn_dim=cfg.ffn_dim,
        max_position_embeddings=cfg.max_positions, dropout=cfg.dropout, scale_embedding=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.eos_token_id, forced_bos_token_id=None, forced_eos_token_id=None,
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


def _lr_lambda(warmup: int):  # noqa: ANN202
    """Linear warm-up then inverse square-root decay (the Transformer schedule)."""
    def f(step: int) -> float:
        step = max(step, 1)
        return min(step / max(warmup, 1), math.sqrt(max(warmup, 1) / step))
    return f


def _last_checkpoint(out: Path) -> Path | None:
    ckpts = sorted((out / "checkpoints").glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    return ckpts[-1] if ckpts else None


def _save_checkpoint(out: Path, model, tokenizer, optimizer, scheduler, step: int, keep: int) -> None:  # noqa: ANN001
    ckpt_root = out / "checkpoints"
    tmp = ckpt_root / f".step-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step,
                "rng": torch.get_rng_state(), "py_rng": random.getstate()}, tmp / "trainer_state.pt")
    final = ckpt_root / f"step-{step}"
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in sorted(ckpt_root.glob("step-*"), key=lambda p: int(p.name.split("-")[1]))[:-keep]:
        shutil.rmtree(old)


def train_paraphraser(bitext: Path | str, out: Path | str, cfg: ParaphraserConfig, device: str | None = "auto",
                      progress: bool = True) -> dict:
    """Train (or resume) a paraphraser; saves it with ``save_pretrained`` into ``out``."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pairs = read_bitext(bitext)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    dev = choose_device(device)
    ckpt = _last_checkpoint(out)
    if ckpt is not None:
        log.info("resuming from %s", ckpt)
        tokenizer = AutoTokenizer.from_pretrained(ckpt)
        model = AutoModelForSeq2SeqLM.from_pretrained(ckpt)
    else:
        # Train on both directions: paraphrase is symmetric, and it doubles tiny bitexts.
        tokenizer = train_tokenizer([t for pair in pairs for t in pair], cfg.vocab_size)
        model = build_model(cfg, tokenizer)
    model.to(dev).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, betas=(0.9, 0.98), eps=1e-9,
                                  weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(cfg.warmup_steps))
    step = 0
    if ckpt is not None:
        state = torch.load(ckpt / "trainer_state.pt", weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        torch.set_rng_state(state["rng"])
        random.setstate(state["py_rng"])
    data = pairs + [(b, a) for a, b in pairs]
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=cfg.label_smoothing)
    deadline = time.monotonic() + cfg.max_minutes * 60 if cfg.max_minutes is not None else math.inf
    losses: list[float] = []
    bar = tqdm(total=cfg.max_steps, initial=step, desc="train paraphraser", disable=not progress)
    while step < cfg.max_steps:
        random.shuffle(data)
        for i in range(0, len(data), cfg.batch_size):
            batch = data[i : i + cfg.batch_size]
            enc = tokenizer([s for s, _ in batch], padding=True, truncation=True, max_length=cfg.max_positions,
                            return_tensors="pt").to(dev)
            labels = tokenizer(text_target=[t for _, t in batch], padding=True, truncation=True,
                               max_length=cfg.max_positions, return_tensors="pt")["input_ids"].to(dev)
            labels = labels.masked_fill(labels == tokenizer.pad_token_id, -100)
            logits = model(**enc, labels=labels).logits
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            losses.append(loss.item())
            bar.update(1)
            if step % cfg.checkpoint_every == 0:
                _save_checkpoint(out, model, tokenizer, optimizer, scheduler, step, cfg.keep_checkpoints)
            if step >= cfg.max_steps or time.monotonic() > deadline:
                break
        if time.monotonic() > deadline:
            break
    bar.close()
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    summary = {"steps": step, "final_loss": sum(losses[-20:]) / max(1, len(losses[-20:])) if losses else None,
               "pairs": len(pairs), "config": dataclasses.asdict(cfg)}
    (out / "training_summary.json").write_text(json.dumps(summary, indent=2))
    log.info("paraphraser trained: %s", summary)
    return summary
