"""Where a trained aligner's null threshold is tuned, decided once for training and for the workflow.

Training (:func:`spanaug.pipeline.aligner.training.threshold_split`) follows the plan; the workflow
describes it in the report and the dataset card before any data is read. Torch-free, so the
workflow imports it without paying for torch.
"""

from __future__ import annotations

from typing import Literal

Plan = Literal["dev", "holdout", "untuned"]


def threshold_plan(has_dev: bool, share: float, n_pairs: int | None) -> Plan:
    """'dev' when dev instances are given; else 'holdout' (``share`` of the training sentence pairs
    held out) when ``share`` > 0 and there are two or more pairs to split (``n_pairs`` None: not
    known yet, as when the workflow plans a run); else 'untuned' (no threshold: every output aligns).
    """
    if has_dev:
        return "dev"
    if share > 0 and (n_pairs is None or n_pairs > 1):
        return "holdout"
    return "untuned"


def describe_plan(plan: Plan, dev: str | None, share: float) -> str:
    """The plan in words, for the report and the dataset card ('tuned on dev.jsonl')."""
    if plan == "dev":
        return f"tuned on {dev}"
    if plan == "holdout":
        return f"tuned on {share:.0%} of the training pairs, held out"
    return "not tuned: no dev file and threshold_holdout 0"
