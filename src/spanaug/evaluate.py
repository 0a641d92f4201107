"""Intrinsic statistics of the augmented dataset, computed from its Parquet artifact.

Counts are computed on Arrow columns (no Python row objects), so they scale to FrameNet; BLEU
diversity measures use a fixed-seed sample of chains.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug import artifacts

log = logging.getLogger(__name__)

_STAT_COLUMNS = ["seed_id", "frame", "iteration", "aligned_start", "aligned_text", "aligned_lemma",
                 "paraphrase_score", "aligner_score", "paraphrase_text"]


def _unique_pairs(table: pa.Table, col: str) -> int:
    sub = table.select(["frame", col]).drop_null()
    lowered = pa.table({"frame": sub.column("frame"), col: pc.utf8_lower(sub.column(col))})
    return lowered.group_by(["frame", col]).aggregate([]).num_rows


def per_iteration(table: pa.Table) -> list[dict[str, Any]]:
    """Outputs, alignment failures and mean scores per iteration."""
    rows = []
    iterations = sorted(set(table.column("iteration").to_pylist()))
    for it in iterations:
        part = table.filter(pc.equal(table.column("iteration"), it))
        aligned = part.column("aligned_start").is_valid()
        n_aligned = pc.sum(aligned).as_py() or 0
        rows.append({
            "iteration": it,
            "outputs": part.num_rows,
            "aligned": n_aligned,
            "failed_to_align_share": 1 - n_aligned / part.num_rows if part.num_rows else 0.0,
            "mean_paraphrase_score": pc.mean(part.column("paraphrase_score")).as_py(),
            "mean_aligner_score": pc.mean(part.column("aligner_score")).as_py(),
        })
    return rows


def bleu_measures(table: pa.Table, seeds: pa.Table, sample: int = 2000, seed: int = 0) -> dict[str, float | None]:
    """Mean sentence BLEU of outputs to their seed sentence, and self-BLEU within chains."""
    import sacrebleu

    seed_text = dict(zip(seeds.column("sentence_id").to_pylist(), seeds.column("text").to_pylist()))
    chains: dict[str, list[str]] = {}
    for sid, text in zip(table.column("seed_id").to_pylist(), table.column("paraphrase_text").to_pylist()):
        chains.setdefault(sid, []).append(text)
    ids = sorted(chains)
    random.Random(seed).shuffle(ids)
    ids = ids[:sample]
    to_seed, self_bleu = [], []
    for sid in ids:
        outs = chains[sid]
        if sid in seed_text:
            to_seed.extend(sacrebleu.sentence_bleu(o, [seed_text[sid]]).score for o in outs)
        for i, out in enumerate(outs):
            others = outs[:i] + outs[i + 1 :]
            if others:
                self_bleu.append(sacrebleu.sentence_bleu(out, others).score)
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    return {"bleu_to_seed": mean(to_seed), "self_bleu_within_chain": mean(self_bleu), "bleu_sampled_chains": len(ids)}


def intrinsic_stats(augmented: Path | str, seeds: Path | str, bleu_sample: int = 2000) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report's dataset statistics and its per-iteration table."""
    table = artifacts.read_table(augmented, artifacts.CHAIN).select(_STAT_COLUMNS)
    seed_table = artifacts.read_table(seeds, artifacts.SENTENCES)
    seed_pairs = pa.table({
        "frame": seed_table.column("frame"),
        "trigger": pa.array([" ".join(t[s : e + 1]) for t, s, e in zip(
            seed_table.column("tokens").to_pylist(), seed_table.column("span_start").to_pylist(),
            seed_table.column("span_end").to_pylist())]),
    })
    aligned = table.filter(table.column("aligned_start").is_valid())
    n_seeds = seed_table.num_rows
    lemma_pairs = _unique_pairs(aligned, "aligned_lemma")
    stats: dict[str, Any] = {
        "seeds": n_seeds,
        "outputs": table.num_rows,
        "aligned_outputs": aligned.num_rows,
        "failed_to_align_share": 1 - aligned.num_rows / table.num_rows if table.num_rows else None,
        "multiple_over_seeds": aligned.num_rows / n_seeds if n_seeds else None,
        "unique_frame_trigger_pairs": _unique_pairs(aligned, "aligned_text"),
        "unique_frame_lemma_pairs": lemma_pairs,
        "seed_unique_frame_trigger_pairs": _unique_pairs(seed_pairs, "trigger"),
        "lemmas_per_output": lemma_pairs / aligned.num_rows if aligned.num_rows else None,
    }
    stats.update(bleu_measures(table, seed_table, bleu_sample))
    return stats, per_iteration(table)


def write_stats(augmented: Path | str, seeds: Path | str, out_json: Path | str, out_csv: Path | str,
                out_plot: Path | str | None = None, bleu_sample: int = 2000) -> dict[str, Any]:
    """Write the statistics JSON, the per-iteration CSV and (optionally) its plot."""
    import csv

    stats, rows = intrinsic_stats(augmented, seeds, bleu_sample)
    with artifacts.atomic_path(out_json) as tmp:
        tmp.write_text(json.dumps(stats, indent=2))
    with artifacts.atomic_path(out_csv) as tmp, open(tmp, "w", newline="") as handle:
        fields = ["iteration", "outputs", "aligned", "failed_to_align_share", "mean_paraphrase_score", "mean_aligner_score"]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    if out_plot:
        plot_per_iteration(rows, out_plot)
    return stats


def plot_per_iteration(rows: list[dict[str, Any]], out: Path | str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    its = [r["iteration"] for r in rows]
    ax.bar(its, [r["outputs"] for r in rows], color="#c6dbef", label="outputs")
    ax.bar(its, [r["aligned"] for r in rows], color="#3182bd", label="aligned")
    ax.set_xlabel("iteration")
    ax.set_ylabel("rows")
    ax.set_xticks(its)
    ax.legend()
    ax.set_title("Augmented outputs per iteration")
    fig.tight_layout()
    with artifacts.atomic_path(out, Path(out).suffix) as tmp:
        fig.savefig(tmp, format=Path(out).suffix.lstrip(".") or "png", dpi=120)
    plt.close(fig)
