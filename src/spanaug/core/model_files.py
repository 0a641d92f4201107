"""What a model's files must hold before anything loads them, one rule each, for a local folder or
a hub name's snapshot in the Hugging Face cache.

transformers is lenient where a pipeline cannot be: a folder without tokenizer files gets an empty
tokenizer built from the model's config (every source then encodes to a few special ids and a stage
"succeeds" with nothing), and damaged weights fail deep in a library, naming no model. The stages
call these rules when they load a model (the paraphraser's two backends, the frozen encoders), and
the preflight (``spanaug config check``) calls the same ones on what a config names, hub models
included, reading only the local cache. Errors name the model as the config names it.

Weights are checked from their headers, without loading them: a safetensors file's header must
place its tensors exactly up to the file's end (a truncated file fails), and a PyTorch zip
checkpoint must have its central directory and a ``data.pkl``. A flipped byte inside the data passes
both; the manifest of a folder spanaug wrote catches that (:mod:`spanaug.core.modeldir`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spanaug.core import modeldir
from spanaug.core.errors import InputError

#: Files of which a model needs at least one for its tokenizer (fast, SentencePiece, BPE and
#: WordPiece vocabularies: T5, BART, Pegasus, Marian, BERT).
TOKENIZER_FILES = (
    "tokenizer.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "source.spm",
    "vocab.json",
    "vocab.txt",
)

#: Weight files in the order transformers prefers them: one file, or an index of shards.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


#: A Hugging Face repo id: "name" or "org/name". A name that is not one (``./model``, ``/data/m``,
#: ``~/m``) can only be a local folder.
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def hub_name(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` can be a Hugging Face hub name: it is no path that exists, and has
    the form of a repo id."""
    text = str(name_or_path)
    return not Path(text).expanduser().exists() and bool(_REPO_ID.match(text))


@dataclasses.dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are on this machine."""

    #: The model as the config names it (a path or a hub name): what errors name.
    name: str
    #: A local folder, or the hub name's snapshot folder in the Hugging Face cache.
    folder: Path
    #: Every file a loader reads is here: a local folder, or a cached snapshot when offline (online,
    #: transformers would download a file the cache lacks, so its absence is no problem).
    complete: bool


def offline() -> bool:
    """Hugging Face offline mode (``HF_HUB_OFFLINE=1`` or ``TRANSFORMERS_OFFLINE=1``)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("TRANSFORMERS_OFFLINE") == "1"


def find(name_or_path: str | Path) -> ModelFiles | None:
    """The model's folder: the local directory, or the hub name's snapshot in the local cache; None
    when neither is on disk (a hub name that is missing, or that a loader would download)."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return ModelFiles(str(name_or_path), path, complete=True)
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(str(name_or_path), "config.json")
    except Exception:  # not a valid repo id (HFValidationError): no hub model by this name
        return None
    if not isinstance(cached, str):
        return None
    return ModelFiles(str(name_or_path), Path(cached).parent, complete=offline())


def check_files(name_or_path: str | Path) -> ModelFiles | None:
    """The rules on a model's files, before anything loads them: the manifest of a folder spanaug
    wrote, tokenizer files present, weights present and whole (read from their headers). Returns
    where the files are, or None when nothing is on disk to check."""
    found = find(name_or_path)
    if found is None:
        path = Path(name_or_path).expanduser()
        if path.exists():
            raise InputError(name_or_path, None, "a file, not a model folder")
        if not hub_name(name_or_path):  # not for the hub client to call a malformed repo id
            raise InputError(
                name_or_path, None, "no such folder (a local model folder; a Hugging Face hub name is NAME or ORG/NAME)"
            )
        return None
    modeldir.verify_manifest(found.folder)
    kind = modeldir.recorded_kind(found.folder)
    if kind:  # a head spanaug trained (an aligner, a Frame ID model): no encoder or paraphraser
        raise InputError(
            found.name, None, f"holds a trained {kind} (its {modeldir.MANIFEST_FILE} says so), not a transformers model"
        )
    where = "" if found.folder == Path(found.name).expanduser() else f" in its cached snapshot {found.folder}"
    if found.complete and not any((found.folder / name).is_file() for name in TOKENIZER_FILES):
        raise InputError(
            found.name,
            None,
            f"no tokenizer files{where} (one of {', '.join(TOKENIZER_FILES)}): transformers would build "
            "an empty tokenizer and every output would be empty",
        )
    _check_weights(found, where)
    return found


def _weight_shards(folder: Path) -> tuple[str | None, list[Path]]:
    """(the index file or None, the weight files a loader reads), by transformers' preference."""
    for name in WEIGHT_FILES:
        path = folder / name
        if not (path.is_file() or path.is_symlink()):
            continue
        if not name.endswith(".index.json"):
            return None, [path]
        try:
            weight_map = json.loads(path.read_text(encoding="utf-8"))["weight_map"]
            return name, [folder / shard for shard in sorted(set(weight_map.values()))]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(path, None, f"not a weight index (a JSON with a weight_map): {exc}") from None
    return None, []


def _check_weights(found: ModelFiles, where: str) -> None:
    index, shards = _weight_shards(found.folder)
    if not shards:
        if found.complete:
            raise InputError(found.name, None, f"no weights{where} (one of {', '.join(WEIGHT_FILES)})")
        return
    for shard in shards:
        if not shard.is_file():  # a broken link in the cache is a blob that was never downloaded
            if found.complete:
                listed = f"listed in {index} but " if index else ""
                raise InputError(found.name, None, f"{shard.name}: {listed}missing{where}")
            continue
        why = safetensors_problem(shard) if shard.name.endswith(".safetensors") else torch_file_problem(shard)
        if why:
            raise InputError(found.name, None, f"{shard.name}{where}: {why}")


def safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file is not whole, from its header (8-byte length, JSON, tensor offsets)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"{size} bytes, too short for a safetensors file (truncated)"
        n = int.from_bytes(head, "little")
        if n > size - 8:
            return f"truncated or not safetensors: its header would be {n} bytes, the file has {size}"
        raw = handle.read(n)
    try:
        header = json.loads(raw)
        end = max((entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return "its safetensors header is damaged (not the JSON of tensor names, shapes and offsets)"
    if 8 + n + end != size:
        return (
            f"truncated or damaged: its header places {end} bytes of tensors after the header, "
            f"the file holds {size - 8 - n}"
        )
    return None


def torch_file_problem(path: Path) -> str | None:
    """Why a PyTorch checkpoint (``torch.save``) is not whole, from its zip directory; the legacy
    pickle format (PyTorch < 1.6) has no directory and passes unchecked."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic[:1] == b"\x80":  # a pickle: the legacy format
        return None
    if not magic.startswith(b"PK"):
        return "not a PyTorch checkpoint (neither a zip archive nor a pickle)"
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return f"truncated or damaged: its zip directory cannot be read ({exc})"
    if not any(info.filename.endswith("data.pkl") for info in infos):
        return "a zip archive without data.pkl: not a PyTorch checkpoint"
    if any(info.header_offset + info.compress_size > size for info in infos):
        return "truncated or damaged: its zip directory places data past the file's end"
    return None


def loaded(name_or_path: str | Path, what: str, load: Callable[[], Any]) -> Any:
    """``load()``, its failures (whatever transformers, safetensors or the hub client raise) one
    error naming the model."""
    try:
        return load()
    except InputError:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(name_or_path, None, f"its {what} cannot be loaded ({type(exc).__name__}: {first})") from exc


def check_vocabulary(name_or_path: str | Path, tokenizer: Any, vocab_size: int | None) -> None:
    """A tokenizer with a vocabulary beyond its special tokens, and no more ids than the model
    embeds (``vocab_size``)."""
    size, specials = len(tokenizer), len(set(tokenizer.all_special_ids))
    if size <= specials:
        raise InputError(name_or_path, None, f"its tokenizer has {size} tokens, all special: no vocabulary")
    if vocab_size is not None and size > vocab_size:
        raise InputError(
            name_or_path, None, f"its tokenizer has {size} tokens but the model embeds {vocab_size}: not its tokenizer"
        )


def load_tokenizer(name_or_path: str | Path, vocab_size: int | None = None, source: Path | None = None) -> Any:
    """The model's tokenizer (from ``source``, its folder, when given), checked by :func:`check_vocabulary`."""
    from transformers import AutoTokenizer

    where = str(source or name_or_path)
    tokenizer = loaded(name_or_path, "tokenizer", lambda: AutoTokenizer.from_pretrained(where))
    check_vocabulary(name_or_path, tokenizer, vocab_size)
    return tokenizer


def check_tokenizer(found: ModelFiles) -> Any:
    """The tokenizer rules on a model's files, loading only its config and tokenizer from its folder
    (nothing is downloaded). Returns the config."""
    from transformers import AutoConfig

    config = loaded(found.name, "config", lambda: AutoConfig.from_pretrained(str(found.folder)))
    load_tokenizer(found.name, getattr(config, "vocab_size", None), source=found.folder)
    return config
