"""Decoder-only paraphrasers (``AutoModelForCausalLM``: Llama, Gemma 3, Qwen2, ...): a prompt continued.

The paraphrase loop is every decoder's (:mod:`.decode_loop`: chunks, batches by a token budget,
OOM splitting, output checks, scoring, ranking); this decoder (on the hf one) changes what a
batch's inputs are, how it decodes, what its text is, and how an output is scored.

* **The prompt** (:mod:`.prompts`) is a head shared by every sentence (instruction, few-shot
  examples) and a sentence's query. The head's keys and values are computed once per prompt and
  kept; a batch's queries are run once per sentence on a copy of them (left-padded after the head,
  positions counted from the attention mask, so padding changes nothing), and the cache is then
  repeated for the sentence's beams (``batch_repeat_interleave``): the prompt is not run again per
  beam, as ``generate`` with ``num_beams`` would (it repeats the inputs before its prefill).
* **Beam search** is the engine's (:mod:`.causal_search`, on :mod:`.beam_search`): generate's
  beams and scores, each beam's best tokens selected first, the bans applied before one
  normalisation, and sentences done leaving the batch (so a CPU batch may hold four sentences at
  beam 20: the output projection's weights are read once for more rows). Sampling, and beam
  search with ``own_search`` off (the tests' reference), run on ``generate``, given the prompt's
  cache and the whole prompt: it runs only the prompt's last token.
* **Bans** are the seq2seq ones (each sentence's own, in the step: :class:`TensorBannedSequences`),
  applied to the continuation only (:class:`ContinuationBans`): the prompt's tokens never
  complete a banned sequence. The decoded text is checked against every banned form afterwards,
  as for seq2seq models: a large vocabulary splits rare upper-case forms into pieces a ban of the
  form's usual tokenization does not cover.
* **The output** ends at the first newline or end of sequence: every token whose text holds a
  newline is an end token of the search spec beside the model's own. It is cut there, and
  chatter, echoed prompt text and copies of the source are refused (:class:`.prompts.OutputCheck`),
  counted in the stats.
* **The score** is the length-normalised negative log-likelihood of the continuation (and its
  end: a newline, or end of turn in a chat) given the prompt, computed on the shared head too.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import LogitsProcessor

from spanaug.core import int8_linear, model_files
from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_device
from spanaug.pipeline.paraphraser import causal_search, gguf_models, model_check, search_spec
from spanaug.pipeline.paraphraser.batching import default_max_batch_tokens
from spanaug.pipeline.paraphraser.beam_cache import BeamCache
from spanaug.pipeline.paraphraser.beam_search import GPU_SYNC_EVERY, SearchSettings
from spanaug.pipeline.paraphraser.causal_search import PLACEHOLDER_START, CausalState
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE
from spanaug.pipeline.paraphraser.paraphrase_decoder import HostTools, Prepared, SentenceBeams, per_sentence
from spanaug.pipeline.paraphraser.processors import PerSentenceMaxNewTokens, TensorBannedSequences
from spanaug.pipeline.paraphraser.prompts import OutputCheck, Prompt, build_prompt, span_text
from spanaug.pipeline.paraphraser.rust_tokenizer import decode_texts
from spanaug.pipeline.paraphraser.search_spec import SearchSpec
from spanaug.pipeline.paraphraser.topk import TOPK_CHUNK

log = logging.getLogger(__name__)

#: The decode budget on CPU (sentences x longest source x width) for ``generate``'s search (sampling,
#: and beam search as a reference): about 30 decoder rows of 35-token sentences (five sentences at
#: beam 5, one at beam 20). Its batch runs until its slowest sentence is done, so every row of a
#: sentence done early is work lost.
CPU_BATCH_TOKENS = 1024
#: The engine's beam search (:mod:`.causal_search`) on CPU: about 120 rows (four sentences at beam
#: 20). A sentence done leaves its batch, and a step's output projection (the whole vocabulary's
#: weights read once for every row) costs less a row the more rows share it: Gemma 3 270M's in bf16
#: took 1.9 ms a row at 20 rows, 1.3 at 40, 1.1 at 80 (2-core CPU).
CPU_SEARCH_BATCH_TOKENS = 4096

#: Scoring: logits computed at once, rows x positions x vocabulary (float32: 256 MB).
SCORE_LOGITS = 1 << 26


class ContinuationBans(LogitsProcessor):
    """A constraint processor shown only the continuation: the history from ``start`` (the
    prompt's length, the same for every row of a left-padded batch)."""

    def __init__(self, inner: Any, start: int):
        self.inner = inner
        self.start = start

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.inner(input_ids[:, self.start :], scores)


@dataclasses.dataclass
class Head:
    """A prompt's shared head on the device: its ids ``[1, P]`` and its keys and values (batch 1)."""

    ids: torch.Tensor
    cache: Any


class CausalParaphraser(HFParaphraser):
    """A decoder-only paraphraser (``AutoModelForCausalLM``) prompted to rewrite each sentence."""

    name = "causal paraphraser"
    #: Compute the head once and each query once per sentence, shared by its beams (False: hand
    #: ``generate`` the whole prompt, as a reference).
    share_prompt: bool = True

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype, int8: bool = False):
        super().__init__(model, tokenizer, device, dtype, int8)
        if tokenizer.pad_token_id is None:  # Llama-style tokenizers have none; padding is masked anyway
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        self._prompts: dict[tuple, tuple[Prompt, OutputCheck]] = {}
        self._heads: dict[str, Head] = {}
        self.active: tuple[Prompt, OutputCheck] | None = None

    @classmethod
    def from_pretrained(
        cls, name_or_path: str | Path, device: str | None = "auto", dtype: str | None = "auto"
    ) -> CausalParaphraser:
        dev = choose_device(device)
        torch_dtype, int8 = cls.torch_dtype(dev, dtype)
        where, gguf = gguf_models.resolve(name_or_path)
        model_files.check_files(where)
        model = model_check.load_causal_model(name_or_path, where)
        tokenizer = model_files.load_tokenizer(
            name_or_path, model.config.vocab_size, source=Path(where) if gguf or Path(where).is_dir() else None
        )
        paraphraser = cls(model, tokenizer, dev, torch_dtype, int8)
        paraphraser.name = str(name_or_path)
        log.info(
            "paraphraser: decoder-only %s (%s, %.0fM parameters)%s",
            name_or_path,
            model.config.model_type,
            int8_linear.parameter_count(model) / 1e6,
            f", from {gguf} converted to {where}" if gguf else "",
        )
        return paraphraser

    @functools.cached_property
    def cache_kwarg(self) -> str:
        """What the model's forward calls its cache: ``cache`` (transformers 5.x), once ``past_key_values``."""
        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    # ------------------------------------------------------------ the prompt

    def prompt_for(self, cfg: DecodeSettings) -> tuple[Prompt, OutputCheck]:
        """The prompt ``cfg`` describes, and the check of its outputs (made once)."""
        key = (cfg.instruction, cfg.prompt, cfg.few_shot, cfg.prompt_format)
        if key not in self._prompts:
            prompt = build_prompt(cfg, self.tokenizer)
            self._prompts[key] = (prompt, OutputCheck(prompt))
            log.info("paraphraser prompt (chat template: %s):\n%s", prompt.chat, prompt.text("{sentence}", "{word}"))
        return self._prompts[key]

    def head(self, prompt: Prompt) -> Head:
        """The prompt's head on the device, its keys and values computed once."""
        found = self._heads.get(prompt.head)
        if found is None:
            ids = self.tokenizer(prompt.head, add_special_tokens=prompt.head_specials)["input_ids"]
            if prompt.head_specials and ids and ids[-1] == self.tokenizer.eos_token_id and len(ids) > 1:
                ids = ids[:-1]  # a tokenizer that ends every text (T5-style): the prompt goes on
            found = Head(torch.tensor([ids], dtype=torch.long, device=self.device), self._new_cache())
            if ids:
                with torch.inference_mode():
                    self.model(input_ids=found.ids, **{self.cache_kwarg: found.cache}, use_cache=True, logits_to_keep=1)
            self._heads[prompt.head] = found
        return found

    def _new_cache(self) -> Any:
        return BeamCache(config=self.model.config)

    def _head_cache(self, head: Head, rows: int) -> Any:
        """A copy of the head's cache for ``rows`` rows."""
        cache = copy.deepcopy(head.cache)
        cache.batch_repeat_interleave(rows)
        return cache

    def begin(self, cfg: DecodeSettings) -> None:
        self.active = self.prompt_for(cfg)  # what check_output checks against
        super().begin(cfg)

    def queries(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings) -> list[str]:
        prompt, _ = self.prompt_for(cfg)
        return [prompt.render(r["source_text"], span_text(r)) for r in requests]

    # ------------------------------------------------------------ the loop's hooks

    def source_lengths(self, texts: Sequence[str], prefix: str = "", tokenizer: Any = None) -> list[int]:
        """Source lengths in tokenizer ids, without special tokens (what a query holds of them)."""
        enc = (tokenizer or self.tokenizer)(list(texts), add_special_tokens=False)
        return [len(ids) for ids in enc["input_ids"]]

    def default_batch_tokens(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings, tokenizer: Any) -> int:
        """The seq2seq budget (sentences x longest source x width), for a prompt: on CPU,
        CPU_SEARCH_BATCH_TOKENS for the engine's beam search and CPU_BATCH_TOKENS for ``generate``'s;
        elsewhere the device's budget shrunk by the share of the prompt's tokens that are the
        sentence's (every row keeps the whole prompt's keys and values)."""
        if self.device.type == "cpu" or not requests:
            return CPU_SEARCH_BATCH_TOKENS if self.searches(cfg) else CPU_BATCH_TOKENS
        prompt, _ = self.prompt_for(cfg)
        tok = tokenizer or self.tokenizer
        sources = sum(self.source_lengths([r["source_text"] for r in requests], tokenizer=tok))
        queries = sum(self.source_lengths(self.queries(requests, cfg), tokenizer=tok))
        head = len(tok(prompt.head, add_special_tokens=prompt.head_specials)["input_ids"])
        share = sources / max(1, queries + head * len(requests))
        return max(1, int(default_max_batch_tokens(self.device, self.model.config, self.dtype) * share))

    def prepare(self, requests: list[dict[str, Any]], cfg: DecodeSettings, tools: HostTools | None = None) -> Prepared:
        """A batch's queries (left-padded, without special tokens), each sentence's new-token limit
        (by its source's length) and banned sequences."""
        spec = self.search_spec(cfg)
        tokenizer, bans = tools or self.host_tools
        WORKER_GATE.wait()
        tokenizer.padding_side = "left"
        enc = tokenizer(self.queries(requests, cfg), add_special_tokens=False, padding=True, return_tensors="pt")
        enc = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        sources = self.source_lengths([r["source_text"] for r in requests], tokenizer=tokenizer)
        limits = [spec.limit(n) for n in sources]
        banned = self.banned_sequences(requests, bans, list(spec.never))
        return Prepared(enc, limits, banned, self.constraint_table(banned))

    def build_search_spec(self, cfg: DecodeSettings) -> SearchSpec:
        """The search, its end tokens the model's end of sequence (and of turn), the tokenizer's,
        and every token whose text holds a newline."""
        return search_spec.build(
            cfg,
            self.generation_config(),
            self.model_config(),
            model=self.name,
            extra_end_tokens=self.newline_tokens,
            fallback_end_token=self.tokenizer.eos_token_id,
            decoder_only=True,
        )

    @functools.cached_property
    def newline_tokens(self) -> list[int]:
        """Every token whose text holds a newline (each ends an output)."""
        texts = decode_texts(self.tokenizer, [[i] for i in range(len(self.tokenizer))])
        return [i for i, text in enumerate(texts) if "\n" in text]

    def prompt_inputs(self, head: Head, prepared: Prepared) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole prompt's ids and attention mask ``[B, P + S]`` on the device."""
        query = prepared.enc["input_ids"].to(self.device)
        mask = prepared.enc["attention_mask"].to(self.device)
        rows = query.shape[0]
        ids = torch.cat([head.ids.expand(rows, -1), query], dim=1)
        mask = torch.cat([torch.ones_like(head.ids).expand(rows, -1), mask], dim=1)
        return ids, mask

    def run_queries(
        self, head: Head, ids: torch.Tensor, mask: torch.Tensor, end: int
    ) -> tuple[Any, torch.Tensor, torch.Tensor | None]:
        """The queries' tokens up to ``end`` (a column of the whole prompt ``ids``) run once per
        sentence on a copy of the head's cache: the cache, every prompt position (counted from the
        attention mask, so left padding changes nothing), and the last run token's logits (None when
        nothing past the head was run)."""
        start = head.ids.shape[1]
        cache = self._head_cache(head, ids.shape[0])
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        if end <= start:
            return cache, positions, None
        out = self.model(
            input_ids=ids[:, start:end],
            attention_mask=mask[:, :end],
            position_ids=positions[:, start:end],
            **{self.cache_kwarg: cache},
            use_cache=True,
            logits_to_keep=1,
        )
        return cache, positions, out.logits[:, -1]

    def prefill(self, head: Head, ids: torch.Tensor, mask: torch.Tensor, width: int) -> Any:
        """The cache of every prompt token but the last (``generate`` runs that one), for ``width``
        rows a sentence: the queries run once per sentence, then repeated for the sentence's rows."""
        cache, _, _ = self.run_queries(head, ids, mask, ids.shape[1] - 1)
        cache.batch_repeat_interleave(width)
        cache.share_prefix()
        return cache

    def _check_window(self, length: int) -> None:
        """Warn (once) when a prompt and its continuation outgrow the model's sliding attention
        window (Gemma 3's local layers): padding then takes places in the window, and a padded row
        sees a little less of its prompt than it would alone."""
        window = getattr(self.model.config, "sliding_window", None)
        if isinstance(window, int) and length > window and not getattr(self, "_window_warned", False):
            self._window_warned = True
            log.warning(
                "paraphrase: prompts and outputs of up to %d tokens outgrow the model's sliding window of %d: "
                "a padded sentence's local layers see less of its prompt (shorten the prompt or few-shot examples)",
                length,
                window,
            )

    #: Beam search on the engine's search (:mod:`.causal_search`); False: ``generate``'s (the
    #: reference the tests compare it with). Sampling is ``generate``'s either way.
    own_search: bool = True
    #: The engine's search with the bans applied to the logits before one normalisation and each
    #: beam's best tokens selected first (False: ``generate``'s order of operations, the same scores
    #: to the last bit); and the vocabulary's chunks a beam's best tokens are sought in (:mod:`.topk`).
    fused_search: bool = True
    topk_chunk: int = TOPK_CHUNK

    def searches(self, cfg: DecodeSettings) -> bool:
        """Whether ``cfg``'s decoding runs on the engine's search (beam search, ``own_search``)."""
        return cfg.mode == "beam" and self.own_search

    def search_settings(self, spec: SearchSpec) -> SearchSettings:
        """The engine's settings for ``spec``: the search's first end token and the others (newlines)."""
        return SearchSettings(
            beams=spec.width,
            start_token=PLACEHOLDER_START,
            eos_token=spec.end_token,
            other_end_tokens=spec.end_tokens[1:],
            fill_token=spec.fill_token,
            length_penalty=spec.length_penalty,
            fuse_constraints=self.fused_search,
            two_stage_topk=self.fused_search,
            topk_chunk=self.topk_chunk,
            sync_every=GPU_SYNC_EVERY if self.device.type == "cuda" else 1,
        )

    def search_state(self, head: Head, ids: torch.Tensor, mask: torch.Tensor, width: int, steps: int) -> CausalState:
        """The engine's state after the whole prompt: the queries run once per sentence (their last
        logits kept), then repeated for the sentence's ``width`` rows, and a mask with room for
        ``steps`` new tokens."""
        rows, length = ids.shape
        cache, positions, logits = self.run_queries(head, ids, mask, length)
        assert logits is not None, "a query holds its sentence: it outlasts the head"
        cache.batch_repeat_interleave(width)
        cache.share_prefix()
        cache.reserve(steps)
        room = torch.zeros(rows * width, length + steps, dtype=mask.dtype, device=mask.device)
        room[:, :length] = mask.repeat_interleave(width, dim=0)
        return CausalState(
            cache=cache,
            mask=room,
            next_position=(positions[:, -1] + 1).repeat_interleave(width),
            first_logits=logits.float().repeat_interleave(width, dim=0),
            beams=width,
            seen=length,
        )

    @torch.inference_mode()
    def decode(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        """The device's part of a batch: each sentence's continuations (beams or samples) as token ids."""
        spec = self.search_spec(cfg)
        prompt, _ = self.prompt_for(cfg)
        head = self.head(prompt)
        ids, mask = self.prompt_inputs(head, prepared)
        length = ids.shape[1]
        self._check_window(length + max(prepared.limits))
        if self.searches(cfg):
            processor = TensorBannedSequences(prepared.constraints(), self.model.config.vocab_size, self.device)
            state = self.search_state(head, ids, mask, spec.width, max(prepared.limits))
            limits = torch.tensor(prepared.limits, dtype=torch.long, device=self.device)
            tokens, scores = causal_search.search(
                self.model, self.cache_kwarg, state, limits, self.search_settings(spec), processor
            )
            return per_sentence(tokens.cpu(), scores.view(-1).tolist())
        inner = self.banned_processor(prepared.constraints(), self.model.config.vocab_size, self.device)
        if spec.mode == "beam" and hasattr(inner, "renormalize"):
            inner.renormalize = True  # as the seq2seq backend: beams see log-probabilities
        stop = PerSentenceMaxNewTokens(prepared.limits, prompt_length=length, device=self.device)
        shared = {self.cache_kwarg: self.prefill(head, ids, mask, spec.width)} if self.share_prompt else {}
        if spec.mode == "sample":
            torch.manual_seed(spec.batch_seed(batch_index))
        out = self.model.generate(
            input_ids=ids,
            attention_mask=mask,
            **shared,
            **spec.generate_kwargs(),
            max_new_tokens=max(prepared.limits),
            logits_processor=[ContinuationBans(inner, length)],
            stopping_criteria=[stop],
            return_dict_in_generate=True,
            output_scores=spec.mode == "beam",
        )
        continuations = out.sequences[:, length:].cpu()
        scores = out.sequences_scores.tolist() if spec.mode == "beam" else [float("nan")] * len(continuations)
        return per_sentence(continuations.view(len(prepared.limits), spec.width, -1), scores)

    def texts(self, beams: list[SentenceBeams], tools: HostTools | None = None) -> list[list[tuple[str, float]]]:
        """Each continuation's text up to its first newline (the end token's text included in it)."""
        return [
            [(text.split("\n", 1)[0], score) for text, score in sentence] for sentence in super().texts(beams, tools)
        ]

    def check_output(self, text: str, request: dict[str, Any], stats: DecodeStats) -> str | None:
        """The text with a leading prompt label stripped, or None for chatter, echoed prompt text
        or a copy of the source (:class:`.prompts.OutputCheck`), counted in ``stats``."""
        assert self.active is not None, "paraphrase_chunks() sets the prompt"
        kept, why = self.active[1](text, request["source_text"])
        stats.labels_stripped += why == "stripped"
        stats.chatter_dropped += kept is None
        return kept

    # ------------------------------------------------------------ scoring

    @functools.cached_property
    def _newline_ids(self) -> list[int]:
        return self.tokenizer("\n", add_special_tokens=False)["input_ids"][-1:]

    def score_outputs(self, requests: list[dict[str, Any]], outputs: list[str], cfg: DecodeSettings) -> list[float]:
        """Length-normalised negative log-likelihood of each output and its end (newline, or end of
        turn in a chat) given its sentence's prompt."""
        prompt, _ = self.prompt_for(cfg)
        end = [self.tokenizer.eos_token_id] if prompt.chat else self._newline_ids
        queries = self.tokenizer(self.queries(requests, cfg), add_special_tokens=False)["input_ids"]
        answers = self.tokenizer([prompt.lead + o for o in outputs], add_special_tokens=False)["input_ids"]
        rows = [(q, a + end) for q, a in zip(queries, answers)]
        vocab = self.model.config.vocab_size
        scores: list[float] = []
        start = 0
        while start < len(rows):  # groups whose logits fit SCORE_LOGITS
            stop = start + 1
            while (
                stop < len(rows)
                and (stop + 1 - start) * (max(len(a) for _, a in rows[start : stop + 1]) + 1) * vocab <= SCORE_LOGITS
            ):
                stop += 1
            scores.extend(self._score_rows(prompt, rows[start:stop]))
            start = stop
        return scores

    @torch.inference_mode()
    def _score_rows(self, prompt: Prompt, rows: list[tuple[list[int], list[int]]]) -> list[float]:
        head = self.head(prompt)
        longest = max(len(q) + len(a) for q, a in rows)
        answer = max(len(a) for _, a in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (longest - len(q) - len(a)) + q + a for q, a in rows], device=self.device)
        body = torch.tensor(
            [[0] * (longest - len(q) - len(a)) + [1] * (len(q) + len(a)) for q, a in rows], device=self.device
        )
        start = head.ids.shape[1]
        mask = torch.cat([torch.ones(len(rows), start, dtype=body.dtype, device=self.device), body], dim=1)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, start:]
        logits = (
            self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                **{self.cache_kwarg: self._head_cache(head, len(rows))},
                use_cache=True,
                logits_to_keep=answer + 1,
            )
            .logits[:, :-1]
            .float()
        )
        logp = torch.log_softmax(logits, dim=-1)
        targets = ids[:, -answer:]
        token_logp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        lengths = torch.tensor([len(a) for _, a in rows], device=self.device)
        counted = torch.arange(answer, device=self.device)[None] >= (answer - lengths)[:, None]
        return (-(token_logp * counted).sum(-1) / lengths).tolist()
