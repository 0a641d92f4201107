"""The seed paper's Tables 1-2: FastAlign, DiscAlign and the span aligner on one held-out split."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files
from spanaug.core.aligner_settings import AlignerConfig, AlignerTrainSettings, BaselinesSection
from spanaug.evaluation.discalign import DiscAlignConfig, DiscAligner
from spanaug.evaluation.fastalign import fast_align
from spanaug.evaluation.word_alignment import Pair, gold_links, pairs_of, project_instances
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.word_aligned import AlignedPair, Link

log = logging.getLogger(__name__)


def run_comparison(
    instances: Sequence[Instance],
    gold_pairs: Sequence[AlignedPair],
    cfg: BaselinesSection,
    base_cfg: AlignerConfig,
    out_dir: Path | str,
    extra_text: Sequence[tuple[Sequence[str], Sequence[str]]] = (),
    device: str = "auto",
) -> list[dict[str, Any]]:
    """FastAlign, DiscAlign and the span aligner on one held-out split: soft/exact span scores + AER.

    Instances are split by sentence pair as in the ablations; DiscAlign and the span aligner learn
    from the training pairs only, FastAlign (unsupervised) from all text plus ``extra_text``.
    """
    from spanaug.core.metrics import span_metrics
    from spanaug.evaluation.aligner_ablation import plot_ablation, split_by_pair
    from spanaug.evaluation.word_alignment import alignment_scores
    from spanaug.pipeline.aligner.training import train_aligner

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train, dev, test = split_by_pair(instances, dev_share=cfg.dev_share, test_share=cfg.test_share, seed=cfg.seed)
    by_pair = gold_links(gold_pairs)
    test_pairs = pairs_of(test)
    held_out = set(test_pairs) | set(pairs_of(dev))
    gold_test = [by_pair[p] for p in test_pairs if p in by_pair]
    gold = [i.target_span for i in test]
    rows = []

    def record(system: str, preds: Sequence[tuple[int, int] | None], links: dict[Pair, set[Link]] | None) -> None:
        row: dict[str, Any] = {"system": system, **span_metrics(gold, preds)}
        if links is not None and gold_test:
            words = alignment_scores(gold_test, [links[p.key] for p in gold_test])
            row.update({"aer": words["aer"], "word_f1": words["f1"]})
        else:
            row.update({"aer": None, "word_f1": None})
        rows.append(row)
        log.info("%s: %s", system, row)

    all_pairs = list(dict.fromkeys(pairs_of(instances) + list(by_pair)))
    fa_links = fast_align(all_pairs, extra_text, cfg.fastalign)
    record("FastAlign", project_instances(test, fa_links), fa_links)

    disc = DiscAligner(DiscAlignConfig(encoder=base_cfg.encoder), device=device)
    disc.train(
        [p for key, p in by_pair.items() if key not in held_out], epochs=cfg.epochs, seed=cfg.seed, progress=False
    )
    dev_gold = [by_pair[p] for p in pairs_of(dev) if p in by_pair]
    if dev_gold:
        disc.tune_threshold(dev_gold)
    disc_links = disc.align(test_pairs)  # gold_test's pairs are among them
    record("DiscAlign", project_instances(test, disc_links), disc_links)

    aligner, _ = train_aligner(
        train, base_cfg, AlignerTrainSettings(epochs=cfg.epochs, seed=cfg.seed), dev=dev, device=device, progress=False
    )
    record("span aligner (ours)", [p for p, _ in aligner.predict(test)], None)

    files.write_csv(rows, out_dir / "comparison.csv")
    plot_ablation(rows, out_dir / "comparison.png", title="Span alignment: word aligners vs span aligner")
    files.write_json(
        {
            "train": len(train),
            "dev": len(dev),
            "test": len(test),
            "gold_test_pairs": len(gold_test),
            "encoder": base_cfg.encoder,
            "table": rows,
        },
        out_dir / "comparison.json",
    )
    return rows
