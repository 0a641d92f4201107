"""Intrinsic statistics of the augmented dataset, computed from its Parquet artifact.

Counts are computed on Arrow columns (no Python row objects), so they scale to FrameNet; BLEU
diversity measures use a fixed-seed sample of chains.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core import artifacts, files, plotting
from spanaug.core.degraded import warn
from spanaug.core.errors import ArtifactError
from spanaug.core.evaluation_settings import StatsSettings
from spanaug.core.metrics import prf
from spanaug.core.tagging import load_tagger
from spanaug.evaluation import fe_retention
from spanaug.evaluation.meaning import SentenceEncoder, meaning_check
from spanaug.evaluation.sources import with_sources
from spanaug.pipeline.framenet import read_lexicon

log = logging.getLogger(__name__)


#: The columns the statistics read (the constraint lists, the widest column, are left on disk).
_STAT_COLUMNS = [
    "seed_id",
    "frame",
    "lexical_unit",
    "iteration",
    "paraphrase_tokens",
    "paraphrase_text",
    "aligned_start",
    "aligned_end",
    "aligned_text",
    "aligned_lemma",
    "paraphrase_score",
    "aligner_score",
    "frame_elements",
]


POS_METRICS = ["not_ext", "jaccard_distance", "weighted_jaccard_distance"]


def _unique_pairs(table: pa.Table, col: str) -> int:
    sub = table.select(["frame", col]).drop_null()
    lowered = pa.table({"frame": sub.column("frame"), col: pc.utf8_lower(sub.column(col))})
    return lowered.group_by(["frame", col]).aggregate([]).num_rows


#: The per-iteration CSV's columns: always, then with ``stats.lexicon``, then with ``stats.meaning_encoder``.
PER_ITERATION_FIELDS = [
    "iteration",
    "outputs",
    "aligned",
    "failed_to_align_share",
    "seeds_with_aligned_share",
    "mean_paraphrase_score",
    "mean_aligner_score",
]
LEXICON_FIELDS = ["lu_precision", "lu_recall"]
MEANING_FIELDS = ["mean_cosine_to_source", "share_meaning_kept", "mean_cosine_to_seed"]


def per_iteration(table: pa.Table, n_seeds: int | None = None) -> list[dict[str, Any]]:
    """Outputs, alignment failures, the share of the ``n_seeds`` seeds with an aligned output (a
    paraphrase that passed the stage's checks and whose trigger was found) and mean scores per iteration."""
    rows = []
    iterations = sorted(set(table.column("iteration").to_pylist()))
    for it in iterations:
        part = table.filter(pc.equal(table.column("iteration"), it))
        aligned = part.column("aligned_start").is_valid()
        n_aligned = pc.sum(aligned).as_py() or 0
        seeds_aligned = len(pc.unique(part.filter(aligned).column("seed_id")))
        rows.append(
            {
                "iteration": it,
                "outputs": part.num_rows,
                "aligned": n_aligned,
                "failed_to_align_share": 1 - n_aligned / part.num_rows if part.num_rows else 0.0,
                "seeds_with_aligned_share": seeds_aligned / n_seeds if n_seeds else None,
                "mean_paraphrase_score": pc.mean(part.column("paraphrase_score")).as_py(),
                "mean_aligner_score": pc.mean(part.column("aligner_score")).as_py(),
            }
        )
    return rows


def lexicon_recovery_per_iteration(
    table: pa.Table, seeds: pa.Table, lexicon: dict[str, set[str]], rows: list[dict[str, Any]]
) -> None:
    """Adds to each per-iteration row the LU precision and recall of the outputs up to and including
    its iteration (:func:`lexicon_recovery`: what a run stopped there would have found)."""
    for row in rows:
        upto = table.filter(pc.less_equal(table.column("iteration"), row["iteration"]))
        found = lexicon_recovery(upto, seeds, lexicon)
        row["lu_precision"], row["lu_recall"] = found["precision"], found["recall"]


def frame_element_stats(table: pa.Table, seeds: pa.Table) -> dict[str, Any]:
    """The seeds' FE annotations, whether the outputs carry FEs (``frame_elements.mode`` not off),
    and per iteration the FEs carried, lost and null-instantiated, the outputs keeping every FE and
    the mean score of the carried FEs (:mod:`spanaug.evaluation.fe_retention`)."""
    counts = fe_retention.seed_fe_counts(seeds)
    return {
        "seeds_with_fes": counts["seeds_with_fes"],
        "seed_overt_fes": counts["overt_fes"],
        "seed_null_instantiated_fes": counts["null_instantiated_fes"],
        "outputs_carry_fes": fe_retention.carries_fes(table),
        "per_iteration": fe_retention.per_iteration(table),
    }


def bleu_measures(table: pa.Table, seeds: pa.Table, sample: int, seed: int = 0) -> dict[str, float | None]:
    """Mean sentence BLEU of outputs to their seed sentence and to the sentence they paraphrase, and
    self-BLEU within chains (each output against the chain's other outputs), over ``sample`` chains
    (``StatsSettings.bleu_sample``)."""
    import sacrebleu

    from spanaug.core.text import detokenize

    seed_text = dict(zip(seeds.column("sentence_id").to_pylist(), seeds.column("text").to_pylist()))
    chains: dict[str, list[tuple[str, list[str]]]] = {}
    for sid, text, source in zip(
        table.column("seed_id").to_pylist(),
        table.column("paraphrase_text").to_pylist(),
        table.column("source_tokens").to_pylist(),
    ):
        chains.setdefault(sid, []).append((text, source))
    ids = sorted(chains)
    random.Random(seed).shuffle(ids)
    ids = ids[:sample]
    to_seed, to_source, self_bleu = [], [], []
    for sid in ids:
        outs = [text for text, _ in chains[sid]]
        if sid in seed_text:
            to_seed.extend(sacrebleu.sentence_bleu(o, [seed_text[sid]]).score for o in outs)
        to_source.extend(sacrebleu.sentence_bleu(text, [detokenize(src)]).score for text, src in chains[sid])
        for i, out in enumerate(outs):
            others = outs[:i] + outs[i + 1 :]
            if others:
                self_bleu.append(sacrebleu.sentence_bleu(out, others).score)
    return {
        "bleu_to_seed": _mean(to_seed),
        "bleu_to_source": _mean(to_source),
        "self_bleu_within_chain": _mean(self_bleu),
        "bleu_sampled_chains": len(ids),
    }


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def intrinsic_stats(
    augmented: Path | str,
    seeds: Path | str,
    cfg: StatsSettings | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[int, int]]]:
    """The report's dataset statistics, its per-iteration table and the span distributions."""
    cfg = cfg or StatsSettings()
    seed_table = artifacts.read_table(seeds, artifacts.SENTENCES)
    try:
        table = with_sources(artifacts.read_table(augmented, artifacts.AUGMENTED).select(_STAT_COLUMNS), seed_table)
    except ArtifactError as exc:  # name both files: the fault is in how they go together
        raise ArtifactError(f"{augmented} (with the seeds {seeds}), {exc}") from None
    seed_pairs = pa.table(
        {
            "frame": seed_table.column("frame"),
            "trigger": pa.array(
                [
                    " ".join(t[s : e + 1])
                    for t, s, e in zip(
                        seed_table.column("tokens").to_pylist(),
                        seed_table.column("span_start").to_pylist(),
                        seed_table.column("span_end").to_pylist(),
                    )
                ]
            ),
        }
    )
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
    stats.update(bleu_measures(table, seed_table, cfg.bleu_sample))
    stats["frame_elements"] = frame_element_stats(table, seed_table)
    warnings: list[dict[str, Any]] = []
    lexicon = read_lexicon(cfg.lexicon) if cfg.lexicon else None
    if lexicon is not None:
        stats["lexicon_recovery"] = lexicon_recovery(table, seed_table, lexicon)
        missing = stats["lexicon_recovery"]["frames_missing_from_lexicon"]
        if missing:
            warn(
                warnings,
                "degraded",
                f"lexicon recovery: {len(missing)} seeded frame(s) are not in the lexicon "
                f"{cfg.lexicon} ({', '.join(missing[:5])}): their LUs count as false positives",
                log,
            )
    tagger, why_not = load_tagger(cfg.pos_tagger)
    if tagger is None:
        warn(warnings, "degraded", f"POS diversity (Table 3) skipped: {why_not}", log)
        stats["pos_diversity"] = {"skipped": POS_METRICS, "reason": why_not}
    else:
        stats["pos_diversity"] = pos_diversity(table, tagger, cfg.pos_sample)
    rows = per_iteration(table, n_seeds)
    if lexicon is not None:
        lexicon_recovery_per_iteration(table, seed_table, lexicon, rows)
    if cfg.meaning_encoder:
        stats["meaning"] = meaning_check(table, seed_table, SentenceEncoder(cfg.meaning_encoder), cfg.meaning_threshold)
        by_iteration = {r["iteration"]: r for r in stats["meaning"]["per_iteration"]}
        for row in rows:
            row.update({k: by_iteration.get(row["iteration"], {}).get(k) for k in MEANING_FIELDS})
    if not table.num_rows:
        warn(warnings, "empty", "the augmented dataset has no outputs: every statistic is empty", log)
    elif not aligned.num_rows:
        warn(warnings, "empty", f"none of the {table.num_rows} outputs has an aligned span", log)
    stats["warnings"] = warnings
    return stats, rows, span_distributions(table)


def write_stats(
    augmented: Path | str,
    seeds: Path | str,
    out_json: Path | str,
    out_csv: Path | str,
    out_plot: Path | str | None = None,
    cfg: StatsSettings | None = None,
    out_dist_plot: Path | str | None = None,
) -> dict[str, Any]:
    """Write the statistics JSON, the per-iteration CSV and (optionally) the plots."""
    stats, rows, dists = intrinsic_stats(augmented, seeds, cfg)
    stats["span_distributions"] = dists
    files.write_json(stats, out_json)
    fields = (
        PER_ITERATION_FIELDS
        + (LEXICON_FIELDS if cfg and cfg.lexicon else [])
        + (MEANING_FIELDS if cfg and cfg.meaning_encoder else [])
    )
    files.write_csv(rows, out_csv, fields=fields)
    if out_plot:
        plot_per_iteration(rows, out_plot)
    if out_dist_plot:
        plot_distributions(dists, out_dist_plot)
    return stats


def plot_per_iteration(rows: list[dict[str, Any]], out: Path | str) -> None:
    """Outputs per iteration, split into aligned and unaligned (stacked), and the mean scores.

    The unaligned part is labelled with its total: an aligner whose null threshold was never tuned
    (0) aligns every output, and the legend then says that none failed instead of drawing two
    identical bars.
    """
    shares = {key: label for key, label in _SHARE_LINES.items() if any(r.get(key) is not None for r in rows)}
    fig, axes = plotting.subplots(1, 3 if shares else 2, figsize=(13.5 if shares else 9, 3.5))
    ax, ax_scores = axes[0], axes[1]
    its = [r["iteration"] for r in rows]
    aligned = [r["aligned"] for r in rows]
    failed = [r["outputs"] - r["aligned"] for r in rows]
    ax.bar(its, aligned, color="#3182bd", label="aligned")
    ax.bar(
        its,
        failed,
        bottom=aligned,
        color="#fdae6b",
        label=f"no span aligned ({sum(failed)} in all)" if sum(failed) else "no span aligned: none",
    )
    ax.set_xlabel("iteration")
    ax.set_ylabel("outputs")
    ax.set_xticks(its)
    ax.legend(fontsize=8)
    ax.set_title("Outputs per iteration")
    para = [r["mean_paraphrase_score"] for r in rows]
    ax_scores.plot(
        its,
        [float("nan") if v is None else v for v in para],
        marker="o",
        color="#3182bd",
        label="mean paraphrase score (NLL, lower is better)",
    )
    ax_scores.set_xlabel("iteration")
    ax_scores.set_ylabel("paraphrase score")
    ax_scores.set_xticks(its)
    ax_aligner = ax_scores.twinx()
    ali = [r["mean_aligner_score"] for r in rows]
    ax_aligner.plot(
        its, [float("nan") if v is None else v for v in ali], marker="s", color="#e6550d", label="mean aligner score"
    )
    ax_aligner.set_ylabel("aligner score")
    ax_aligner.set_ylim(0, 1)
    handles = ax_scores.get_legend_handles_labels()[0] + ax_aligner.get_legend_handles_labels()[0]
    ax_scores.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="lower left")
    ax_scores.set_title("Mean scores per iteration")
    if shares:
        ax_shares = axes[2]
        for (key, label), marker in zip(shares.items(), "os^vD"):
            values = [float("nan") if r.get(key) is None else r[key] for r in rows]
            ax_shares.plot(its, values, marker=marker, label=label)
        ax_shares.set_xlabel("iteration")
        ax_shares.set_ylabel("share")
        ax_shares.set_ylim(0, 1.05)
        ax_shares.set_xticks(its)
        ax_shares.legend(fontsize=7, loc="lower left")
        ax_shares.set_title("Seeds, new LUs and meaning per iteration")
    plotting.save(fig, out)


#: The plot's third panel: the shares the statistics measured (per-iteration key -> legend).
_SHARE_LINES = {
    "seeds_with_aligned_share": "seeds with an aligned output",
    "lu_precision": "new LUs: precision so far",
    "lu_recall": "new LUs: recall so far",
    "share_meaning_kept": "meaning kept (cosine ≥ threshold)",
}


def span_distributions(table: pa.Table) -> dict[str, dict[int, int]]:
    """Histograms of aligned span length and |aligned start - source start| (Figures 4, 5)."""
    aligned = table.filter(table.column("aligned_start").is_valid())
    lengths = pc.add(pc.subtract(aligned.column("aligned_end"), aligned.column("aligned_start")), 1)
    shifts = pc.abs(pc.subtract(aligned.column("aligned_start"), aligned.column("source_start")))

    def hist(values: pa.ChunkedArray) -> dict[int, int]:
        counts = pc.value_counts(values).to_pylist()
        return {int(c["values"]): int(c["counts"]) for c in sorted(counts, key=lambda c: c["values"])}

    return {"span_length": hist(lengths), "position_difference": hist(shifts)}


def plot_distributions(dists: dict[str, dict[int, int]], out: Path | str) -> None:
    fig, axes = plotting.subplots(1, 2, figsize=(9, 3.4))
    for ax, (name, title) in zip(
        axes,
        [("span_length", "aligned span length (tokens)"), ("position_difference", "|aligned start - source start|")],
    ):
        hist = dists[name]
        ax.bar(list(hist), list(hist.values()), color="#3182bd")
        ax.set_xlabel(title)
        ax.set_ylabel("outputs")
    plotting.save(fig, out)


def lexicon_recovery(augmented: pa.Table, seeds: pa.Table, lexicon: dict[str, set[str]]) -> dict[str, Any]:
    """Precision and recall of generated (frame, LU) pairs against the LUs held out of the seed.

    A generated LU is its aligned lemma with the seed LU's part of speech. Seed LUs are neither
    true positives nor false negatives; recall counts the held-out LUs of the seeded frames.
    """
    seed_lus: dict[str, set[str]] = {}
    for frame, lu in zip(seeds.column("frame").to_pylist(), seeds.column("lexical_unit").to_pylist()):
        seed_lus.setdefault(frame, set()).add(lu.lower())
    generated: set[tuple[str, str]] = set()
    for frame, lu, lemma in zip(
        augmented.column("frame").to_pylist(),
        augmented.column("lexical_unit").to_pylist(),
        augmented.column("aligned_lemma").to_pylist(),
    ):
        if lemma:
            pos = lu.rpartition(".")[2].lower()
            candidate = f"{lemma.lower()}.{pos}"
            if candidate not in seed_lus.get(frame, ()):
                generated.add((frame, candidate))
    held_out = {(f, lu) for f in seed_lus for lu in lexicon.get(f, set()) - seed_lus[f]}
    tp = len(generated & held_out)
    fp = len(generated - held_out)
    fn = len(held_out - generated)
    precision, recall, f1 = prf(tp, tp + fp, tp + fn)
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "seeded_frames": len(seed_lus),
        "frames_missing_from_lexicon": sorted(set(seed_lus) - set(lexicon)),
    }


def pos_diversity(table: pa.Table, tagger: Any, sample: int, seed: int = 0) -> dict[str, Any]:
    """¬EXT, Jaccard and weighted Jaccard distance between source and aligned spans' POS, over ``sample``
    aligned outputs (``StatsSettings.pos_sample``).

    Per (source span, aligned span) pair: ¬EXT is 1 when the POS sequences differ; Jaccard
    distance compares the sets of tags, weighted Jaccard their counts; each is averaged.
    """
    aligned = table.filter(table.column("aligned_start").is_valid())
    rows = list(range(aligned.num_rows))
    random.Random(seed).shuffle(rows)
    rows = sorted(rows[:sample])
    cols = {
        c: aligned.column(c).to_pylist()
        for c in ("paraphrase_tokens", "aligned_start", "aligned_end", "source_tokens", "source_start", "source_end")
    }
    differ, jaccard, weighted = [], [], []
    for i in rows:
        tgt = tagger.tag(cols["paraphrase_tokens"][i])[cols["aligned_start"][i] : cols["aligned_end"][i] + 1]
        src = tagger.tag(cols["source_tokens"][i])[cols["source_start"][i] : cols["source_end"][i] + 1]
        differ.append(float(src != tgt))
        a, b = Counter(src), Counter(tgt)
        jaccard.append(1 - len(set(a) & set(b)) / len(set(a) | set(b)))
        weighted.append(1 - sum((a & b).values()) / sum((a | b).values()))
    return {
        "pos_tagger": tagger.name,
        "pos_pairs": len(rows),
        **dict(zip(POS_METRICS, (_mean(differ), _mean(jaccard), _mean(weighted)))),
    }
