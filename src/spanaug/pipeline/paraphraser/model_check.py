"""What a paraphraser (a folder or a hub name) must hold before it decodes anything, beyond the rules
on any model's files (:mod:`spanaug.core.model_files`: tokenizer files, vocabulary, whole weights).

A source longer than the model's learned positions would end in an ``IndexError``; these checks
turn it into one error naming the model. Both backends and ``spanaug config check`` run them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError
from spanaug.core.model_files import loaded
from spanaug.pipeline.paraphraser.gguf_names import is_gguf_name


def load_model(name_or_path: str | Path) -> Any:
    """``AutoModelForSeq2SeqLM.from_pretrained``, its failures (damaged weights, not in the cache)
    named by the model."""
    from transformers import AutoModelForSeq2SeqLM

    return loaded(name_or_path, "model", lambda: AutoModelForSeq2SeqLM.from_pretrained(str(name_or_path)))


def load_causal_model(name_or_path: str | Path, where: str | Path | None = None) -> Any:
    """``AutoModelForCausalLM.from_pretrained`` of ``where`` (the model's folder; ``name_or_path`` by
    default), its failures named by ``name_or_path``."""
    from transformers import AutoModelForCausalLM

    source = str(where or name_or_path)
    return loaded(name_or_path, "model", lambda: AutoModelForCausalLM.from_pretrained(source))


def is_decoder_only(name_or_path: str | Path) -> bool:
    """Whether a paraphraser model is decoder-only (a causal LM): a GGUF file, or a model whose
    config says it is no encoder-decoder. A config that cannot be read counts as seq2seq (the
    seq2seq loader then names what is wrong)."""
    from transformers import AutoConfig

    from spanaug.core.model_files import find

    text = str(name_or_path)
    if is_gguf_name(text):
        return True
    found = find(text)
    try:
        config = AutoConfig.from_pretrained(str(found.folder) if found else text)
    except Exception:  # whatever transformers or the hub client raise: not ours to name here
        return False
    return not getattr(config, "is_encoder_decoder", False)


def positions(config: Any) -> int | None:
    """Learned positions of the model (BART, Pegasus, Marian); None for relative ones (T5)."""
    return getattr(config, "max_position_embeddings", None)


def saved_positions(folder: Path | str) -> int | None:
    """A local model folder's learned positions, read from its config.json without transformers."""
    import json

    try:
        value = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("max_position_embeddings")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def words_fit(max_tokens: int | None, limit: int | None) -> str | None:
    """Why sentences of up to ``max_tokens`` words may not fit ``limit`` positions, or None. A word
    is at least one tokenizer id, and the source adds an end-of-sequence id."""
    if limit is None:
        return None
    if max_tokens is None:
        return f"data.max_tokens is null, but the model has {limit} positions: a longer sentence fails its job"
    if max_tokens + 1 > limit:
        return f"data.max_tokens {max_tokens} words cannot fit the model's {limit} positions: set it below {limit}"
    return None


def check_lengths(name: str, lengths: list[int], requests: list[dict[str, Any]], limit: int | None) -> None:
    """Every source within the model's positions, else one error for all of them, naming the first."""
    if limit is None:
        return
    over = [i for i, n in enumerate(lengths) if n > limit]
    if over:
        first = over[0]
        raise InputError(
            name,
            None,
            f"{len(over)} source(s) longer than the model's {limit} positions (seed "
            f"{requests[first].get('seed_id')!r}: {lengths[first]} tokenizer ids); lower data.max_tokens",
        )
