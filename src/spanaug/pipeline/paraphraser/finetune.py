"""Fine-tuning a pretrained paraphraser on a bitext (``paraphraser.train.init``).

A seq2seq model (T5, BART, Pegasus, Marian) trains as the paper's model does, with its own
tokenizer and ``paraphraser.prefix`` before each source. A decoder-only model (Llama, Gemma 3,
Qwen2; a GGUF file through its converted folder) learns to continue the very prompt the
decoder-only backend feeds it at decode time (:func:`.prompts.build_prompt` of the paraphraser's
settings, with the sentence and the word the pair names, :func:`.bitext.pick_word`): a training
row is the prompt's ids, then the paraphrase and what ends an output at decode time (a newline;
end of turn in a chat template), tokenized exactly as the backend's scorer does; the prompt's
positions are masked out of the loss (label -100), so the model learns the answer only.

Rows are left-padded, positions counted from the attention mask (as the backend counts them), so
every answer ends at the last position: the output projection (most of a step for a 262k-token
vocabulary) runs only on the answer's positions (``logits_to_keep``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from spanaug.core import model_files
from spanaug.core.config import DecodeSettings
from spanaug.pipeline.paraphraser import gguf_models, model_check
from spanaug.pipeline.paraphraser.bitext import Pair, pick_word
from spanaug.pipeline.paraphraser.prompts import WORD, Prompt, build_prompt

log = logging.getLogger(__name__)

#: A fine-tuned seq2seq model's longest source or target in tokens when neither the model nor its
#: tokenizer says (T5's relative positions): T5's own training length.
DEFAULT_MAX_LENGTH = 512


def kind_of(init: str) -> str:
    """``causal`` for a decoder-only model (a GGUF file among them), else ``seq2seq``."""
    return "causal" if model_check.is_decoder_only(init) else "seq2seq"


def load_initial(init: str, kind: str) -> tuple[Any, Any]:
    """(model, tokenizer) of the model ``paraphraser.train.init`` names, loaded as the paraphrase
    stage loads it: a GGUF file through its converted float32 folder, whose quantizer is gone, so
    the fine-tuned model saves as any other."""
    if kind == "causal":
        where, gguf = gguf_models.resolve(init)
        model_files.check_files(where)
        model = model_check.load_causal_model(init, where)
        source = Path(where) if gguf or Path(where).is_dir() else None
        tokenizer = model_files.load_tokenizer(init, model.config.vocab_size, source=source)
        log.info("fine-tuning decoder-only %s (%s)%s", init, model.config.model_type, f", from {where}" if gguf else "")
        return model, tokenizer
    model_files.check_files(init)
    model = model_check.load_model(init)
    tokenizer = model_files.load_tokenizer(init, model.config.vocab_size)
    log.info("fine-tuning seq2seq %s (%s)", init, model.config.model_type)
    return model, tokenizer


def load_checkpoint(kind: str, folder: str) -> tuple[Any, Any]:
    """(model, tokenizer) of a fine-tune's checkpoint."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    cls = AutoModelForCausalLM if kind == "causal" else AutoModelForSeq2SeqLM
    return cls.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def prepare_tokenizer(tokenizer: Any) -> Any:
    """A decoder-only tokenizer as the backend uses it: left padding, a pad token (its EOS when it
    has none, as Llama's; padding is masked anyway)."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def seq2seq_max_length(model: Any, tokenizer: Any) -> int:
    """The longest sequence a fine-tuned seq2seq model is trained on: its learned positions, the
    tokenizer's limit, or :data:`DEFAULT_MAX_LENGTH`, whichever is least."""
    limits = [model_check.positions(model.config), getattr(tokenizer, "model_max_length", None), DEFAULT_MAX_LENGTH]
    return min(n for n in limits if isinstance(n, int) and n > 0)


# ---------------------------------------------------------------- decoder-only rows


@dataclasses.dataclass(frozen=True)
class Example:
    """A decoder-only training or held-out row: source, paraphrase, and the word its prompt names."""

    source: str
    target: str
    word: str


def examples(pairs: Sequence[Pair], prompt: Prompt, what: str) -> list[Example]:
    """The rows of ``pairs`` (see :mod:`.bitext` for the word): with ``{word}`` in the prompt, a pair
    without a word is left out (counted in the log); without it, every pair is kept."""
    names_word = WORD in prompt.query
    out = []
    for source, target in pairs:
        word = pick_word(source, target)
        if word is None and names_word:
            continue
        out.append(Example(source, target, word or ""))
    if len(out) < len(pairs):
        log.info(
            "%s: %d of %d pairs left out: their paraphrase replaces no content word of the source, and the "
            "prompt names one ({word})",
            what,
            len(pairs) - len(out),
            len(pairs),
        )
    return out


class PromptIds:
    """A row's ids as the decoder-only backend makes them: the prompt's head (with the tokenizer's
    special tokens for a plain prompt, a trailing EOS dropped), the sentence's query (without), then
    the answer (the prompt's lead and the paraphrase, without) and its end: a newline, or EOS after
    a chat template's turn (what ``CausalParaphraser.score_outputs`` scores)."""

    def __init__(self, tokenizer: Any, prompt: Prompt):
        self.tokenizer = tokenizer
        self.prompt = prompt
        ids = tokenizer(prompt.head, add_special_tokens=prompt.head_specials)["input_ids"]
        if prompt.head_specials and len(ids) > 1 and ids[-1] == tokenizer.eos_token_id:
            ids = ids[:-1]
        self.head = list(ids)
        newline = tokenizer("\n", add_special_tokens=False)["input_ids"][-1:]
        self.end = [tokenizer.eos_token_id] if prompt.chat else newline

    def __call__(self, example: Example) -> tuple[list[int], list[int]]:
        """(the prompt's ids, the answer's ids)."""
        query = self.tokenizer(self.prompt.render(example.source, example.word), add_special_tokens=False)
        answer = self.tokenizer(self.prompt.lead + example.target, add_special_tokens=False)
        return self.head + list(query["input_ids"]), list(answer["input_ids"]) + self.end


class CausalCollator:
    """A batch of :class:`Example` rows: prompt and answer left-padded together, positions from the
    mask, labels -100 on the prompt and the padding."""

    def __init__(self, tokenizer: Any, prompt: Prompt):
        self.ids = PromptIds(tokenizer, prompt)
        self.pad = tokenizer.pad_token_id

    def __call__(self, batch: list[Example]) -> dict[str, torch.Tensor]:
        rows = [self.ids(example) for example in batch]
        longest = max(len(p) + len(a) for p, a in rows)
        ids, mask, labels = [], [], []
        for prompt, answer in rows:
            pad = longest - len(prompt) - len(answer)
            ids.append([self.pad] * pad + prompt + answer)
            mask.append([0] * pad + [1] * (len(prompt) + len(answer)))
            labels.append([-100] * (pad + len(prompt)) + answer)
        mask_t = torch.tensor(mask, dtype=torch.long)
        return {
            "input_ids": torch.tensor(ids, dtype=torch.long),
            "attention_mask": mask_t,
            "position_ids": (mask_t.cumsum(-1) - 1).clamp(min=0),
            "labels": torch.tensor(labels, dtype=torch.long),
        }

    def length(self, example: Example) -> int:
        prompt, answer = self.ids(example)
        return len(prompt) + len(answer)


def causal_prompt(decode: DecodeSettings, tokenizer: Any) -> Prompt:
    """The prompt a decoder-only model is fine-tuned on: the backend's, for these settings."""
    prompt = build_prompt(decode, tokenizer)
    log.info("fine-tuning prompt (chat template: %s):\n%s", prompt.chat, prompt.text("{sentence}", "{word}"))
    return prompt


def fitting(collator: CausalCollator, rows: list[Example], limit: int | None, what: str) -> list[Example]:
    """The rows whose prompt and answer fit the model's ``limit`` positions (the rest counted in the log):
    a row cut short would teach a prompt the backend never writes."""
    if not limit:
        return rows
    kept = [r for r in rows if collator.length(r) <= limit]
    if len(kept) < len(rows):
        log.warning("%s: %d rows longer than the model's %d positions left out", what, len(rows) - len(kept), limit)
    return kept


def answer_nll(model: Any, batch: dict[str, torch.Tensor], label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
    """(summed cross-entropy of a :class:`CausalCollator` batch's answer tokens, their count), the
    logits computed on the answers' positions only."""
    labels = batch["labels"]
    width = int((labels != -100).sum(-1).max())
    out = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        use_cache=False,
        logits_to_keep=width + 1,
    )
    logits = out.logits[:, :-1].float()  # position t predicts token t + 1
    targets = labels[:, -width:]
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=-100,
        reduction="sum",
        label_smoothing=label_smoothing,
    )
    return loss, int((targets != -100).sum())


def causal_trainer_class():
    """transformers' ``Trainer`` with the decoder-only loss: the answer tokens' mean cross-entropy
    (label-smoothed as ``label_smoothing_factor`` says), the prompt masked out."""
    from transformers import Trainer

    class CausalTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss, count = answer_nll(model, inputs, self.args.label_smoothing_factor)
            loss = loss / max(count, 1)
            return (loss, None) if return_outputs else loss

    return CausalTrainer
