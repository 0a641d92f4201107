"""Where the aligner's null threshold is tuned: one decision for training and for the workflow's texts."""

import pytest

from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.threshold_plan import describe_plan, threshold_plan
from spanaug.pipeline.aligner.training import threshold_split


def _pairs(n):
    return [Instance(f"i{k}", ["a", f"w{k}"], ["b", f"w{k}"], (1, 1), (1, 1)) for k in range(n)]


@pytest.mark.parametrize(
    ("has_dev", "share", "n_pairs", "plan"),
    [
        (True, 0.1, 50, "dev"),
        (True, 0.0, None, "dev"),
        (False, 0.1, 50, "holdout"),
        (False, 0.1, None, "holdout"),  # the workflow, before any data is read
        (False, 0.1, 1, "untuned"),  # one pair cannot be split
        (False, 0.0, 50, "untuned"),
    ],
)
def test_the_plan(has_dev, share, n_pairs, plan):
    assert threshold_plan(has_dev, share, n_pairs) == plan


@pytest.mark.parametrize(("dev", "share", "n"), [(True, 0.2, 10), (False, 0.2, 10), (False, 0.2, 1), (False, 0.0, 10)])
def test_training_follows_the_plan(dev, share, n):
    train = _pairs(n)
    dev_set = _pairs(2) if dev else None
    kept, _, held, source = threshold_split(train, [], dev_set, share, seed=0)
    plan = threshold_plan(dev, share, n)
    assert (plan == "holdout") == bool(held) and len(kept) + len(held) == n
    assert source == {"dev": "dev instances", "untuned": "untuned"}.get(plan, source)
    assert plan != "holdout" or source.startswith(f"held-out {share:.0%}")


def test_the_workflows_words_for_each_plan():
    assert describe_plan("dev", "dev.jsonl", 0.1) == "tuned on dev.jsonl"
    assert describe_plan("holdout", None, 0.1) == "tuned on 10% of the training pairs, held out"
    assert describe_plan("untuned", None, 0.0).startswith("not tuned")
