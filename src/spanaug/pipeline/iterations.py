"""The iteration DAG's own stages: seed state, best-beam selection and assembly of the outputs.

Iteration 0 holds the seeds as CHAIN rows. Iteration ``i`` turns shard ``j`` of iteration
``i - 1`` into requests (constraint expansion), paraphrases, alignments and, here, the best beam
per seed: shard ``j`` of iteration ``i``. A shard only ever depends on the same shard of the
previous iteration, so shards run as independent jobs and a lost shard is rebuilt alone.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core import artifacts, consistency, files, score_scale
from spanaug.core.config import FrameElementSettings
from spanaug.core.validation import output_ids
from spanaug.pipeline import frame_elements as fe_rules
from spanaug.pipeline.constraints import lemma_of, lu_upos
from spanaug.pipeline.seeds import shard_table

log = logging.getLogger(__name__)


#: What one shard's iteration leaves in ``iterations/iter{i}/``, in the order the stages write it:
#: name -> the file's suffix after ``shard{j}.``. Both ways of running the iterations (a job per
#: stage, or one process per shard: :mod:`spanaug.pipeline.shard_chain`) write these same files.
SHARD_FILES = {
    "requests": "requests.parquet",
    "paraphrases": "paraphrases.parquet",
    "paraphrase_stats": "paraphrase_stats.json",
    "aligned": "aligned.parquet",
    "align_stats": "align_stats.json",
    "chain": "chain.parquet",
    "select_stats": "select_stats.json",
}


def shard_file(iterations_dir: Path | str, i: int | str, j: str, name: str) -> str:
    """Shard ``j``'s file ``name`` (a key of :data:`SHARD_FILES`) of iteration ``i``; ``i`` and ``j``
    may be wildcards (``{i}``), for a rule's output patterns."""
    i = i if isinstance(i, str) and i.startswith("{") else int(i)
    return f"{iterations_dir}/iter{i}/shard{j}.{SHARD_FILES[name]}"


def _span_fields(tokens: list[str], start: int | None, end: int | None, lexical_unit: str) -> dict[str, Any]:
    if start is None:
        return {"aligned_start": None, "aligned_end": None, "aligned_text": None, "aligned_lemma": None}
    span = tokens[start : end + 1]
    return {
        "aligned_start": start,
        "aligned_end": end,
        "aligned_text": " ".join(span),
        "aligned_lemma": lemma_of(span, lu_upos(lexical_unit)),
    }


def seed_rows(sentences: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Iteration-0 CHAIN rows: each seed sentence with its gold span as the 'aligned' span, and its
    frame elements (null where the input annotates none)."""
    for s in sentences:
        yield {
            "seed_id": s["sentence_id"],
            "frame": s["frame"],
            "lexical_unit": s["lexical_unit"],
            "seed_trigger": " ".join(s["tokens"][s["span_start"] : s["span_end"] + 1]),
            "iteration": 0,
            "paraphrase_tokens": s["tokens"],
            "paraphrase_text": s["text"],
            **_span_fields(s["tokens"], s["span_start"], s["span_end"], s["lexical_unit"]),
            "paraphrase_score": None,
            "aligner_score": None,
            "beam_rank": None,
            "constraints": [],
            "frame_elements": s.get("frame_elements"),
        }


def init_shards(seeds_path: Path | str, out_paths: list[Path | str]) -> list[int]:
    """Split the seeds into iteration-0 shards (stable hash of the seed id); returns row counts."""
    table = artifacts.read_table(seeds_path, artifacts.SENTENCES)
    parts = shard_table(table, "sentence_id", len(out_paths))
    source = artifacts.read_provenance(seeds_path) or {}
    run = source.get("run") or artifacts.run_id(table.column("sentence_id").to_pylist())
    counts = []
    for j, (part, path) in enumerate(zip(parts, out_paths)):
        provenance = {"run": run, "stage": "chain", "iteration": 0, "shard": j, "n_shards": len(out_paths)}
        counts.append(artifacts.write_table(list(seed_rows(part.to_pylist())), path, artifacts.CHAIN, provenance))
    empty = counts.count(0)
    if empty:
        log.warning(
            "%d of %d shards hold no seed (%d seeds): their jobs run on empty shards",
            empty,
            len(counts),
            table.num_rows,
        )
    return counts


def selection_reads_every_beams_fes(fe: FrameElementSettings) -> bool:
    """Whether :func:`best_beams` reads the FEs of every beam: ``select: joint`` weighs them and
    ``require`` refuses beams that lost some. Otherwise the trigger's score alone chooses, and of a
    request's FEs only the chosen beam's reach the chain."""
    return fe.select == "joint" or fe.require != "none"


def best_beams(rows: Iterable[dict[str, Any]], fe: FrameElementSettings | None = None) -> list[dict[str, Any]]:
    """Per request, the beam with the highest score (ties: the better-ranked beam): the aligner's
    score of the trigger, or with ``fe.select: joint`` the mean of it and the FEs' (lost: 0). Beams
    that lose an FE ``fe.require`` asks for are never chosen; a request left with none ends its chain."""
    fe = fe or FrameElementSettings()
    best: dict[str, tuple[tuple[float, int], dict[str, Any]]] = {}
    for row in rows:
        if not fe_rules.meets(row["frame_elements"], fe.require):
            continue
        score = row["aligner_score"]
        if fe.select == "joint":
            score = fe_rules.joint_score(score, row["frame_elements"])
        key = (score, -row["beam_rank"])
        cur = best.get(row["seed_id"])
        if cur is None or key > cur[0]:
            best[row["seed_id"]] = (key, row)
    return [row for _, row in best.values()]


def chain_row(row: dict[str, Any]) -> dict[str, Any]:
    """An ALIGNED row as the iteration's output (CHAIN schema)."""
    return {
        "seed_id": row["seed_id"],
        "frame": row["frame"],
        "lexical_unit": row["lexical_unit"],
        "seed_trigger": row["seed_trigger"],
        "iteration": row["iteration"],
        "paraphrase_tokens": row["paraphrase_tokens"],
        "paraphrase_text": row["paraphrase_text"],
        **_span_fields(row["paraphrase_tokens"], row["aligned_start"], row["aligned_end"], row["lexical_unit"]),
        "paraphrase_score": row["paraphrase_score"],
        "aligner_score": row["aligner_score"],
        "beam_rank": row["beam_rank"],
        "constraints": row["constraints"],
        "frame_elements": row["frame_elements"],  # null: FEs off, or the seed has none annotated
    }


def select_stage(
    aligned_path: Path | str,
    out: Path | str,
    fe: FrameElementSettings | None = None,
    stats_path: Path | str | None = None,
    chunk_rows: int = 8192,
) -> int:
    """CLI stage: an ALIGNED shard -> the iteration's CHAIN shard (best beam per seed, see
    :func:`best_beams`); its statistics count the requests, the outputs, the chains ``require``
    ended and the outputs that carry every FE of their source.

    All beams of one request are contiguous in the shard (the paraphrase stage writes them
    together), so the shard is streamed and each request's beams are held only briefly.
    """
    stats: Counter[str] = Counter(requests=0, outputs=0)
    provenance = artifacts.derived(aligned_path, "chain")
    scorers = artifacts.read_scorers(aligned_path)
    with artifacts.open_writer(out, artifacts.CHAIN, provenance, scorers) as writer:
        pending: list[dict[str, Any]] = []
        for table in artifacts.iter_batches(aligned_path, artifacts.ALIGNED, chunk_rows):
            rows = pending + table.to_pylist()
            if not rows:
                continue
            # Hold the chunk's last request back: its beams may continue in the next chunk.
            cut = len(rows)
            while cut > 0 and rows[cut - 1]["seed_id"] == rows[-1]["seed_id"]:
                cut -= 1
            writer.write(_selected(rows[:cut], fe, stats))
            pending = rows[cut:]
        writer.write(_selected(pending, fe, stats))
    if not writer.rows:
        log.warning("%s holds no aligned beam (every chain of this shard has ended): empty shard", aligned_path)
    if stats["ended_by_require"]:
        log.warning(
            "%s: %d of %d request(s) had no beam keeping the frame elements required (%s): their chains end",
            aligned_path,
            stats["ended_by_require"],
            stats["requests"],
            (fe or FrameElementSettings()).require,
        )
    if stats_path:
        files.write_json(dict(stats), stats_path)
    return writer.rows


def _selected(rows: list[dict[str, Any]], fe: FrameElementSettings | None, stats: Counter[str]) -> list[dict[str, Any]]:
    """The chosen beams of whole requests as CHAIN rows, counted into ``stats``."""
    chosen = [chain_row(r) for r in best_beams(rows, fe)]
    n_requests = len({r["seed_id"] for r in rows})
    stats["requests"] += n_requests
    stats["outputs"] += len(chosen)
    stats["ended_by_require"] += n_requests - len(chosen)
    stats["outputs_with_frame_elements"] += sum(bool(r["frame_elements"]) for r in chosen)
    stats["outputs_keeping_every_frame_element"] += sum(fe_rules.every_fe_kept(r["frame_elements"]) for r in chosen)
    return chosen


def _keys(paths: Sequence[Path | str], schema: pa.Schema) -> list[pa.Table]:
    """Each file's ``iteration`` and ``seed_id`` columns, read once for the checks."""
    return [artifacts.read_columns(p, schema, ["iteration", "seed_id"]) for p in paths]


def gather(shard_paths: Sequence[Path | str], out: Path | str, schema: pa.Schema) -> int:
    """The shards of one iteration merged into ``out``; they must be one iteration's, each shard once
    (a seed in two shards is a shard given twice). Returns the row count."""
    if "iteration" in schema.names and "seed_id" in schema.names:
        keys = _keys(shard_paths, schema)
        consistency.check_same_iteration(shard_paths, [consistency.iterations_in(k) for k in keys], "gather")
        consistency.check_no_shared_seeds(shard_paths, [k.column("seed_id") for k in keys], "gather")
    provenance = consistency.check_shards(shard_paths, [artifacts.read_provenance(p) for p in shard_paths])
    scorers = score_scale.agreed(shard_paths)
    return artifacts.concat_artifacts(
        shard_paths, out, schema, provenance=provenance, scorers=scorers.as_dict() if scorers else None
    )


def assemble(iteration_paths: list[Path | str], out: Path | str) -> int:
    """The released dataset: every iteration's outputs (iteration >= 1), in one AUGMENTED table.

    No output may come twice (the same chain given twice) and no iteration may be missing."""
    keys = _keys(iteration_paths, artifacts.CHAIN)
    consistency.check_unique_outputs(
        iteration_paths, [k.column("seed_id") for k in keys], [k.column("iteration") for k in keys]
    )
    present = sorted({i for k in keys for i in consistency.iterations_in(k) if i > 0})
    consistency.check_contiguous(iteration_paths, present, 1, "assemble")
    run = consistency.check_one_run(iteration_paths, [artifacts.read_provenance(p) for p in iteration_paths])
    provenance = {"run": run, "stage": "augmented"} if run else None
    # The seeds' chain (iteration 0) holds no scores; every file of outputs must record the same scorers.
    scored = [p for p, k in zip(iteration_paths, keys) if any(i > 0 for i in consistency.iterations_in(k))]
    scorers = score_scale.agreed(scored)
    if scored and scorers is None:
        log.warning(
            "the iterations' outputs do not all record one aligner and paraphraser (files written by another "
            "tool or an older spanaug, or scored by different aligners): the augmented dataset records no "
            "score scale, and the named filters use the paper's raw bounds"
        )
    with artifacts.open_writer(out, artifacts.AUGMENTED, provenance, scorers.as_dict() if scorers else None) as writer:
        for path in iteration_paths:
            for table in artifacts.iter_batches(path, artifacts.CHAIN, 65536):
                table = table.filter(pc.greater(table.column("iteration"), 0))
                ids = output_ids(table.column("seed_id"), table.column("iteration"))
                writer.write(table.append_column("output_id", ids))
    if not writer.rows:
        log.warning("no output in %d iteration file(s): the augmented dataset is empty", len(iteration_paths))
    return writer.rows
