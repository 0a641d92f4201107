"""The align stage: every beam of a PARAPHRASES shard aligned, as an ALIGNED shard.
"""

from __future__ import annotations

from pathlib import Path

from spanaug.core import artifacts
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.loading import load_aligner


def align_stage(model: Path | str, paraphrases_path: Path | str, out: Path | str, encoder: str | None = None,
                device: str | None = "auto", chunk_rows: int = 4096, batch_size: int = 64) -> int:
    """CLI stage: a PARAPHRASES shard -> an ALIGNED shard (one prediction per beam)."""
    aligner = load_aligner(model, device=device, encoder=encoder)  # either kind
    with artifacts.open_writer(out, artifacts.ALIGNED) as writer:
        for table in artifacts.iter_batches(paraphrases_path, artifacts.PARAPHRASES, chunk_rows):
            rows = table.to_pylist()
            insts = [Instance(f"{r['seed_id']}:{r['beam_rank']}", r["source_tokens"], r["paraphrase_tokens"],
                              (r["source_span_start"], r["source_span_end"])) for r in rows]
            for row, (span, score) in zip(rows, aligner.predict(insts, batch_size=batch_size)):
                row["aligned_start"], row["aligned_end"] = (span if span is not None else (None, None))
                row["aligner_score"] = score
            writer.write(rows)
    return writer.rows
