"""The paraphrase stage: a REQUESTS shard -> a PARAPHRASES shard, with either backend."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from spanaug.core import artifacts, files
from spanaug.core.config import DecodeSettings
from spanaug.core.devices import choose_device
from spanaug.core.engine import EngineRecord
from spanaug.core.errors import ConfigError
from spanaug.core.heap import long_lived_objects_frozen
from spanaug.pipeline.paraphraser import decode_loop, model_check
from spanaug.pipeline.paraphraser.causal_backend import CausalParaphraser
from spanaug.pipeline.paraphraser.ct2_backend import CT2Paraphraser
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.decoder_step import UnsupportedModel
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.paraphrase_decoder import ParaphraseDecoder
from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser

log = logging.getLogger(__name__)

#: Requests a paraphrase job reads at a time, and batches by length among themselves (its memory
#: stays bounded whatever the shard's size; the host's work runs on across them).
CHUNK_ROWS = 4096


def load_paraphraser(cfg: DecodeSettings, device: str = "auto") -> ParaphraseDecoder:
    """The model ``cfg`` names, on its backend, with its search spec built (the model's generation
    config checked) and, on the static engine, its step checked against the model: ``auto`` falls
    back to hf, or the job stops, before any sentence is decoded."""
    paraphraser = _load(cfg, device)
    paraphraser.search_spec(cfg)
    return paraphraser


def _load(cfg: DecodeSettings, device: str) -> ParaphraseDecoder:
    if not cfg.model:
        raise ConfigError("no paraphraser model: set paraphraser.model (or paraphraser.train)")
    if model_check.is_decoder_only(cfg.model):
        return load_decoder_only(cfg, device)
    backend = resolve_backend(cfg.backend, device)
    log.info("paraphraser backend: %s (paraphraser.backend: %s, device: %s)", backend, cfg.backend, device)
    try:
        paraphraser = BACKENDS[backend].from_pretrained(cfg.model, device=device, dtype=cfg.dtype)
    except UnsupportedModel as err:
        if cfg.backend != "auto":
            raise ConfigError(f"paraphraser.backend: {backend}: {err}") from None
        if cfg.require_cuda_graphs and backend == "static":
            raise ConfigError(f"paraphraser.require_cuda_graphs: the static backend cannot decode it: {err}") from None
        log.warning("paraphraser backend: hf instead of %s: %s", backend, err)
        backend, paraphraser = "hf", HFParaphraser.from_pretrained(cfg.model, device=device, dtype=cfg.dtype)
    paraphraser.backend = backend
    check_graphs_required(paraphraser, cfg)
    return paraphraser


def check_graphs_required(paraphraser: ParaphraseDecoder, cfg: DecodeSettings) -> None:
    """With ``paraphraser.require_cuda_graphs``, a paraphraser on CUDA decodes with the static
    backend's graphs (beam search; sampling runs on generate), or the job stops here."""
    if not cfg.require_cuda_graphs or paraphraser.device.type != "cuda":
        return
    if paraphraser.backend != "static" or cfg.mode != "beam":
        what = f"paraphraser.backend is {paraphraser.backend}" if cfg.mode == "beam" else "paraphraser.mode is sample"
        raise ConfigError(
            f"paraphraser.require_cuda_graphs: {what}, which decodes on CUDA without graphs; "
            "set paraphraser.backend: auto (or static) and mode: beam, or require_cuda_graphs: false"
        )


def load_decoder_only(cfg: DecodeSettings, device: str = "auto") -> ParaphraseDecoder:
    """A decoder-only model (a causal LM, or a GGUF file): transformers' generate on a shared prompt
    cache (the hf backend); CTranslate2 and the static engine decode seq2seq models only."""
    if cfg.backend in ("ct2", "static"):
        raise ConfigError(
            f"paraphraser.backend: {cfg.backend} decodes seq2seq models only, but paraphraser.model "
            f"{cfg.model!r} is a decoder-only model: set paraphraser.backend to auto or hf"
        )
    if cfg.require_cuda_graphs and choose_device(device).type == "cuda":  # before the weights load
        raise ConfigError(
            f"paraphraser.require_cuda_graphs: paraphraser.model {cfg.model!r} is a decoder-only model, which "
            "decodes with generate, without CUDA graphs: set paraphraser.require_cuda_graphs: false"
        )
    log.info("paraphraser backend: hf, decoder-only (paraphraser.backend: %s, device: %s)", cfg.backend, device)
    paraphraser = CausalParaphraser.from_pretrained(cfg.model, device=device, dtype=cfg.dtype)
    paraphraser.backend = DECODER_ONLY
    return paraphraser


#: The backend a decoder-only model decodes on, as its shards' records name it.
DECODER_ONLY = "hf decoder-only"


def resolve_backend(backend: str, device: str = "auto") -> str:
    """The backend ``paraphraser.backend`` names; ``auto`` is static on CUDA, hf on other GPUs (MPS,
    which CTranslate2 lacks) and ct2 on CPU, or hf there too when CTranslate2 is not installed (a
    rule's environment may lack the extra)."""
    if backend != "auto":
        return backend
    kind = choose_device(device).type
    if kind == "cuda":
        return "static"
    if kind != "cpu":
        return "hf"
    return "ct2" if importlib.util.find_spec("ctranslate2") is not None else "hf"


def paraphrase_stage(
    requests_path: Path | str,
    out: Path | str,
    cfg: DecodeSettings,
    device: str = "auto",
    stats_path: Path | str | None = None,
    chunk_rows: int = CHUNK_ROWS,
    paraphraser: ParaphraseDecoder | None = None,
) -> DecodeStats:
    """CLI stage: a REQUESTS shard -> a PARAPHRASES shard, processed in chunks, with ``paraphraser``
    (loaded by the caller for several shards) or the model ``cfg`` names."""
    # The input is checked (its columns, and that it holds requests) before the model loads.
    batches = artifacts.iter_batches(requests_path, artifacts.REQUESTS, chunk_rows)
    paraphraser = paraphraser or load_paraphraser(cfg, device)
    stats = DecodeStats()
    provenance = artifacts.derived(requests_path, "paraphrases")
    with long_lived_objects_frozen(), artifacts.open_writer(out, artifacts.PARAPHRASES, provenance) as writer:
        for rows in decode_loop.paraphrase_chunks(paraphraser, (table.to_pylist() for table in batches), cfg, stats):
            writer.write(rows)
        stats.engine = stats.engine or paraphraser.provenance(cfg)
        writer.closing_metadata[artifacts.ENGINE_KEY] = stats.engine.as_dict()
    say_how_it_decoded(stats.engine, requests_path)
    log.info("paraphrase %s: %s", requests_path, stats.as_json())
    if stats_path:
        files.write_json(stats.as_json(), stats_path)
    return stats


def say_how_it_decoded(engine: EngineRecord, what: Path | str) -> None:
    """The shard's engine in its job's log: a warning when CUDA graphs were lost."""
    if engine.decode_path == "fallback":
        log.warning(
            "paraphrase %s: CUDA graphs lost: %d capture(s) failed and their batches decoded without graphs "
            "(slower); %s",
            what,
            engine.cuda_graph_fallbacks,
            engine.describe(),
        )
    else:
        log.info("paraphrase %s: decoded with %s", what, engine.describe())


BACKENDS = {"hf": HFParaphraser, "ct2": CT2Paraphraser, "static": StaticParaphraser}
