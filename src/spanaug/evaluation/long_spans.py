"""Long spans: both aligner kinds on held-out phrase pairs of several words, by length.

Frame elements are long (on the shared FN1.7 dev: median 2 tokens, 39% of 3 or more, the 90th
percentile 11), where triggers are mostly one word, and the span instances the aligner trains on
have 1 to 4. Here the word-aligned corpora's sentence pairs are split by pair (as ``align systems``
does); the test spans are every consistent phrase pair of ``min_len``..``max_len`` source words of
the test pairs (a seeded sample of ``per_pair`` per pair), copied or rewritten, which is what an FE
becomes in a paraphrase. Each kind is trained twice on the training pairs:

- ``spans``: the corpus's span instances alone (what a trigger aligner trains on);
- ``+phrases``: and every consistent phrase pair of the training pairs up to ``max_len`` words,
  copies included (``aligner.train.phrase_pairs`` with ``phrase_keep_identical`` and
  ``phrase_max_len``): the long-span fix.

Scores are per length bin and for copied and rewritten spans: soft and exact F1, ECE and the null
share (gold spans are never null here); and, beside them, on the held-out span instances themselves
(trigger-like, 10% null), to see what the long-span data costs there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files
from spanaug.core.aligner_settings import AlignerConfig, LongSpanSettings
from spanaug.core.metrics import prediction_metrics
from spanaug.evaluation.aligner_ablation import split_by_pair
from spanaug.pipeline.aligner.instances import Instance, pair_key
from spanaug.pipeline.aligner.kinds import Recipe, train_kind
from spanaug.pipeline.aligner.training_data import consistent_phrases, pairs_for, phrase_pair_instances
from spanaug.pipeline.aligner.word_aligned import AlignedPair

log = logging.getLogger(__name__)

#: Source-length bins of the table (inclusive), the last open to ``max_len``.
BINS = ((1, 2), (3, 3), (4, 5), (6, 8), (9, 12))


def long_span_tests(pairs: Iterable[AlignedPair], setup: LongSpanSettings, k: int) -> list[Instance]:
    """Every consistent phrase pair of ``min_len``..``max_len`` source words, copies included, at most
    ``per_pair`` per sentence pair (a seeded sample), its target no wider than the aligner's window."""
    import random

    rng = random.Random(setup.seed)
    out = []
    for pair in pairs:
        found = [
            Instance(f"long:{pair.id}:{s}-{e}", pair.source, pair.target, (s, e), (a, b))
            for (s, e), (a, b) in consistent_phrases(pair, setup.max_len, setup.max_len + k)
            if e - s + 1 >= setup.min_len and abs((b - a) - (e - s)) <= k
        ]
        if setup.per_pair is not None and len(found) > setup.per_pair:
            found = rng.sample(found, setup.per_pair)
        out.extend(found)
    return out


def copied(inst: Instance) -> bool:
    """Whether the target span is the source span's words (case aside): a kept FE."""
    assert inst.target_span is not None
    s, e = inst.source_span
    a, b = inst.target_span
    return [t.lower() for t in inst.source_tokens[s : e + 1]] == [t.lower() for t in inst.target_tokens[a : b + 1]]


def run_long_spans(
    instances: Sequence[Instance],
    pairs: Sequence[AlignedPair],
    setup: LongSpanSettings,
    base: AlignerConfig,
    kinds: Sequence[str],
    out_dir: Path | str,
    device: str | None = "auto",
) -> list[dict[str, Any]]:
    """Train each kind (on ``base``'s encoder and k) with and without long phrase pairs; score every
    one on the long test spans. Writes ``long_spans.csv`` (one row per system and bin) and ``long_spans.json``."""
    out_dir = Path(out_dir)
    train, dev, test = split_by_pair(instances, dev_share=setup.dev_share, test_share=setup.test_share, seed=setup.seed)
    tests = long_span_tests(pairs_for(pairs, {pair_key(i) for i in test}), setup, base.k)
    phrases = phrase_pair_instances(
        pairs_for(pairs, {pair_key(i) for i in train}),
        max_phrase=setup.max_len,
        max_target_width=setup.max_len + base.k,
        keep_identical=True,
        max_per_pair=setup.per_pair,
        seed=setup.seed,
    )
    log.info(
        "long spans: %d train, %d dev instances; %d phrase pairs; %d test spans",
        len(train),
        len(dev),
        len(phrases),
        len(tests),
    )
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        for training, extra in (("spans", []), ("+phrases", phrases)):
            started = time.perf_counter()
            aligner = _train(kind, train, dev, extra, setup, base, device)
            train_s = round(time.perf_counter() - started, 1)
            scored = aligner.predict(tests)
            # The held-out span instances too: what the long-span data costs or gains on trigger-like spans.
            spans = prediction_metrics([i.target_span for i in test], aligner.predict(test))
            for row in [_row("span instances", len(test), spans)] + score_by_bin(tests, scored, setup):
                rows.append({"kind": kind, "training": training, **row, "train_s": train_s})
            log.info("%s %s: %s", kind, training, rows[-1])
    files.write_csv(rows, out_dir / "long_spans.csv")
    files.write_json(
        {"train": len(train), "dev": len(dev), "test_spans": len(tests), "phrase_pairs": len(phrases), "rows": rows},
        out_dir / "long_spans.json",
    )
    return rows


def score_by_bin(
    tests: Sequence[Instance], scored: Sequence[tuple[tuple[int, int] | None, float]], setup: LongSpanSettings
) -> list[dict[str, Any]]:
    """Metrics over all test spans, per length bin, and for copied and rewritten spans."""
    groups: list[tuple[str, list[int]]] = [("all", list(range(len(tests))))]
    for lo, hi in BINS:
        if hi < setup.min_len or lo > setup.max_len:
            continue
        lo, hi = max(lo, setup.min_len), min(hi, setup.max_len)
        idx = [n for n, i in enumerate(tests) if lo <= i.source_span[1] - i.source_span[0] + 1 <= hi]
        groups.append((f"{lo}" if lo == hi else f"{lo}-{hi}", idx))
    groups += [
        ("copied", [n for n, i in enumerate(tests) if copied(i)]),
        ("rewritten", [n for n, i in enumerate(tests) if not copied(i)]),
    ]
    out = []
    for name, idx in groups:
        if not idx:
            continue
        m = prediction_metrics([tests[n].target_span for n in idx], [scored[n] for n in idx])
        out.append(_row(name, len(idx), m))
    return out


def _row(name: str, n: int, m: dict[str, float]) -> dict[str, Any]:
    return {
        "spans": name,
        "n": n,
        "soft_f1": round(m["soft_f1"], 4),
        "exact_f1": round(m["exact_f1"], 4),
        "ece": round(m["ece"], 4),
        "pred_null_share": round(m["pred_null_share"], 4),
        "gold_null_share": round(m["gold_null_share"], 4),
    }


def _train(
    kind: str,
    train: Sequence[Instance],
    dev: Sequence[Instance],
    extra: Sequence[Instance],
    setup: LongSpanSettings,
    base: AlignerConfig,
    device: str | None,
) -> Any:
    """One aligner of ``kind``, its threshold (and the cross kind's epoch and calibration) on ``dev``."""
    recipe = Recipe.of(base.encoder, base.k, epochs=setup.epochs, seed=setup.seed, cross=setup.cross)
    return train_kind(kind, recipe, train, dev, device=device, extra=extra)[0]


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: one line per system and span group."""
    cols = (
        "kind",
        "training",
        "spans",
        "n",
        "soft_f1",
        "exact_f1",
        "ece",
        "pred_null_share",
        "gold_null_share",
        "train_s",
    )
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)
