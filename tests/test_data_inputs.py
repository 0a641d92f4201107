"""Every file a job reads is a Snakemake input: a changed data file reruns exactly the jobs that read it
and what depends on them, and a run without its data stops naming the missing files."""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE

pytestmark = pytest.mark.workflow


def _snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    cmd = [SNAKEMAKE, "-s", str(REPO / "workflow/Snakefile"), "--directory", str(workdir), *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def _reasons(printed: str) -> dict[str, set[str]]:
    """Rule -> the reasons a dry run gives for its jobs."""
    out: dict[str, set[str]] = {}
    for rule, block in re.findall(r"^ *(?:local)?rule (\w+):$(.*?)(?=^ *(?:local)?rule |\Z)", printed, re.M | re.S):
        out.setdefault(rule, set()).update(re.findall(r"reason: (.*)$", block, re.M))
    return out


@pytest.fixture
def finished_demo(tmp_path):
    """The demo config in a folder of its own, with a copy of its bitext, and every output the run
    makes present and newer than its inputs (empty stand-ins: a dry run reads no output), so that a
    dry run plans nothing until an input changes."""
    (tmp_path / "resources/demo").mkdir(parents=True)
    shutil.copy(REPO / "resources/demo/bitext.tsv", tmp_path / "resources/demo/bitext.tsv")
    (tmp_path / "resources/demo/fndata-demo").symlink_to(REPO / "resources/demo/fndata-demo")
    # Frame ID's and the statistics' lexicon: the demo corpus under a name of its own
    (tmp_path / "resources/demo/lexicon").symlink_to(REPO / "resources/demo/fndata-demo")
    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    demo["frameid"]["lexicon"] = demo["stats"]["lexicon"] = "resources/demo/lexicon"
    config = tmp_path / "demo.yaml"
    config.write_text(yaml.safe_dump(demo))
    summary = _snakemake(tmp_path, "--configfile", str(config), "--summary")
    assert summary.returncode == 0, summary.stderr[-3000:]
    outputs = [line.split("\t")[0] for line in summary.stdout.splitlines()[1:] if "\t" in line]
    assert len(outputs) > 100
    later = time.time() + 60
    for name in outputs:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if Path(name).suffix:  # directory outputs (models/paraphraser, models/aligner) have no suffix
            path.touch()
        else:
            path.mkdir(exist_ok=True)
        os.utime(path, (later, later))
    planned = _snakemake(tmp_path, "--configfile", str(config), "-n")
    assert "Nothing to be done" in planned.stdout, planned.stdout[-3000:]
    return tmp_path, config


def test_a_changed_bitext_retrains_both_models_and_realigns(finished_demo):
    work, config = finished_demo
    bitext = work / "resources/demo/bitext.tsv"
    bitext.write_text(bitext.read_text() + "A new source line .\tA fresh paraphrase line .\n")
    later = time.time() + 120
    os.utime(bitext, (later, later))
    proc = _snakemake(work, "--configfile", str(config), "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    reasons = _reasons(proc.stdout)
    # The two jobs that read the bitext rerun because of it, and only they.
    direct = {rule for rule, why in reasons.items() if any("resources/demo/bitext.tsv" in r for r in why)}
    assert direct == {"make_alignment_instances", "train_paraphraser"}
    # What depends on them: the aligner retrains, every shard of every iteration is paraphrased and
    # realigned, and the evaluations of the made instances rerun.
    demo = yaml.safe_load(config.read_text())
    shards = demo["iterations"] * demo["n_shards"]
    counts = {rule: len(re.findall(rf"^ *(?:local)?rule {rule}:$", proc.stdout, re.M)) for rule in reasons}
    assert counts["train_aligner"] == 1 and counts["paraphrase"] == counts["align"] == shards
    assert {"align_ablation", "compare_aligners", "assemble", "export_card"} <= set(reasons)
    # What does not read it stays: the corpus, the seeds and the Frame ID split.
    assert not {"import_corpus", "select_seeds", "shard_seeds", "frameid_split", "frameid_baseline"} & set(reasons)


def test_a_replaced_lexicon_reruns_frame_id_and_the_statistics_alone(finished_demo):
    """A lexicon (a FrameNet release directory here) is an input of the jobs that read it: replacing it
    (a new entry in its folder) reruns Frame ID's points and the statistics, not the pipeline."""
    work, config = finished_demo
    lexicon = work / "resources/demo/lexicon"
    lexicon.unlink()
    shutil.copytree(REPO / "resources/demo/fndata-demo", lexicon, symlinks=True)
    later = time.time() + 120
    os.utime(lexicon, (later, later))
    proc = _snakemake(work, "--configfile", str(config), "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    reasons = _reasons(proc.stdout)
    direct = {rule for rule, why in reasons.items() if any("resources/demo/lexicon" in r for r in why)}
    assert direct == {"frameid_point", "intrinsic_stats"}
    assert not {"import_corpus", "train_paraphraser", "train_aligner", "align", "frameid_baseline"} & set(reasons)


def test_the_production_config_without_its_data_names_the_missing_files(tmp_path):
    """Its data are absent: the preflight lists them first; planned on anyway (SPANAUG_PREFLIGHT=warn),
    Snakemake stops as it does on a missing input, naming the files."""
    (tmp_path / "config").symlink_to(REPO / "config")
    stopped = _snakemake(tmp_path, "-n", "--profile", str(REPO / "profiles/slurm"))
    out = stopped.stdout + stopped.stderr
    assert stopped.returncode != 0 and "spanaug: error: the config names things that are missing" in out
    assert "  - aligner.train.word_aligned: data/edinburgh-train.gold.json: no such file" in out
    warned = _snakemake(tmp_path, "-n", "--profile", str(REPO / "profiles/slurm"), env={"SPANAUG_PREFLIGHT": "warn"})
    out = warned.stdout + warned.stderr
    assert warned.returncode != 0 and "MissingInputException" in out
    preflight, snakemake = out.split("MissingInputException")
    assert "the run would stop" in preflight and "data/" in snakemake
    affected = snakemake.split("affected files:\n")[1]
    missing = re.findall(r"^ {8}(\S+)$", affected.split("\n\n")[0].split("Using ")[0], re.M)
    assert missing and all(f" {name}: no such" in preflight for name in missing)


def test_every_data_file_of_the_production_config_is_an_input(production_dry_run):
    """Each path under data/ that config/config.yaml names is an input of a planned job."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())

    def paths(value):
        if isinstance(value, dict):
            return [p for v in value.values() for p in paths(v)]
        if isinstance(value, list):
            return [p for v in value for p in paths(v)]
        return [value] if isinstance(value, str) and value.startswith("data/") else []

    named = set(paths(config))
    inputs = set()
    for line in re.findall(r"^\s+input: (.*)$", production_dry_run.stdout, re.M):
        inputs.update(part.strip() for part in line.split(","))
    assert len(named) == 8 and named <= inputs, sorted(named - inputs)
