"""The search every paraphrase decoder runs, decided once: a frozen :class:`SearchSpec`.

A decoder's search has two sources: the ``paraphraser`` settings (beam or top-k sampling, widths,
length limits, the sampling seed) and the model's generation config (its start, end and padding
tokens, tokens it never generates). :func:`build` reads both once and every decoder derives its
arguments from the result: ``generate``'s keyword arguments (:meth:`SearchSpec.generate_kwargs`),
CTranslate2's (:meth:`SearchSpec.ct2_kwargs`) and the static engine's search settings. So the four
decoders run one search, and a model's ``generation_config.json`` cannot change one of them alone.

Each key of a generation config is one of:

* **taken**: the spec reads it (special tokens, ``bad_words_ids``, ``suppress_tokens``);
* **decided by the settings**: the spec sets it, whatever the model says (a hub paraphraser's
  ``num_beams: 4`` or ``no_repeat_ngram_size: 3`` is replaced by the settings' search, and the job's
  log names each replaced value);
* **inert**: it changes how ``generate`` runs or what it returns, never which outputs it finds;
* anything else set to other than transformers' default changes the search in a way no decoder here
  implements (``sequence_bias``, ``num_beam_groups``, ``constraints``, ...), and is a config error
  naming it, raised before any sentence is decoded.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError

log = logging.getLogger(__name__)

#: Length rule when ``max_new_tokens`` is not set: ``ceil(LENGTH_RATIO * source ids) + LENGTH_EXTRA``.
LENGTH_RATIO = 1.5
LENGTH_EXTRA = 10


def length_limit(source_ids: int, max_new_tokens: int | None = None) -> int:
    """New tokens a sentence may generate: ``max_new_tokens`` when set, else the rule above
    applied to the sentence's own source length, so the batch it lands in does not matter."""
    if max_new_tokens is not None:
        return int(max_new_tokens)
    return math.ceil(LENGTH_RATIO * source_ids) + LENGTH_EXTRA


#: Generation-config keys the spec reads from the model.
TAKEN = frozenset(
    {
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "decoder_start_token_id",
        "forced_bos_token_id",
        "bad_words_ids",
        "suppress_tokens",
    }
)

#: Generation-config keys the settings decide, with the value the spec gives them where the
#: settings have no say (the search's length penalty, no repetition rules, no sampling filters).
DECIDED = {
    "num_beams": None,
    "num_return_sequences": None,
    "do_sample": None,
    "top_k": None,
    "early_stopping": True,
    "length_penalty": 1.0,
    "max_length": None,
    "max_new_tokens": None,
    "min_length": 0,
    "no_repeat_ngram_size": 0,
    "repetition_penalty": 1.0,
    "forced_eos_token_id": None,
    "temperature": 1.0,
    "top_p": 1.0,
    "min_p": None,
    "typical_p": 1.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
    "max_time": None,
    "renormalize_logits": False,
    "remove_invalid_values": False,
    "prompt_lookup_num_tokens": None,
}

#: Decided keys whose value is the mode's (beams or samples) or the batch's (its longest limit).
PER_DECODING = frozenset({"num_beams", "num_return_sequences", "do_sample", "top_k", "max_length", "max_new_tokens"})

#: Generation-config keys that change how ``generate`` runs or what it returns, not its outputs
#: (caches, compilation, what is returned, assisted decoding without an assistant model).
INERT = frozenset(
    {
        "_from_model_config",
        "transformers_version",
        "use_cache",
        "cache_implementation",
        "cache_config",
        "compile_config",
        "disable_compile",
        "prefill_chunk_size",
        "continuous_batching_config",
        "max_cache_len",
        "low_memory",
        "output_attentions",
        "output_hidden_states",
        "output_logits",
        "output_scores",
        "return_dict_in_generate",
        "is_assistant",
        "assistant_confidence_threshold",
        "assistant_early_exit",
        "assistant_ensemble_weight",
        "assistant_lookbehind",
        "target_lookbehind",
        "num_assistant_tokens",
        "num_assistant_tokens_schedule",
        "max_matching_ngram_size",
    }
)


#: Generation-config keys that change the search and that no decoder implements, with the values
#: that turn each off (None is off for every key; so is transformers' default).
NO_DECODER = {
    "encoder_no_repeat_ngram_size": (0,),
    "encoder_repetition_penalty": (1.0,),
    "begin_suppress_tokens": ([],),
    "sequence_bias": ({},),
    "exponential_decay_length_penalty": (),
    "min_new_tokens": (0,),
    "num_beam_groups": (1,),
    "diversity_penalty": (0.0,),
    "constraints": ([],),
    "force_words_ids": ([],),
    "penalty_alpha": (),
    "guidance_scale": (1.0,),
    "dola_layers": (),
    "token_healing": (False,),
    "stop_strings": ([], ""),
    "watermarking_config": (),
    "use_mtp": (False,),
    "speculation_type": (),
    "top_h": (),
}


@dataclasses.dataclass(frozen=True)
class SearchSpec:
    """One decoding's search: what every decoder derives its arguments from."""

    mode: Literal["beam", "sample"]
    #: Beams searched, or samples drawn, per sentence.
    width: int
    #: Outputs a sentence keeps at most (the best beams, or every sample).
    keep: int
    #: Sampling: tokens sampled from (None in beam mode).
    top_k: int | None
    #: Sampling: the seed of a batch is ``seed * 100003 + its index``.
    seed: int
    #: New tokens a sentence may take (None: by its source's length, :func:`length_limit`).
    max_new_tokens: int | None
    #: Tokens that end an output (the model's end of sequence; a decoder-only model's newlines too).
    end_tokens: tuple[int, ...]
    #: What fills a finished row.
    pad_token: int | None
    #: An encoder-decoder model's first decoder token, and the token forced after it (mBART).
    start_token: int | None = None
    forced_bos_token: int | None = None
    #: Token sequences the model never generates (its generation config's ``bad_words_ids`` and
    #: ``suppress_tokens``): banned in every sentence beside its own constraints.
    never: tuple[tuple[int, ...], ...] = ()
    length_penalty: float = 1.0
    early_stopping: bool = True

    @property
    def beams(self) -> int:
        return self.width if self.mode == "beam" else 1

    @property
    def end_token(self) -> int:
        """The first end token (what a decoder with one end token stops at)."""
        return self.end_tokens[0]

    @property
    def fill_token(self) -> int:
        """What fills a finished beam's row after its end: the pad token, else the first end token."""
        return self.pad_token if self.pad_token is not None else self.end_token

    def limit(self, source_length: int) -> int:
        """A sentence's new-token limit, by its source's length in tokenizer ids."""
        return length_limit(source_length, self.max_new_tokens)

    def batch_seed(self, batch_index: int) -> int:
        """Sampling: the seed of a decoding's ``batch_index``-th batch."""
        return self.seed * 100003 + batch_index

    def generate_kwargs(self) -> dict[str, Any]:
        """transformers' ``generate`` arguments: every key the settings decide set explicitly, so
        that the model's own generation config changes none of them; the special tokens as taken.
        The constraints (and ``never``) go in as a logits processor, the limits as a stopping
        criterion (the decoders add both)."""
        kwargs: dict[str, Any] = {key: value for key, value in DECIDED.items() if key not in PER_DECODING}
        kwargs.update(
            bad_words_ids=None,  # applied with the constraints (``never``), so renormalisation covers them
            suppress_tokens=None,
            begin_suppress_tokens=None,
            eos_token_id=list(self.end_tokens),
            forced_bos_token_id=self.forced_bos_token,
            early_stopping=self.early_stopping,
            length_penalty=self.length_penalty,
        )
        if self.pad_token is not None:
            kwargs["pad_token_id"] = self.pad_token
        if self.start_token is not None:
            kwargs["decoder_start_token_id"] = self.start_token
        if self.mode == "beam":
            return {**kwargs, "num_beams": self.width, "num_return_sequences": self.width, "do_sample": False}
        return {**kwargs, "do_sample": True, "top_k": self.top_k, "num_beams": 1, "num_return_sequences": self.width}

    def ct2_kwargs(self) -> dict[str, Any]:
        """CTranslate2's ``translate_batch`` arguments for the same search (its length limit and
        suppressed sequences are per call: the ct2 decoder adds them)."""
        kwargs: dict[str, Any] = {
            "return_scores": True,
            "min_decoding_length": 0,
            "length_penalty": self.length_penalty,
            "max_input_length": 0,
        }
        if self.mode == "beam":
            return {**kwargs, "beam_size": self.width, "num_hypotheses": self.width, "patience": 1.0}
        return {**kwargs, "beam_size": 1, "sampling_topk": self.top_k, "num_hypotheses": self.width}


def build(
    cfg: DecodeSettings,
    generation_config: Any,
    model_config: Any = None,
    *,
    model: str = "paraphraser.model",
    extra_end_tokens: Sequence[int] = (),
    fallback_end_token: int | None = None,
    decoder_only: bool = False,
) -> SearchSpec:
    """The search ``cfg`` asks for on a model with ``generation_config`` (a transformers
    ``GenerationConfig``, or None): its keys checked (:func:`check_generation_config`), its tokens
    taken, ``model_config``'s where it has none. ``extra_end_tokens`` end an output too (a
    decoder-only model's newline tokens); ``fallback_end_token``: the tokenizer's end of sequence."""
    check_generation_config(generation_config, model)
    gen, conf = generation_config, model_config
    ends = _token_list(_first(gen, conf, "eos_token_id"))
    if fallback_end_token is not None and fallback_end_token not in ends:
        ends.append(fallback_end_token)
    ends += [t for t in extra_end_tokens if t not in ends]
    if not ends:
        raise ConfigError(f"{model}: the model has no end-of-sequence token (eos_token_id): outputs could not end")
    pad = _first(gen, conf, "pad_token_id")
    start = None if decoder_only else _first(gen, conf, "decoder_start_token_id")
    return SearchSpec(
        mode=cfg.mode,
        width=cfg.width,
        keep=cfg.return_top if cfg.mode == "beam" else cfg.num_samples,
        top_k=cfg.top_k if cfg.mode == "sample" else None,
        seed=cfg.seed,
        max_new_tokens=cfg.max_new_tokens,
        end_tokens=tuple(ends),
        pad_token=int(pad) if pad is not None else ends[0],
        start_token=int(start) if start is not None else None,
        forced_bos_token=None if decoder_only else _first(gen, None, "forced_bos_token_id"),
        never=never_sequences(gen),
    )


#: The settings a search spec is built from (a spec is made once per distinct value of these).
SEARCH_SETTINGS = ("mode", "beam_size", "return_top", "top_k", "num_samples", "seed", "max_new_tokens")


def settings_key(cfg: DecodeSettings) -> tuple:
    """What distinguishes the specs of two settings (settings objects are not hashable)."""
    return tuple(getattr(cfg, name) for name in SEARCH_SETTINGS)


def check_generation_config(generation_config: Any, model: str = "paraphraser.model") -> None:
    """A config error naming every key of ``generation_config`` (a ``GenerationConfig``, or the keys
    of a generation_config.json) that changes the search and that no decoder implements; an info
    line for each value the settings replace."""
    if generation_config is None:
        return
    from transformers import GenerationConfig

    defaults = GenerationConfig()
    keys = generation_config if isinstance(generation_config, Mapping) else generation_config.to_dict()
    unknown = []
    for key, value in sorted(keys.items()):
        if key in TAKEN or key in INERT or value is None or value == getattr(defaults, key, None):
            continue
        if key in DECIDED:
            if value != DECIDED[key]:
                log.info("paraphraser: %s's generation config sets %s=%r; the settings decide it", model, key, value)
            continue
        if value in NO_DECODER.get(key, ([], {}, "")):  # off (a key this transformers adds: empty is off)
            continue
        unknown.append(f"{key}={value!r}")
    if unknown:
        raise ConfigError(
            f"{model}: its generation config sets {', '.join(unknown)}, which no paraphrase decoder implements "
            "(the search is the paraphraser settings'): remove the key(s) from the model's generation_config.json"
        )


def never_sequences(generation_config: Any) -> tuple[tuple[int, ...], ...]:
    """The token sequences a model never generates: its ``bad_words_ids`` and ``suppress_tokens``."""
    gen = generation_config
    never = {tuple(int(t) for t in seq) for seq in (getattr(gen, "bad_words_ids", None) or []) if seq}
    never |= {(int(t),) for t in getattr(gen, "suppress_tokens", None) or []}
    return tuple(sorted(never))


def _first(gen: Any, conf: Any, key: str) -> Any:
    """``key`` from the generation config, else the model config (None where neither sets it)."""
    value = getattr(gen, key, None)
    return value if value is not None else getattr(conf, key, None)


def _token_list(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(t) for t in (value if isinstance(value, (list, tuple)) else [value])]
