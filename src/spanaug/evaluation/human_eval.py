"""The human-evaluation loop of §6.2: export an annotation task, import its 0-100 judgments.

Each task item shows a frame (name, definition, three gold examples) and three candidate
sentences in random order, the trigger marked in each: a system output, a gold sentence of the
same frame with a different LU (positive control) and a gold sentence of another frame
(negative control). Annotators score how well each marked word evokes the frame, 0-100. The key
that says which candidate is which stays in a separate file.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanaug.core import artifacts, files, plotting
from spanaug.core.degraded import warn
from spanaug.core.errors import InputError

log = logging.getLogger(__name__)

KINDS = ("output", "gold_in_frame", "gold_out_of_frame")
N_CANDIDATES = 3


def mark(tokens: Sequence[str], start: int, end: int) -> str:
    """The sentence with its trigger in bold (crowd tools render HTML)."""
    return (
        " ".join([*tokens[:start], "<b>", *tokens[start : end + 1], "</b>", *tokens[end + 1 :]])
        .replace("<b> ", "<b>")
        .replace(" </b>", "</b>")
    )


def export_task(
    augmented: Path | str,
    sentences: Path | str,
    out_task: Path | str,
    out_key: Path | str,
    n_items: int,
    seed: int,
    definitions: dict[str, str] | None = None,
    n_examples: int = 3,
) -> dict[str, int]:
    """Sample ``n_items`` aligned outputs and write the task CSV and its key CSV; returns counts."""
    rng = random.Random(seed)
    table = artifacts.read_table(augmented, artifacts.AUGMENTED)
    aug = table.filter(table.column("aligned_start").is_valid()).to_pylist()
    if not aug:  # say why there is nothing to judge: the aligner, not the frames
        raise InputError(
            augmented,
            None,
            f"none of its {table.num_rows:,} outputs has an aligned span, so there is "
            "nothing to judge (the aligner answered 'no alignment' for every one: see its null "
            "threshold in the aligner's training_summary.json)",
        )
    gold = artifacts.read_table(sentences, artifacts.SENTENCES).to_pylist()
    by_frame: dict[str, list[dict[str, Any]]] = {}
    for row in gold:
        by_frame.setdefault(row["frame"], []).append(row)
    frames = sorted(by_frame)
    rng.shuffle(aug)
    task_rows, key_rows, skipped = [], [], 0
    for out in aug:
        if len(task_rows) == n_items:
            break
        frame = out["frame"]
        in_frame = [g for g in by_frame.get(frame, []) if g["lexical_unit"] != out["lexical_unit"]]
        other_frames = [f for f in frames if f != frame]
        if not in_frame or not other_frames:
            skipped += 1  # no positive or negative control for this frame
            continue
        gold_in = rng.choice(in_frame)
        gold_out = rng.choice(by_frame[rng.choice(other_frames)])
        examples = [g for g in by_frame[frame] if g["sentence_id"] != gold_in["sentence_id"]]
        examples = rng.sample(examples, min(n_examples, len(examples)))
        candidates = [
            ("output", out["output_id"], mark(out["paraphrase_tokens"], out["aligned_start"], out["aligned_end"])),
            (
                "gold_in_frame",
                gold_in["sentence_id"],
                mark(gold_in["tokens"], gold_in["span_start"], gold_in["span_end"]),
            ),
            (
                "gold_out_of_frame",
                gold_out["sentence_id"],
                mark(gold_out["tokens"], gold_out["span_start"], gold_out["span_end"]),
            ),
        ]
        rng.shuffle(candidates)
        item_id = f"item{len(task_rows):05d}"
        row = {"item_id": item_id, "frame": frame, "frame_definition": (definitions or {}).get(frame, "")}
        for n in range(n_examples):
            row[f"example_{n + 1}"] = (
                mark(examples[n]["tokens"], examples[n]["span_start"], examples[n]["span_end"])
                if n < len(examples)
                else ""
            )
        for n, (kind, ref, text) in enumerate(candidates, start=1):
            row[f"candidate_{n}"] = text
            key_rows.append({"item_id": item_id, "candidate": n, "kind": kind, "ref_id": ref})
        task_rows.append(row)
    if not task_rows:
        raise InputError(augmented, None, "no output could be paired with gold controls (need two or more frames)")
    files.write_csv(task_rows, out_task)
    files.write_csv(key_rows, out_key)
    return {
        "items": len(task_rows),
        "asked": n_items,
        "skipped_without_controls": skipped,
        "warnings": _shortfall(len(task_rows), n_items, len(aug), skipped),
    }


def _shortfall(items: int, asked: int, aligned: int, skipped: int) -> list[dict[str, Any]]:
    """A warning for the report's warnings page when the task holds fewer items than asked for."""
    warnings: list[dict[str, Any]] = []
    if items < asked:
        warn(
            warnings,
            "degraded",
            f"annotation task: {items} items where {asked} were asked for ({aligned} aligned outputs, "
            f"{skipped} without gold controls in their frame)",
            log,
        )
    return warnings


def simulate_judgments(
    key: Path | str, out: Path | str, raters: int, seed: int, accept: dict[str, float] | None = None
) -> int:
    """Crowd results from simulated annotators (demo and tests only: no person judged these).

    Each kind of candidate is accepted with a fixed probability; an accepted candidate scores
    60-100, a rejected one 0-40. Rows have the crowd tool's shape: item, worker, one score per
    candidate.
    """
    accept = accept or {"output": 0.6, "gold_in_frame": 0.85, "gold_out_of_frame": 0.1}
    rng = random.Random(seed)
    items: dict[str, dict[int, str]] = {}
    for (item_id, n), (kind, _) in read_key(key).items():
        items.setdefault(item_id, {})[n] = kind
    rows = []
    for item_id, kinds in items.items():
        for worker in range(raters):
            row: dict[str, Any] = {"item_id": item_id, "worker_id": f"sim{worker}"}
            for n, kind in sorted(kinds.items()):
                ok = rng.random() < accept[kind]
                row[f"candidate_{n}_score"] = rng.randint(60, 100) if ok else rng.randint(0, 40)
            rows.append(row)
    files.write_csv(rows, out)
    return len(rows)


def fleiss_kappa(labels: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa for items each rated by the same number of raters with categories 0/1."""
    if not labels:
        return None
    n = len(labels[0])
    if n < 2 or any(len(item) != n for item in labels):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings per item")
    counts = [(item.count(0), item.count(1)) for item in labels]
    p_bar = sum((c0 * (c0 - 1) + c1 * (c1 - 1)) / (n * (n - 1)) for c0, c1 in counts) / len(counts)
    share1 = sum(c1 for _, c1 in counts) / (n * len(counts))
    p_e = share1**2 + (1 - share1) ** 2
    return 1.0 if p_e == 1 else (p_bar - p_e) / (1 - p_e)


def import_judgments(results: Path | str, key: Path | str, out_dir: Path | str) -> dict[str, Any]:
    """Acceptance rates, agreement and score histogram; writes output judgments for the neural filter."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    key_of = read_key(key)
    scores: dict[tuple[str, int], list[float]] = {}
    rows = files.read_csv(results, ("item_id",))
    if rows and not any(f"candidate_{n}_score" in rows[0][1] for n in range(1, N_CANDIDATES + 1)):
        raise InputError(results, 1, f"the header has no candidate_N_score column (N = 1 to {N_CANDIDATES})")
    for line, row in rows:
        item = row.get("item_id")
        for n in range(1, N_CANDIDATES + 1):
            raw = row.get(f"candidate_{n}_score")
            if raw in (None, ""):
                continue
            if (item, n) not in key_of:
                raise InputError(results, line, f"item {item!r} candidate {n} is not in the key {key}")
            try:
                value = float(raw)
            except ValueError:
                raise InputError(results, line, f"candidate_{n}_score {raw!r} is not a number") from None
            if not 0 <= value <= 100:  # NaN fails this too
                raise InputError(results, line, f"candidate_{n}_score {value} outside 0-100")
            scores.setdefault((item, n), []).append(value)
    if not scores:
        raise InputError(results, None, "no scores (expected columns item_id, candidate_N_score)")
    by_kind: dict[str, list[list[float]]] = {k: [] for k in KINDS}
    for cand, values in scores.items():
        by_kind[key_of[cand][0]].append(values)
    summary: dict[str, Any] = {"candidates": len(scores), "judgments": sum(len(v) for v in scores.values())}
    for kind, cands in by_kind.items():
        summary[f"{kind}_acceptance"] = (sum(sum(v) / len(v) >= 50 for v in cands) / len(cands)) if cands else None
        summary[f"{kind}_candidates"] = len(cands)
    binary = [[int(s >= 50) for s in v] for v in scores.values()]
    modal = Counter(len(b) for b in binary).most_common(1)[0][0]
    same_n = [b for b in binary if len(b) == modal]
    summary["fleiss_kappa"] = fleiss_kappa(same_n) if modal >= 2 else None
    summary["kappa_items"] = len(same_n)
    summary["all_agree_rate"] = sum(len(set(b)) == 1 for b in binary if len(b) >= 2) / max(
        1, sum(len(b) >= 2 for b in binary)
    )
    judgments = [
        {"output_id": key_of[c][1], "score": s} for c, v in scores.items() if key_of[c][0] == "output" for s in v
    ]
    files.write_csv(judgments, out_dir / "judgments.csv", fields=["output_id", "score"])
    hist = {kind: [s for v in cands for s in v] for kind, cands in by_kind.items()}
    plot_scores(hist, out_dir / "score_histogram.png")
    files.write_json(summary, out_dir / "human_eval.json")
    return summary


def plot_scores(hist: dict[str, list[float]], out: Path) -> None:
    fig, ax = plotting.subplots(figsize=(6, 3.4))
    ax.hist([hist[k] for k in KINDS], bins=10, range=(0, 100), label=list(KINDS))
    ax.set_xlabel("score (0-100)")
    ax.set_ylabel("judgments")
    ax.legend()
    ax.set_title("Human judgments by candidate kind")
    plotting.save(fig, out)


def read_key(path: Path | str) -> dict[tuple[str, int], tuple[str, str]]:
    """A task key: (item, candidate number) -> (kind, the reference id of the candidate)."""
    key: dict[tuple[str, int], tuple[str, str]] = {}
    for line, row in files.read_csv(path, ("item_id", "candidate", "kind", "ref_id")):
        cand = row["candidate"].strip()
        if not (cand.isascii() and cand.isdigit() and 1 <= int(cand) <= N_CANDIDATES):
            raise InputError(path, line, f"candidate {row['candidate']!r} (expected 1 to {N_CANDIDATES})")
        if row["kind"] not in KINDS:
            raise InputError(path, line, f"kind {row['kind']!r} (expected one of {', '.join(KINDS)})")
        if not row["item_id"].strip() or not row["ref_id"].strip():
            raise InputError(path, line, "empty item_id or ref_id")
        if (row["item_id"], int(cand)) in key:
            raise InputError(path, line, f"item {row['item_id']!r} candidate {cand} appears twice")
        key[(row["item_id"], int(cand))] = (row["kind"], row["ref_id"])
    if not key:
        raise InputError(path, None, "the key holds no candidates")
    return key
