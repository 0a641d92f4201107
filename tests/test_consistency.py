"""A stage's inputs must belong together: the expected iteration, each shard once, one run's seeds."""

import pytest
from conftest import output, seed, write_two_chains

from spanaug.cli.main import main
from spanaug.core import artifacts
from spanaug.core.config import ConstraintSettings
from spanaug.core.errors import ArtifactError
from spanaug.pipeline.constraints import expand_stage
from spanaug.pipeline.iterations import assemble, gather

SEEDS = [seed("s1", ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v")]


def chain_file(path, rows):
    artifacts.write_table(rows, path, artifacts.CHAIN)
    return path


def s1(iteration, sid="s1"):
    return output(sid, iteration, ["Abby", "purchased", "a", "car"], 1, 1, "Commerce_buy", "buy.v", "purchase")


def test_constraints_refuse_outputs_of_the_wrong_iteration(tmp_path):
    """Iteration 2 expands iteration 1's outputs: given iteration 2's, it says so."""
    chain = chain_file(tmp_path / "c.parquet", [s1(2)])
    with pytest.raises(ArtifactError, match=r"c\.parquet: holds iteration 2 where iteration 2's constraint"):
        expand_stage(chain, tmp_path / "r.parquet", 2, ConstraintSettings())
    assert not (tmp_path / "r.parquet").exists()
    assert expand_stage(chain, tmp_path / "r.parquet", 3, ConstraintSettings()) == 1


def test_constraints_refuse_a_chain_mixing_iterations(tmp_path):
    chain = chain_file(tmp_path / "c.parquet", [s1(1), s1(2, "s2")])
    with pytest.raises(ArtifactError, match="holds iteration 1, 2 where"):
        expand_stage(chain, tmp_path / "r.parquet", 2, ConstraintSettings())


def test_gather_refuses_shards_of_two_iterations_and_a_shard_twice(tmp_path):
    a = chain_file(tmp_path / "a.parquet", [s1(1)])
    b = chain_file(tmp_path / "b.parquet", [s1(2, "s2")])
    with pytest.raises(ArtifactError, match=r"b\.parquet: holds iteration 2 where .*a\.parquet holds iteration 1"):
        gather([a, b], tmp_path / "g.parquet", artifacts.CHAIN)
    with pytest.raises(ArtifactError, match=r"a\.parquet: seed 's1' is also in .*a\.parquet"):
        gather([a, a], tmp_path / "g.parquet", artifacts.CHAIN)
    assert not (tmp_path / "g.parquet").exists()
    c = chain_file(tmp_path / "c.parquet", [s1(1, "s3")])
    assert gather([a, c], tmp_path / "g.parquet", artifacts.CHAIN) == 2


def test_assemble_refuses_a_chain_twice_and_a_missing_iteration(tmp_path, capsys):
    one = chain_file(tmp_path / "i1.parquet", [s1(1)])
    two = chain_file(tmp_path / "i2.parquet", [s1(2)])
    three = chain_file(tmp_path / "i3.parquet", [s1(3)])
    out = tmp_path / "aug.parquet"
    with pytest.raises(ArtifactError, match=r"output 's1#1' is also in .*i1\.parquet"):
        assemble([one, two, one], out)
    with pytest.raises(ArtifactError, match="iteration 2 is missing"):
        assemble([one, three], out)
    assert not out.exists()
    # Through the command: one line, exit 2.
    assert main(["assemble", "--inputs", str(one), str(one), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanaug: error: ") and "given twice" in err and len(err.strip().splitlines()) == 1
    assert assemble([one, two, three], out) == 3


@pytest.mark.parametrize("command", ["filter", "chains", "card"])
def test_another_runs_seeds_are_refused(tmp_path, command):
    """Outputs of seeds not among the given seeds: the seeds are another run's."""
    run = write_two_chains(tmp_path)
    other = tmp_path / "other_seeds.parquet"
    artifacts.write_table([seed("x9", ["a", "b"], 0, 0, "F", "a.n")], other, artifacts.SENTENCES)
    aug = run / "augmented.parquet"
    with pytest.raises(ArtifactError, match=r"augmented\.parquet: 4 output\(s\) of seeds not in .*other_seeds"):
        if command == "filter":
            from spanaug.evaluation.filtering import filter_stage

            filter_stage(aug, other, tmp_path / "filtering")
        elif command == "chains":
            from spanaug.report.chains import chains_page

            chains_page(aug, other, 2)
        else:
            from spanaug.downstream.card import write_card

            write_card(aug, other, tmp_path / "release", {"run_name": "t"})
    assert not (tmp_path / "release" / "data" / "seeds.parquet").exists()


def shards_of(tmp_path, seeds, n, name="shard"):
    from spanaug.pipeline.iterations import init_shards

    path = tmp_path / f"{name}-seeds.parquet"
    artifacts.write_table(seeds, path, artifacts.SENTENCES, {"run": artifacts.run_id(s["sentence_id"] for s in seeds)})
    shards = [tmp_path / f"{name}{j}.parquet" for j in range(n)]
    init_shards(path, shards)
    return shards


SIX = [seed(f"s{n}", ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v") for n in range(6)]


def test_every_artifact_records_its_run_stage_iteration_and_shard(tmp_path):
    shards = shards_of(tmp_path, SIX, 3)
    first = artifacts.read_provenance(shards[1])
    assert first == {"run": artifacts.run_id(f"s{n}" for n in range(6)), "stage": "chain", "iteration": 0,
                     "shard": 1, "n_shards": 3}  # fmt: skip
    expand_stage(shards[1], tmp_path / "r.parquet", 1, ConstraintSettings())
    assert artifacts.read_provenance(tmp_path / "r.parquet") == {**first, "stage": "requests", "iteration": 1}
    gather(shards, tmp_path / "g.parquet", artifacts.CHAIN)
    assert artifacts.read_provenance(tmp_path / "g.parquet") == {"run": first["run"], "stage": "chain", "iteration": 0}


def test_gather_refuses_a_missing_shard_and_another_runs_shard(tmp_path):
    shards = shards_of(tmp_path, SIX, 3)
    with pytest.raises(ArtifactError, match=r"shard\(s\) 1 of 3 missing"):
        gather([shards[0], shards[2]], tmp_path / "g.parquet", artifacts.CHAIN)
    other = shards_of(tmp_path, [seed("x1", ["a", "b"], 0, 0, "F", "a.n")], 3, name="other")
    with pytest.raises(ArtifactError, match=r"other1\.parquet: is from another run than"):
        gather([shards[0], other[1], shards[2]], tmp_path / "g.parquet", artifacts.CHAIN)
    assert not (tmp_path / "g.parquet").exists()


def test_constraints_read_the_iteration_from_the_metadata_too(tmp_path):
    """An empty shard has no rows to tell its iteration: its metadata still does."""
    empty = tmp_path / "empty.parquet"
    artifacts.write_table([], empty, artifacts.CHAIN, {"run": "r", "stage": "chain", "iteration": 2, "shard": 0})
    with pytest.raises(ArtifactError, match=r"empty\.parquet: is an output of iteration 2 where iteration 2's"):
        expand_stage(empty, tmp_path / "r.parquet", 2, ConstraintSettings())
