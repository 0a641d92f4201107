"""Fuzzing with "wrong but well-formed" inputs: real artifacts of another run, iteration or shard.

Each case builds two real runs (their seeds, iteration-0 shards and iteration-1 requests made by the
stages themselves), then hands a stage either the right files or the right files with one swapped
for another run's, another iteration's or a repeated or missing shard. The right files must be
accepted; every wrong pick must be refused with an error naming a file it was given.
"""

import os
import tempfile
from pathlib import Path

import pytest
from conftest import seed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanaug.core import artifacts
from spanaug.core.config import ConstraintSettings
from spanaug.core.errors import ArtifactError
from spanaug.pipeline.constraints import expand_stage
from spanaug.pipeline.iterations import gather, init_shards

EXAMPLES = int(os.environ.get("SPANAUG_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=max(5, EXAMPLES // 2),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

WORDS = ["Abby", "bought", "sold", "a", "car", "house", "yesterday"]


def make_run(root: Path, name: str, ids: list[str], n_shards: int) -> dict[str, list[Path]]:
    """A run's iteration-0 shards and their iteration-1 requests, as the stages write them."""
    rows = [seed(sid, ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v") for sid in ids]
    seeds = root / f"{name}-seeds.parquet"
    artifacts.write_table(rows, seeds, artifacts.SENTENCES, {"run": artifacts.run_id(ids), "stage": "seeds"})
    chain = [root / f"{name}-chain{j}.parquet" for j in range(n_shards)]
    init_shards(seeds, chain)
    requests = [root / f"{name}-requests{j}.parquet" for j in range(n_shards)]
    for c, r in zip(chain, requests):
        expand_stage(c, r, 1, ConstraintSettings())
    return {"chain": chain, "requests": requests}


@st.composite
def two_runs(draw: st.DrawFn) -> tuple[list[str], list[str], int]:
    ids = st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=4), min_size=1, max_size=8, unique=True)
    mine, theirs = draw(ids), draw(ids)
    if set(mine) == set(theirs):
        theirs = [*theirs, "zz-other"]
    return mine, theirs, draw(st.integers(2, 4))


def later_iteration(shard: Path, out: Path) -> Path:
    """The same shard as the next iteration's output would be: its rows and metadata one iteration on."""
    rows = artifacts.read_table(shard, artifacts.CHAIN).to_pylist()
    for row in rows:
        row.update(iteration=1, constraints=["x"])
    provenance = artifacts.derived(shard, "chain", iteration=1)
    artifacts.write_table(rows, out, artifacts.CHAIN, provenance)
    return out


WRONG = st.sampled_from(["other_run", "other_iteration", "repeated", "missing"])


def refused(paths: list[Path], run) -> None:
    with pytest.raises(ArtifactError) as info:
        run()
    assert any(str(p) in str(info.value) for p in paths), info.value


@FUZZ
@given(runs=two_runs(), wrong=WRONG, which=st.integers(0, 3))
def test_gather_accepts_its_shards_and_refuses_a_wrong_pick(runs, wrong, which):
    mine, theirs, n = runs
    with tempfile.TemporaryDirectory(prefix="spanaug-fuzz-") as tmp:
        root = Path(tmp)
        a, b = make_run(root, "a", mine, n), make_run(root, "b", theirs, n)
        out = root / "gathered.parquet"
        assert gather(a["chain"], out, artifacts.CHAIN) == len(mine)  # the right files: accepted
        j = which % n
        picks = list(a["chain"])
        if wrong == "other_run":
            picks[j] = b["chain"][j]
        elif wrong == "other_iteration":
            picks[j] = later_iteration(a["chain"][j], root / "later.parquet")
        elif wrong == "repeated":
            picks[j] = picks[(j + 1) % n]
        else:
            del picks[j]
        out.unlink()
        refused(picks, lambda: gather(picks, out, artifacts.CHAIN))
        assert not out.exists()


@FUZZ
@given(runs=two_runs(), which=st.integers(0, 3), iteration=st.integers(1, 4))
def test_constraints_accept_the_previous_iteration_only(runs, which, iteration):
    mine, _, n = runs
    with tempfile.TemporaryDirectory(prefix="spanaug-fuzz-") as tmp:
        root = Path(tmp)
        shard = make_run(root, "a", mine, n)["chain"][which % n]  # iteration 0
        out = root / "r.parquet"
        if iteration == 1:
            expand_stage(shard, out, iteration, ConstraintSettings())
            assert artifacts.read_provenance(out)["iteration"] == 1
        else:
            refused([shard], lambda: expand_stage(shard, out, iteration, ConstraintSettings()))
            assert not out.exists()
