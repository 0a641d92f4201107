"""scripts/rehearsal.py's counting: SLURM jobs in a dry run's listing, rules of benchmark files,
and the jobs a resumed run did again (the rehearsal itself is `make rehearsal`, not a test)."""

import importlib.util
import os
from types import SimpleNamespace

from conftest import REPO

spec = importlib.util.spec_from_file_location("rehearsal", REPO / "scripts" / "rehearsal.py")
rehearsal = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rehearsal)

# What a dry run prints, cut down: a SLURM rule, local rules, a report table page, a group job of a
# shard's iteration (its two rules indented under it) and another shard's ungrouped GPU rule.
LISTING = """\
rule import_corpus:
    output: results/x/data/sentences.parquet
rule shard_seeds:
    output: results/x/iterations/iter0/shard000.chain.parquet
rule report_table_data_import_stats:
    output: results/x/data/import_stats.html
rule expand_constraints:
    wildcards: i=1, j=000
[Wed Nov 25 17:43:40 2026] Group job iter1 (jobs in lexicogr. order):

    rule align:
        wildcards: i=1, j=000
    rule paraphrase:
        wildcards: i=1, j=000
rule paraphrase:
    wildcards: i=1, j=001
rule select_best:
    wildcards: i=1, j=000
"""


def test_local_rules_are_read_from_the_rule_files():
    local = rehearsal.local_rules()
    head = {"shard_seeds", "expand_constraints", "select_best", "gather_iteration", "assemble", "report_summary", "all"}
    assert head <= local
    assert not {"paraphrase", "align", "train_aligner", "align_ablation"} & local


def test_a_group_job_counts_once_and_local_rules_not_at_all():
    assert rehearsal.count_submissions(LISTING) == {"all": 3, "iterations": 2}


def test_benchmark_files_name_their_rule(tmp_path):
    root = tmp_path / "benchmarks"
    assert rehearsal.rule_of(root / "iter3" / "paraphrase.shard004.tsv", root) == "paraphrase"
    assert rehearsal.rule_of(root / "train_aligner.tsv", root) == "train_aligner"
    assert rehearsal.rule_of(root / "report" / "data_import_stats.tsv", root) == "report_table"


def test_only_recorded_jobs_rewritten_after_the_kill_count_as_redone(tmp_path, monkeypatch):
    import base64
    import json

    monkeypatch.setattr(rehearsal, "REPO", tmp_path)
    res = tmp_path / "results" / "r"
    bench = res / "benchmarks" / "iter1"
    bench.mkdir(parents=True)
    for name in ("align.shard000.tsv", "align.shard001.tsv", "select_best.shard001.tsv"):
        (bench / name).write_text("s\n1.0\n")
    # the head had recorded align of both shards (a record per output, naming the job's log), not
    # select_best of shard 1: it was killed while it touched and recorded that group job
    metadata = tmp_path / ".snakemake" / "metadata"
    metadata.mkdir(parents=True)
    for shard in ("000", "001"):
        out = f"results/r/iterations/iter1/shard{shard}.aligned.parquet"
        record = {"rule": "align", "log": [f"results/r/logs/iter1/align.shard{shard}.log"], "incomplete": False}
        (metadata / base64.urlsafe_b64encode(out.encode()).decode()).write_text(json.dumps(record))
    faults = rehearsal.Faults(res, SimpleNamespace(iterations=10, shards=2), [], tmp_path)
    faults.killed_at, faults.recorded = rehearsal.benchmark_times(res), rehearsal.recorded_logs()
    (bench / "select_best.shard000.tsv").write_text("s\n1.0\n")  # never ran before the kill: not redone
    assert faults.redone() == [] and faults.unrecorded() == []
    os.utime(bench / "align.shard001.tsv", (1, 1))  # recorded, and it ran again after the kill
    os.utime(bench / "select_best.shard001.tsv", (1, 1))  # finished but unrecorded: ran again
    assert faults.redone() == [str(bench / "align.shard001.tsv")]
    assert faults.unrecorded() == [str(bench / "select_best.shard001.tsv")]


def test_the_critical_path_is_read_from_benchmark_times(tmp_path):
    # a benchmark file is written when its job ends: start = mtime - its seconds
    bench = tmp_path / "benchmarks"
    (bench / "report").mkdir(parents=True)
    for name, seconds, end in (
        ("train_aligner.tsv", 60, 1_000 + 180),  # started 2 min in
        ("report/data_import_stats.tsv", 6, 1_000 + 306),  # 5 min in
        ("align_ablation.tsv", 30, 1_000 + 270),  # 4 min in: the first of priority 0
        ("import_corpus.tsv", 6, 1_000 + 6),
    ):
        (bench / name).write_text(f"s\th:m:s\n{seconds}\t0:00:{seconds % 60:02d}\n")
        os.utime(bench / name, (end, end))
    assert rehearsal.priorities()["train_aligner"] > 0 and "align_ablation" not in rehearsal.priorities()
    assert rehearsal.critical_path(tmp_path, 1_000) == (
        "train_aligner started at 2.0 min; the first job of priority 0 (align_ablation) at 4.0 min"
    )


def test_a_quick_look_seeds_the_first_blocks(tmp_path, monkeypatch):
    conll = tmp_path / "dev.conll"
    conll.write_text("".join(f"1\tw{i}\n\n" for i in range(5)))
    monkeypatch.setattr(rehearsal, "CONLL", conll)
    monkeypatch.setattr(rehearsal, "MODELS", tmp_path)
    assert rehearsal.seed_corpus(3).read_text() == "1\tw0\n\n1\tw1\n\n1\tw2\n"
    assert rehearsal.seed_corpus(0) == conll


def test_the_rehearsal_config_names_nothing_missing_but_the_stand_ins(monkeypatch, capsys):
    # config/rehearsal.yaml goes on top of config/config.yaml: a setting added to the production
    # config must not point the rehearsal at files a fresh clone lacks (word_aligned's data/ once did)
    import pytest

    from spanaug.cli.main import main

    if not rehearsal.CONLL.is_file():
        pytest.skip("no shared data beside the checkout")
    monkeypatch.chdir(REPO)
    status = main(["config", "check", "--configfile", *rehearsal.CONFIGS])
    printed = capsys.readouterr().err
    if status == 0:
        return
    # It may fail only for what the rehearsal makes itself (its models), not for a contradiction
    # (argid's section once asked for frameid's split, which the rehearsal turns off).
    errors = [ln for ln in printed.splitlines() if ln.startswith("spanaug: error:")]
    assert len(errors) == 1 and errors[0].startswith("spanaug: error: the config names things that are missing"), (
        printed
    )
    problems = [ln for ln in printed.splitlines() if ln.startswith("  - ")]
    made = str(rehearsal.MODELS.relative_to(REPO))
    assert problems and all(made in ln for ln in problems), problems
