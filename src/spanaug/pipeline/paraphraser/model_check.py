"""What a paraphraser folder or hub name must hold before it decodes anything.

transformers is lenient where a pipeline cannot be: a folder without tokenizer files gets an empty
tokenizer built from the model's config (every source then encodes to a few special ids and the
stage "succeeds" with nothing), damaged weights fail deep in a library, and a source longer than
the model's positions ends in an ``IndexError``. These checks turn each into one error naming the
model. Both backends and ``spanaug config check`` run them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spanaug.core import modeldir
from spanaug.core.errors import InputError

#: Files of which a local model folder needs at least one for its tokenizer (fast, SentencePiece,
#: BPE and WordPiece vocabularies: T5, BART, Pegasus, Marian).
TOKENIZER_FILES = (
    "tokenizer.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "source.spm",
    "vocab.json",
    "vocab.txt",
)


def check_folder(name_or_path: str | Path) -> None:
    """A local folder: its manifest (when spanaug wrote it) and a tokenizer file present."""
    path = Path(name_or_path)
    if not path.is_dir():
        return  # a hub name: from_pretrained finds it in the cache, or says it is missing
    modeldir.verify_manifest(path)
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise InputError(
            path,
            None,
            f"no tokenizer files (one of {', '.join(TOKENIZER_FILES)}): transformers would build an "
            "empty tokenizer and every output would be empty",
        )


def load_tokenizer(name_or_path: str | Path, vocab_size: int | None = None) -> Any:
    """The model's tokenizer, refused when it has no vocabulary beyond its special tokens or more ids
    than the model embeds (``vocab_size``)."""
    from transformers import AutoTokenizer

    tokenizer = loaded(name_or_path, "tokenizer", lambda: AutoTokenizer.from_pretrained(str(name_or_path)))
    size, specials = len(tokenizer), len(set(tokenizer.all_special_ids))
    if size <= specials:
        raise InputError(name_or_path, None, f"its tokenizer has {size} tokens, all special: no vocabulary")
    if vocab_size is not None and size > vocab_size:
        raise InputError(
            name_or_path, None, f"its tokenizer has {size} tokens but the model embeds {vocab_size}: not its tokenizer"
        )
    return tokenizer


def load_model(name_or_path: str | Path) -> Any:
    """``AutoModelForSeq2SeqLM.from_pretrained``, its failures (damaged weights, not in the cache)
    named by the model."""
    from transformers import AutoModelForSeq2SeqLM

    return loaded(name_or_path, "model", lambda: AutoModelForSeq2SeqLM.from_pretrained(str(name_or_path)))


def positions(config: Any) -> int | None:
    """Learned positions of the model (BART, Pegasus, Marian); None for relative ones (T5)."""
    return getattr(config, "max_position_embeddings", None)


def loaded(name_or_path: str | Path, what: str, load: Any) -> Any:
    try:
        return load()
    except InputError:
        raise
    except Exception as exc:  # whatever transformers, safetensors or the hub client raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(name_or_path, None, f"its {what} cannot be loaded ({type(exc).__name__}: {first})") from exc


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
