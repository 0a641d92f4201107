"""Prompts for decoder-only paraphrasers, and the check of what such a model writes.

A decoder-only model paraphrases by continuing a prompt: an instruction, a few examples (a word, a
sentence, a rewrite of the sentence without the word) and the sentence's own block, ending in a
label ("Rewrite:") or, with a chat template, in the assistant's turn. The prompt is held in two
parts: the **head** (instruction and examples, the same for every sentence, whose keys and values
the backend computes once) and the **query**, the sentence's block with ``{sentence}`` and
``{word}`` placeholders (``{word}`` is the request's span text: what the constraints ban first).

A continuation ends at the first newline or end of sequence. What it holds is checked
(:class:`OutputCheck`): a leading prompt label is stripped ("Rewrite: The ..."), and chatter
("Here's a rephrased version..."), echoed prompt text (a label inside the text, an example) and a
copy of the source are refused, never output; each is counted in the stage's stats.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError, InputError

#: Placeholders of ``paraphraser.prompt``.
SENTENCE, WORD = "{sentence}", "{word}"


@dataclasses.dataclass(frozen=True)
class Example:
    """A few-shot example: the banned word, the sentence, and its rewrite without the word."""

    word: str
    sentence: str
    rewrite: str


#: The built-in examples: a word replaced by a synonym or a paraphrase of it, everything else kept,
#: in sentences as long as FrameNet's (none of them is a FrameNet sentence). With short sentences
#: (10 words) Gemma 3 270M shortened FrameNet dev sentences to 0.73 of their words on average,
#: deleting the word and whole clauses around it, mean MiniLM cosine 0.90; with these, 0.85 of
#: their words and cosine 0.95 (12 sentences, beam 5, scripts/lm_check.py).
DEFAULT_EXAMPLES = (
    Example(
        "evidence",
        "Investigators said on Monday that there is still no evidence that the fire at the warehouse was started "
        "on purpose.",
        "Investigators said on Monday that there is still no proof that the fire at the warehouse was started "
        "on purpose.",
    ),
    Example(
        "bought",
        "Last year the company bought two small factories in the north, and it plans to open a third one soon.",
        "Last year the company purchased two small factories in the north, and it plans to open a third one soon.",
    ),
    Example(
        "take part",
        "More than two hundred students from five countries will take part in the contest, which starts next week.",
        "More than two hundred students from five countries will participate in the contest, which starts next week.",
    ),
    Example(
        "angry",
        "The farmers, who had waited for months, were angry about the new rules on water use.",
        "The farmers, who had waited for months, were furious about the new rules on water use.",
    ),
)


def load_examples(path: str | Path | None) -> tuple[Example, ...]:
    """The examples of a JSONL file (``{"word", "sentence", "rewrite"}`` a line), or the built-in ones."""
    if path is None:
        return DEFAULT_EXAMPLES
    examples = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConfigError(f"paraphraser.few_shot: {path}: cannot be read ({err.strerror or err})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            example = Example(*(row[key] for key in ("word", "sentence", "rewrite")))
        except (ValueError, KeyError, TypeError):
            raise InputError(path, n, 'not a JSON object with "word", "sentence" and "rewrite" strings') from None
        if not all(isinstance(v, str) and v.strip() and "\n" not in v for v in dataclasses.astuple(example)):
            raise InputError(path, n, '"word", "sentence" and "rewrite" must be non-empty one-line strings')
        examples.append(example)
    return tuple(examples)


def fill(template: str, sentence: str, word: str) -> str:
    """``template`` with its placeholders replaced (not ``str.format``: braces elsewhere are text)."""
    return template.replace(WORD, word).replace(SENTENCE, sentence)


def span_text(request: dict[str, Any]) -> str:
    """A request's span as text: the ``{word}`` of its prompt."""
    tokens = request["source_tokens"]
    return " ".join(tokens[request["source_span_start"] : request["source_span_end"] + 1])


@dataclasses.dataclass(frozen=True)
class Prompt:
    """A prompt as its shared head and a sentence's query (see the module's docstring)."""

    head: str
    query: str
    #: The head tokenized with the tokenizer's special tokens (a plain prompt's BOS); a chat
    #: template writes its own.
    head_specials: bool
    #: What the answer follows the prompt with when it is scored: a space after a label, nothing
    #: after a chat template's turn.
    lead: str
    #: The block's labels ("Word", "Sentence", "Rewrite"): stripped at an output's start, refused inside it.
    labels: tuple[str, ...]
    examples: tuple[Example, ...]
    chat: bool

    def render(self, sentence: str, word: str) -> str:
        """The sentence's query."""
        return fill(self.query, sentence, word)

    def text(self, sentence: str, word: str) -> str:
        """The whole prompt of a sentence (head and query)."""
        return self.head + self.render(sentence, word)


#: Where a chat template's rendering is split into head and query (a template may trim a message,
#: never a character inside it).
_SPLIT = "\u0000spanaug-query\u0000"


def build_prompt(cfg: DecodeSettings, tokenizer: Any) -> Prompt:
    """The prompt ``cfg`` describes, in the tokenizer's chat template when ``cfg.prompt_format``
    says so (auto: when it has one)."""
    if SENTENCE not in cfg.prompt:
        raise ConfigError(f"paraphraser.prompt: {cfg.prompt!r} has no {SENTENCE} placeholder")
    examples = load_examples(cfg.few_shot)
    has_template = bool(getattr(tokenizer, "chat_template", None))
    chat = has_template if cfg.prompt_format == "auto" else cfg.prompt_format == "chat"
    if chat and not has_template:
        raise ConfigError("paraphraser.prompt_format: chat, but the model's tokenizer has no chat template")
    labels = tuple(dict.fromkeys(re.findall(r"(?m)^\s*([A-Za-z][A-Za-z ]{0,30}):", cfg.prompt)))
    instruction = cfg.instruction.strip()
    if not chat:
        head = "".join(f"{instruction}\n\n" if instruction else "")
        head += "".join(f"{fill(cfg.prompt, ex.sentence, ex.word)} {ex.rewrite}\n\n" for ex in examples)
        lead = "" if cfg.prompt[-1:].isspace() else " "
        return Prompt(head, cfg.prompt, True, lead, labels, examples, chat=False)
    messages: list[dict[str, str]] = []
    for ex in examples:
        opening = f"{instruction}\n\n" if instruction and not messages else ""
        messages.append({"role": "user", "content": opening + fill(cfg.prompt, ex.sentence, ex.word)})
        messages.append({"role": "assistant", "content": ex.rewrite})
    opening = f"{instruction}\n\n" if instruction and not messages else ""
    messages.append({"role": "user", "content": _SPLIT + opening + cfg.prompt})
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    head, found, query = rendered.partition(_SPLIT)
    if not found:
        raise ConfigError("paraphraser.prompt_format: chat, but the tokenizer's chat template drops the prompt's text")
    return Prompt(head, query, False, "", labels, examples, chat=True)


#: Chatter that opens or replaces an answer: what an instruction-tuned model says about its answer.
CHATTER = re.compile(
    r"^(?:sure|certainly|of course|okay|ok|absolutely)\b\s*[,!.:]"
    r"|^here(?:'s| is| are)\b"
    r"|^(?:as an ai|i'm sorry|i am sorry)\b"
    r"|\b(?:rephrased|rewritten|paraphrased|revised) (?:version|sentence|text)\b"
    r"|\b(?:the given|the original) (?:word|sentence)\b"
    r"|:\s*$",
    re.IGNORECASE,
)


def _norm(text: str) -> str:
    """Text compared for copies: lower-cased, letters and digits only, words single-spaced."""
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


class OutputCheck:
    """What a decoder-only model's continuation holds, checked: the text up to its first newline,
    a leading prompt label stripped; None for chatter, echoed prompt text or a copy of the source."""

    def __init__(self, prompt: Prompt):
        self.labels = prompt.labels
        self.label_start = re.compile(
            r"^\s*(?:" + "|".join(re.escape(label) for label in prompt.labels) + r")\s*:\s*", re.IGNORECASE
        )
        self.label_inside = re.compile(
            r"\b(?:" + "|".join(re.escape(label) for label in prompt.labels) + r")\s*:", re.IGNORECASE
        )
        self.echoes = {_norm(t) for ex in prompt.examples for t in (ex.sentence, ex.rewrite)} - {""}

    def __call__(self, text: str, source: str) -> tuple[str | None, str]:
        """(the text kept or None, why: ``kept``, ``stripped``, ``chatter``, ``echo`` or ``copy``)."""
        text = text.split("\n", 1)[0].strip()
        why = "kept"
        if self.labels and (found := self.label_start.match(text)):
            text, why = text[found.end() :].strip(), "stripped"
        if not text:
            return None, "chatter"
        if CHATTER.search(text):
            return None, "chatter"
        if self.labels and self.label_inside.search(text):
            return None, "echo"
        normed = _norm(text)
        if normed == _norm(source):
            return None, "copy"
        if normed in self.echoes:
            return None, "echo"
        return text, why
