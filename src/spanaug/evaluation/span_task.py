"""The span-alignment annotation task of the seed paper's data collection (§4.1).

Annotators see a source sentence with its trigger highlighted and a paraphrase of it, and mark
the paraphrase's counterpart span (or say it has none). Here the items are the pipeline's own
outputs: the source is the sentence an output paraphrases (the seed, or the previous iteration's
output) with the span that was rewritten. Their answers become span-alignment JSONL, the format
of ``aligner.train.instances`` and ``aligner.train.extra_instances``, so a project can grow its
aligner's training data from its own chains.

Agreement is reported two ways:

- exact-span agreement: the share of annotator pairs on an item that gave the identical answer
  ("no counterpart" included), and the share of items on which everyone agreed;
- Krippendorff's alpha (nominal) on token membership: each (item, paraphrase token) is a unit,
  valued 1 when an annotator's span covers the token. Alpha corrects for chance, allows any
  number of annotators per item and missing answers (Fleiss' kappa needs the same number of
  raters everywhere), and, through tokens, credits partly overlapping spans, as the paper's soft
  metric does. nltk's implementation is used.

An item's gold answer is the exact answer of a strict majority of its annotators; items without
one are left out of the JSONL (and counted).
"""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanaug.core import artifacts, files
from spanaug.core.degraded import warn
from spanaug.core.errors import InputError
from spanaug.core.metrics import span_metrics
from spanaug.evaluation.sources import with_sources

#: Columns of the task CSV a crowd tool reads.
TASK_COLUMNS = [
    "item_id",
    "source",
    "paraphrase",
    "paraphrase_tokens_indexed",
    "source_tokens",
    "source_start",
    "source_end",
    "paraphrase_tokens",
]

#: Below this alpha, agreement is too low to trust the majority answers as gold (Krippendorff's
#: own lowest bound for tentative conclusions is 0.667; 0.4 flags answers that are barely better
#: than chance).
LOW_ALPHA = 0.4

Span = tuple[int, int] | None


def highlight(tokens: Sequence[str], start: int, end: int) -> str:
    """The sentence with tokens [start, end] in bold, for a crowd tool that renders HTML; the
    tokens are HTML-escaped, so a sentence containing '<' cannot break the page."""
    import html

    esc = [html.escape(t) for t in tokens]
    return " ".join([*esc[:start], "<b>" + " ".join(esc[start : end + 1]) + "</b>", *esc[end + 1 :]])


def export_span_task(
    augmented: Path | str, seeds: Path | str, out_task: Path | str, out_key: Path | str, n_items: int, seed: int = 0
) -> dict[str, int]:
    """Sample ``n_items`` outputs (by ``seed``) and write the task CSV and its key (the output ids and
    the pipeline aligner's own answers, kept out of the annotators' view)."""
    table = with_sources(
        artifacts.read_table(augmented, artifacts.AUGMENTED), artifacts.read_table(seeds, artifacts.SENTENCES)
    )
    rows = table.select(
        [
            "output_id",
            "paraphrase_tokens",
            "paraphrase_text",
            "aligned_start",
            "aligned_end",
            "aligner_score",
            "source_tokens",
            "source_start",
            "source_end",
        ]
    ).to_pylist()
    if not rows:
        raise InputError(augmented, None, "no outputs to annotate")
    picked = sorted(random.Random(seed).sample(range(len(rows)), min(n_items, len(rows))))
    task, key = [], []
    for n, i in enumerate(picked):
        r = rows[i]
        item_id = f"span{n:05d}"
        task.append(
            {
                "item_id": item_id,
                "source": highlight(r["source_tokens"], r["source_start"], r["source_end"]),
                "paraphrase": r["paraphrase_text"],
                "paraphrase_tokens_indexed": " ".join(f"{k}:{t}" for k, t in enumerate(r["paraphrase_tokens"])),
                "source_tokens": json.dumps(r["source_tokens"], ensure_ascii=False),
                "source_start": r["source_start"],
                "source_end": r["source_end"],
                "paraphrase_tokens": json.dumps(r["paraphrase_tokens"], ensure_ascii=False),
            }
        )
        key.append(
            {
                "item_id": item_id,
                "output_id": r["output_id"],
                "aligned_start": r["aligned_start"],
                "aligned_end": r["aligned_end"],
                "aligner_score": r["aligner_score"],
            }
        )
    files.write_csv(task, out_task, fields=TASK_COLUMNS)
    files.write_csv(key, out_key, fields=["item_id", "output_id", "aligned_start", "aligned_end", "aligner_score"])
    return {"items": len(task), "outputs": len(rows)}


def _read_csv(path: Path | str) -> list[tuple[int, dict[str, str]]]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return list(enumerate(csv.DictReader(handle), start=2))
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(path, None, f"not a readable CSV file ({exc})") from None


def read_task(path: Path | str) -> dict[str, dict[str, Any]]:
    """Item id -> source tokens, source span and paraphrase tokens."""
    items = {}
    for line, row in _read_csv(path):
        try:
            items[row["item_id"]] = {
                "source_tokens": json.loads(row["source_tokens"]),
                "source_span": (int(row["source_start"]), int(row["source_end"])),
                "target_tokens": json.loads(row["paraphrase_tokens"]),
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(path, line, f"not a span-task row ({exc})") from None
    return items


def _answer(row: dict[str, str], n_tokens: int, path: Path | str, line: int) -> Span:
    start, end = (row.get("target_start") or "").strip(), (row.get("target_end") or "").strip()
    if start.lower() in ("", "none") and end.lower() in ("", "none"):
        return None
    try:
        s, e = int(start), int(end)
    except ValueError:
        raise InputError(
            path, line, f"target_start/target_end must be token indices or both empty, got {start!r}, {end!r}"
        ) from None
    if not 0 <= s <= e < n_tokens:
        raise InputError(path, line, f"span [{s}, {e}] out of range for {n_tokens} paraphrase tokens")
    return (s, e)


def read_answers(results: Path | str, items: dict[str, dict[str, Any]]) -> dict[str, dict[str, Span]]:
    """Item id -> worker id -> answer (inclusive span, or None for 'no counterpart')."""
    answers: dict[str, dict[str, Span]] = {}
    for line, row in _read_csv(results):
        item, worker = row.get("item_id"), (row.get("worker_id") or "").strip()
        if item not in items:
            raise InputError(results, line, f"item {item!r} is not in the task")
        if not worker:
            raise InputError(results, line, "worker_id is empty")
        if worker in answers.get(item, {}):
            raise InputError(results, line, f"worker {worker!r} answered item {item!r} twice")
        answers.setdefault(item, {})[worker] = _answer(row, len(items[item]["target_tokens"]), results, line)
    if not answers:
        raise InputError(results, None, "no answers (expected columns item_id, worker_id, target_start, target_end)")
    return answers


def token_alpha(answers: dict[str, dict[str, Span]], items: dict[str, dict[str, Any]]) -> float | None:
    """Krippendorff's alpha (nominal) on token membership; None with fewer than two answers per item."""
    from nltk.metrics.agreement import AnnotationTask

    data = []
    for item, by_worker in answers.items():
        if len(by_worker) < 2:
            continue
        for worker, span in by_worker.items():
            for t in range(len(items[item]["target_tokens"])):
                inside = span is not None and span[0] <= t <= span[1]
                data.append((worker, f"{item}:{t}", int(inside)))
    return AnnotationTask(data=data).alpha() if data else None


def exact_agreement(answers: dict[str, dict[str, Span]]) -> dict[str, Any]:
    """Pairwise exact-span agreement and the all-agree rate over items with two or more answers."""
    agree = pairs = all_agree = multi = 0
    for by_worker in answers.values():
        spans = list(by_worker.values())
        if len(spans) < 2:
            continue
        multi += 1
        all_agree += len(set(spans)) == 1
        for a in range(len(spans)):
            for b in range(a + 1, len(spans)):
                pairs += 1
                agree += spans[a] == spans[b]
    return {
        "items_with_two_or_more_answers": multi,
        "pairwise_exact_agreement": agree / pairs if pairs else None,
        "all_agree_rate": all_agree / multi if multi else None,
    }


def majority(by_worker: dict[str, Span]) -> tuple[bool, Span]:
    """(has a strict majority, its answer)."""
    ((answer, count),) = Counter(by_worker.values()).most_common(1)
    return count * 2 > len(by_worker), answer


def _key_spans(key: Path | str) -> dict[str, Span]:
    spans = {}
    for line, row in _read_csv(key):
        try:
            s, e = row["aligned_start"], row["aligned_end"]
            spans[row["item_id"]] = (int(s), int(e)) if s not in ("", None) else None
        except (KeyError, ValueError) as exc:
            raise InputError(key, line, f"not a span-task key row ({exc})") from None
    return spans


def import_span_answers(
    results: Path | str, task: Path | str, key: Path | str, out_jsonl: Path | str, out_summary: Path | str
) -> dict[str, Any]:
    """Agreement, the majority answers as span-alignment JSONL, and the pipeline aligner scored against them."""
    items = read_task(task)
    answers = read_answers(results, items)
    system = _key_spans(key)
    instances, gold, pred, no_majority = [], [], [], 0
    output_of = {row["item_id"]: row.get("output_id") for _, row in _read_csv(key)}
    for item, by_worker in sorted(answers.items()):
        ok, span = majority(by_worker)
        if not ok:
            no_majority += 1
            continue
        info = items[item]
        instances.append(
            {
                "id": f"span-task:{output_of.get(item) or item}",
                "source_tokens": info["source_tokens"],
                "target_tokens": info["target_tokens"],
                "source_span": list(info["source_span"]),
                "target_span": list(span) if span is not None else None,
            }
        )
        if item in system:
            gold.append(span)
            pred.append(system[item])
    summary: dict[str, Any] = {
        "items_answered": len(answers),
        "answers": sum(len(v) for v in answers.values()),
        "workers": len({w for v in answers.values() for w in v}),
        **exact_agreement(answers),
        "krippendorff_alpha_tokens": token_alpha(answers, items),
        "instances": len(instances),
        "no_counterpart": sum(i["target_span"] is None for i in instances),
        "items_without_majority": no_majority,
        "aligner_vs_majority": span_metrics(gold, pred) if gold else None,
    }
    warnings: list[dict[str, Any]] = []
    if not instances:
        warn(warnings, "empty", "span-alignment task: no item has a majority answer, so no instance was written")
    alpha = summary["krippendorff_alpha_tokens"]
    if alpha is not None and alpha < LOW_ALPHA:
        warn(
            warnings,
            "degraded",
            f"span-alignment task: Krippendorff's alpha on tokens is {alpha:.2f} (< {LOW_ALPHA}): "
            "the majority answers are barely better than chance",
        )
    if summary["items_with_two_or_more_answers"] == 0:
        warn(warnings, "degraded", "span-alignment task: no item has two answers, so agreement is unknown")
    summary["warnings"] = warnings
    files.write_jsonl(instances, out_jsonl)
    files.write_json(summary, out_summary)
    return summary


def simulate_span_answers(
    task: Path | str, key: Path | str, out: Path | str, raters: int, seed: int = 0, agree: float = 0.7
) -> int:
    """Answers from simulated annotators (demo and tests only: no person marked these spans).

    Each rater gives the pipeline aligner's span with probability ``agree``; otherwise "no
    counterpart" (1 in 4) or the aligner's span moved by one token.
    """
    rng = random.Random(seed)
    items = read_task(task)
    system = _key_spans(key)
    rows = []
    for item, info in items.items():
        n = len(info["target_tokens"])
        for worker in range(raters):
            span = system.get(item)
            if rng.random() >= agree:
                if span is None or rng.random() < 0.25:
                    span = None if span is not None else (0, 0)
                else:
                    shift = rng.choice((-1, 1))
                    s, e = span[0] + shift, span[1] + shift
                    span = (s, e) if s >= 0 and e < n else span
            rows.append(
                {
                    "item_id": item,
                    "worker_id": f"sim{worker}",
                    "target_start": "" if span is None else span[0],
                    "target_end": "" if span is None else span[1],
                }
            )
    files.write_csv(rows, out, fields=["item_id", "worker_id", "target_start", "target_end"])
    return len(rows)
