"""The paraphrase stage: a REQUESTS shard -> a PARAPHRASES shard, with either backend.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

from spanaug.core import artifacts, files
from spanaug.core.errors import ConfigError
from spanaug.pipeline.paraphraser.ct2_backend import CT2Paraphraser
from spanaug.pipeline.paraphraser.hf_backend import (
    DecodeConfig,
    DecodeStats,
    Paraphraser,
)

log = logging.getLogger(__name__)


def load_paraphraser(backend: str, model: str, device: str | None = "auto", dtype: str | None = "auto") -> Paraphraser:
    if backend not in BACKENDS:
        raise ConfigError(f"paraphraser.backend must be one of {sorted(BACKENDS)}, not {backend!r}")
    return BACKENDS[backend].from_pretrained(model, device=device, dtype=dtype)


def paraphrase_stage(requests_path: Path | str, out: Path | str, model: str, cfg: DecodeConfig,
                     device: str | None = "auto", dtype: str | None = "auto", chunk_rows: int = 4096,
                     stats_path: Path | str | None = None, backend: str = "hf") -> DecodeStats:
    """CLI stage: a REQUESTS shard -> a PARAPHRASES shard, processed in chunks."""
    paraphraser = load_paraphraser(backend, model, device=device, dtype=dtype)
    stats = DecodeStats()
    with artifacts.open_writer(out, artifacts.PARAPHRASES) as writer:
        for table in artifacts.iter_batches(requests_path, artifacts.REQUESTS, chunk_rows):
            rows = list(paraphraser.paraphrase(table.to_pylist(), cfg, stats))
            writer.write(rows)
    log.info("paraphrase %s: %s", requests_path, dataclasses.asdict(stats))
    if stats_path:
        with files.atomic_path(stats_path) as tmp:
            tmp.write_text(json.dumps(dataclasses.asdict(stats), indent=2))
    return stats


BACKENDS = {"hf": Paraphraser, "ct2": CT2Paraphraser}
