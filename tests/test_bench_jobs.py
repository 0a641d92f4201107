"""scripts/bench_jobs.py runs one shard's iteration job as its rules do: paraphrase, then align on
its output, each command in a fresh process."""

import importlib.util
import subprocess
import sys

import pytest
import yaml
from conftest import REPO, shared_file

from spanaug.demo.standins import TINY

pytestmark = pytest.mark.integration

spec = importlib.util.spec_from_file_location("bench_jobs", REPO / "scripts" / "bench_jobs.py")
bench_jobs = importlib.util.module_from_spec(spec)
sys.modules["bench_jobs"] = bench_jobs  # as an import does: its dataclasses look their module up
spec.loader.exec_module(bench_jobs)


def test_the_commands_of_an_iteration_job_run_in_turn_and_are_timed():
    shared_file("fn1.7.dev.syntaxnet.conll")  # skips without the shared data
    tiny_encoder = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    seconds = bench_jobs.job_seconds(
        "cpu", sentences=2, repeats=1, max_new=2, models={"size": TINY, "encoder_shape": tiny_encoder}
    )
    assert list(seconds) == ["paraphrase", "align"]
    assert all(s > 0 for s in seconds.values())


def test_a_shards_chain_job_runs_every_iteration_in_one_timed_process():
    shared_file("fn1.7.dev.syntaxnet.conll")
    tiny_encoder = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    chain = bench_jobs.chain_seconds(
        "cpu", sentences=2, repeats=1, max_new=2, models={"size": TINY, "encoder_shape": tiny_encoder}
    )
    assert chain.first > 0 and chain.each_later >= 0 and 0 <= chain.going_on <= 2
    assert chain.over(10) == pytest.approx(chain.first + 9 * chain.each_later)
    assert bench_jobs.CHAIN_SNAKEMAKE_STARTS == 2  # iterate_shard is one rule: no group


def test_the_timed_imports_are_the_commands_libraries():
    """The import floor loads what the commands load before their work: the model classes of the
    paraphraser and the cross aligner's encoder, through the CLI."""
    wanted = ["spanaug.cli.main", "transformers.models.t5.modeling_t5", "transformers.models.bert.modeling_bert"]
    code = bench_jobs.LIBRARY_IMPORTS + f"\nimport sys\nprint([m for m in {wanted!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == repr(wanted)
    assert bench_jobs.library_import_seconds(repeats=1) > 0


def test_a_snakemake_start_reads_this_workflow():
    seconds = bench_jobs.snakemake_start_seconds(repeats=1)
    assert seconds is not None and seconds > 0


def test_without_snakemake_its_start_ups_are_not_measured(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "snakemake" else real(name, *a))
    assert bench_jobs.snakemake_start_seconds() is None
    assert bench_jobs.group_start_seconds() is None


def test_the_benchmarked_job_is_the_profiles_group(tmp_path):
    """The commands timed, and the Snakemake start-ups counted, are those of profiles/slurm's grouped
    job: its rules, in the order they run, each in a Snakemake of its own beside the group's."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    grouped = [entry.split("=")[0] for entry in profile["groups"]]
    commands = bench_jobs.commands(tmp_path, tmp_path / "p", tmp_path / "a", "cpu", 2)
    assert list(commands) == grouped
    assert [cmd[3] for cmd in commands.values()] == ["paraphrase", "align"]  # the spanaug subcommands
    assert 1 + len(grouped) == bench_jobs.SNAKEMAKE_STARTS_PER_JOB
