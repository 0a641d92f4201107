"""The align stage: every beam of a PARAPHRASES shard aligned, as an ALIGNED shard."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from spanaug.core import artifacts, files
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.loading import AutoAligner

log = logging.getLogger(__name__)


def align_stage(
    model: Path | str,
    paraphrases_path: Path | str,
    out: Path | str,
    encoder: str | None = None,
    device: str | None = "auto",
    chunk_rows: int = 4096,
    batch_size: int = 64,
    stats_path: Path | str | None = None,
) -> int:
    """CLI stage: a PARAPHRASES shard -> an ALIGNED shard (one prediction per beam).

    Its statistics count the beams aligned and not, and the sentence pairs too long for the
    encoder, which were encoded one sentence at a time (see ``PairEncoder.encode_batch``). An
    empty shard is legitimate (every chain of the shard has ended) and is said so.
    """
    aligner = AutoAligner.from_pretrained(model, device=device, encoder=encoder)  # either kind
    stats: dict[str, Any] = {"beams": 0, "aligned": 0, "unaligned": 0}
    provenance = artifacts.derived(paraphrases_path, "aligned")
    with artifacts.open_writer(out, artifacts.ALIGNED, provenance) as writer:
        for table in artifacts.iter_batches(paraphrases_path, artifacts.PARAPHRASES, chunk_rows):
            rows = table.to_pylist()
            insts = [
                Instance(
                    f"{r['seed_id']}:{r['beam_rank']}",
                    r["source_tokens"],
                    r["paraphrase_tokens"],
                    (r["source_span_start"], r["source_span_end"]),
                )
                for r in rows
            ]
            for row, (span, score) in zip(rows, aligner.predict(insts, batch_size=batch_size)):
                row["aligned_start"], row["aligned_end"] = span if span is not None else (None, None)
                row["aligner_score"] = score
                stats["aligned" if span is not None else "unaligned"] += 1
            stats["beams"] += len(rows)
            writer.write(rows)
    stats.update(aligner.limit_stats())
    stats["empty_shard"] = stats["beams"] == 0
    if stats["empty_shard"]:
        log.warning("%s holds no paraphrase (every chain of this shard has ended): empty shard", paraphrases_path)
    log.info("align %s: %s", paraphrases_path, stats)
    if stats_path:
        files.write_json(stats, stats_path)
    return writer.rows
