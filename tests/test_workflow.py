"""The Snakemake DAG end to end on the demo corpus with tiny models: outputs, resume, shard rebuild."""

import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, production_config

from spanaug.core import artifacts

pytestmark = pytest.mark.workflow
#: The demo's results folder in these tests: a space, a quote and a command substitution.
RESULTS_DIR = "my results $(touch INJECTED) it's"


def _run(workdir, config, *args, check=True, env=None):
    # As the README runs it: no virtual environment on PATH (rules find the spanaug beside Snakemake).
    env = {**os.environ, **(env or {})}
    configs = [str(c) for c in (config if isinstance(config, list) else [config])]
    cmd = [
        SNAKEMAKE,
        "-s",
        str(REPO / "workflow" / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        *configs,
        "--cores",
        "2",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout[-3000:] + proc.stderr[-6000:])
    return proc


def _arguments_under(printed: str, prefix: str) -> list[str]:
    """The arguments of the printed shell commands that start with ``prefix`` (a path with a space, a
    quote and ``$(...)`` in it stays one argument only when the rule quotes it)."""
    args = []
    # A command may span lines: a quoted argument can hold a newline (paraphraser.prompt's).
    for command in re.findall(r"spanaug (.*?) > ", printed, re.S):
        args += [a for a in shlex.split(command) if a.startswith(prefix)]
    return args


def _job_counts(output):
    """Rule -> job count from a dry-run's 'Job stats' table."""
    table = output.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_encoder, tiny_paraphraser):
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    work = tmp_path_factory.mktemp("wf")
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    config["run_name"] = "t"
    config["iterations"] = 2
    # Paths a shell would split or run: each must reach its command as one argument (rules quote them).
    config["results_dir"] = RESULTS_DIR
    corpus = work / "the corpus $(touch INJECTED) it's"
    corpus.symlink_to(REPO / "resources/demo/fndata-demo")  # still the bundled demo corpus
    config["data"]["inputs"] = [str(corpus)]
    config["stats"]["lexicon"] = str(REPO / "resources/demo/fndata-demo")
    config["paraphraser"].update(model=tiny_paraphraser, train=None, beam_size=3, return_top=2, max_new_tokens=12)
    config["aligner"]["encoder"] = tiny_encoder
    # The tiny random encoder learns nothing, so a null threshold tuned on its few held-out pairs may
    # answer "no alignment" for every output (it did on one machine), and nothing downstream would
    # have an aligned span to use. Untuned, every output aligns; the warnings page must then say so.
    config["aligner"]["train"].update(bitext=str(REPO / "resources/demo/bitext.tsv"), epochs=2, threshold_holdout=0)
    config["frameid"].update(
        encoder=tiny_encoder, lexicon=str(REPO / "resources/demo/fndata-demo"), seeds=[0], epochs=2
    )
    config["argid"].update(encoder=tiny_encoder, framenet=str(REPO / "resources/demo/fndata-demo"), epochs=1)
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    _run(work, path)
    assert not list(work.rglob("INJECTED")) and not Path("INJECTED").exists()  # no substitution ran
    return work, path, work / RESULTS_DIR / "t"


def test_outputs_and_schema(run):
    _, _, res = run
    table = artifacts.read_table(res / "augmented.parquet", artifacts.AUGMENTED)
    assert table.num_rows > 0
    assert set(table.column("iteration").to_pylist()) <= {1, 2}
    for name in [
        "seed_id",
        "frame",
        "iteration",
        "paraphrase_text",
        "paraphrase_tokens",
        "aligned_start",
        "aligned_end",
        "aligned_text",
        "paraphrase_score",
        "aligner_score",
        "constraints",
    ]:
        assert name in table.column_names
    row = table.to_pylist()[0]
    assert row["constraints"] and row["seed_trigger"] in row["constraints"]
    # frame_elements.mode align (demo.yaml): every output of an annotated seed carries its FEs, placed or
    # LOST (the read above checked each is inside its tokens and none overlaps another).
    assert all(fes is not None for fes in table.column("frame_elements").to_pylist())
    selects = [json.loads(p.read_text()) for p in (res / "iterations/iter1").glob("shard*.select_stats.json")]
    first = [r for r in table.to_pylist() if r["iteration"] == 1]
    assert sum(s["outputs"] for s in selects) == len(first)
    assert sum(s["outputs_with_frame_elements"] for s in selects) == sum(bool(r["frame_elements"]) for r in first) > 0
    assert (res / "report/stats.json").is_file() and (res / "report/per_iteration.png").is_file()
    assert (res / "filtering/filters.csv").is_file() and (res / "human_eval/human_eval.json").is_file()
    systems = [line.split(",")[0] for line in (res / "aligner_eval/comparison.csv").read_text().splitlines()[1:]]
    assert systems == ["FastAlign", "DiscAlign", "span aligner (ours)"]


def test_augmenter_comparison(run):
    _, _, res = run
    curve = [line.split(",") for line in (res / "frameid/curves.csv").read_text().splitlines()[1:]]
    assert {(row[0], row[1]) for row in curve} == {
        (a, f) for a in ("none", "paraphrastic", "lexsub", "geca") for f in ("0.5", "1.0")
    }
    examples = {(row[0], row[1]): float(row[6]) for row in curve}
    assert examples[("none", "1.0")] == 0 and examples[("paraphrastic", "1.0")] > 0
    assert (res / "frameid/curves.png").is_file() and (res / "frameid/lexicon_baseline.json").is_file()
    graph = json.loads((res / "augmenters/graph.json").read_text())
    assert graph["instances"] == graph["direct"] + graph["reversed"] + graph["composed"] > 0
    selftrain = (res / "aligner_eval/selftrain/ablation.csv").read_text()
    assert f"+SBCE +{graph['instances']} extra instances" in selftrain


def test_report_pages_release_and_the_snakemake_report(run):
    """Every table is an HTML entry, the overview pages come first, the landing page has the summary."""
    work, config, res = run
    for page in [
        "report/summary.html",
        "report/warnings.html",
        "report/chains.html",
        "report/frame_elements.html",
        "report/paraphrase_stage.html",
        "report/stats.html",
        "filtering/filters.html",
        "frameid/curves.html",
        "human_eval/span_task.html",
        "aligner_eval/table2/ablation.html",
        "release/README.md",
        "release/augmented.conll",
    ]:
        assert (res / page).is_file(), page
    records = json.loads((res / "report/warnings.json").read_text())["warnings"]
    stages = {r["stage"] for r in records}
    # The judgments are simulated, and the aligner's null threshold was never tuned (threshold_holdout
    # 0, no dev file): both are degraded results. A threshold tuned on held-out pairs is no warning
    # (tests/test_report.py).
    assert "human evaluation" in stages and "span aligner" in stages
    untuned = next(r for r in records if r["stage"] == "span aligner")
    assert untuned["kind"] == "degraded" and "not tuned" in untuned["message"]
    # The dataset card describes the aligner as trained (the demo's own config tunes on held-out pairs).
    assert "(null threshold not tuned: no dev file and threshold_holdout 0)" in (res / "release/README.md").read_text()
    # The aligner trained on the demo bitext's few instances is a toy by its own training record, and the
    # card and the summary say so (the tests' paraphraser is a bare random folder: no record, no claim).
    card = (res / "release/README.md").read_text()
    assert "**Toy models.**" in card and "the aligner `" in card and "the paraphraser `" not in card
    assert "toy-models" in card.split("---")[1]
    assert "Toy models" in (res / "report/summary.html").read_text()
    assert "Demo run" in (res / "report/summary.html").read_text()
    # frame_elements.mode align: the FE page shows retention and FE-marked chains, the card and the
    # summary give retention, and every FE of the CoNLL export is one the augmented rows carry.
    fe_page = (res / "report/frame_elements.html").read_text()
    assert "Retention per iteration" in fe_page and "<sub>" in fe_page and "data:image/png" in fe_page
    assert "<h2>Frame elements</h2>" in (res / "report/summary.html").read_text()
    assert "## Frame elements" in (res / "release/README.md").read_text()
    exported = json.loads((res / "release/export_conll.json").read_text())
    fe_summary = json.loads((res / "report/frame_elements.json").read_text())
    lost = sum(r["lost"] for r in fe_summary["per_iteration"])
    assert exported["lost_fes_left_out"] <= lost and fe_summary["mode"] == "align"
    report = work / "report.html"
    _run(work, config, "--report", str(report))
    text = report.read_text()
    categories = json.loads(re.search(r"var categories = (\{.*?\});\n", text).group(1))
    glance = sorted(os.path.basename(p) for sub in categories["At a glance"].values() for p in sub)
    assert glance == ["chains.html", "summary.html", "warnings.html"]
    entries = [p for cat in categories.values() for sub in cat.values() for p in sub]
    assert entries and all(p.endswith((".html", ".png")) for p in entries)  # no CSV/JSON download-only entries
    assert "spanaug-summary" in text  # the landing page embeds the summary


def test_rerun_is_a_no_op(run):
    work, config, _ = run
    assert "Nothing to be done" in _run(work, config, "-n").stdout


def test_killed_run_rebuilds_only_the_lost_shard_and_its_dependents(run):
    """A run killed during iteration 1's alignment of shard 001: that shard's output and everything
    downstream of it are missing; shard 000's files are all there."""
    work, config, res = run
    victim = res / "iterations/iter1/shard001.aligned.parquet"
    before = hashlib.sha256(victim.read_bytes()).hexdigest()
    lost = [
        victim,
        res / "iterations/iter1/shard001.chain.parquet",
        res / "iterations/iter1.chain.parquet",
        *sorted((res / "iterations/iter2").glob("shard001.*")),
        res / "iterations/iter2.chain.parquet",
        res / "augmented.parquet",
        *sorted((res / "report").iterdir()),
    ]
    for path in lost:
        path.unlink()
    counts = _job_counts(_run(work, config, "-n").stdout)
    assert counts.get("align") == 2  # iter1 shard001 and the iter2 shard001 downstream of it
    assert counts.get("paraphrase") == 1 and counts.get("expand_constraints") == 1
    assert counts.get("select_best") == 2 and counts.get("gather_iteration") == 2
    assert "shard_seeds" not in counts and "train_aligner" not in counts
    _run(work, config)
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == before  # same seed, same rows
    assert all(path.exists() for path in lost)


def test_unknown_config_key_is_rejected(run, tmp_path):
    work, config, _ = run
    bad = yaml.safe_load(Path(config).read_text())
    bad["paraphraser"]["beam_szie"] = 4
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    proc = _run(work, path, "-n", check=False)
    assert proc.returncode != 0 and "beam_szie" in proc.stdout + proc.stderr


def test_optional_sections_can_be_switched_off(run, tmp_path):
    work, config, _ = run
    off = yaml.safe_load(Path(config).read_text())
    off["augmenters"] = off["frameid"] = off["argid"] = off["baselines"] = off["human_eval"] = None
    path = tmp_path / "off.yaml"
    path.write_text(yaml.safe_dump(off))
    out = _run(work, path, "-n").stdout
    # Only the filter reruns (without human evaluation it loses its judgments input), and what reads
    # its results or lost optional inputs: its table page, the warnings, the summary, the card.
    assert "Nothing to be done" in out or set(_job_counts(out)) <= {
        "filter_outputs",
        "report_table_filtering_filters",
        "report_warnings",
        "report_summary",
        "export_card",
        "all",
    }


def test_production_config_dry_runs_with_gpu_resources(production_dry_run):
    """The production config plans (its data empty stand-ins: SPANAUG_PREFLIGHT=warn reports instead of stopping)."""
    proc = production_dry_run
    # Every problem on a line of its own, as a stopped run lists them.
    warning = (
        "preflight (SPANAUG_PREFLIGHT=warn): the run would stop:\n"
        "  - data.inputs: data/fndata-1.7: not a FrameNet release directory (no frameIndex.xml"
    )
    assert warning in proc.stdout + proc.stderr
    # GPU rules that will get no GPU are told before the first job (here: where torch is a CPU-only build).
    from spanaug.workflow.preflight import installed_torch

    build = installed_torch()
    told = f"spanaug: warning: torch {build.version} is a CPU-only build: the GPU rules (resources.gpu.gpus: 1)"
    assert (told in proc.stdout + proc.stderr) == (build.cuda is None)
    counts = _job_counts(proc.stdout)
    production = production_config()
    assert counts["iterate_shard"] == production.n_shards  # shard_jobs: chain (test_scheduling)
    assert counts["frameid_point"] == 4 * 10 * 5  # (none + 3 augmenters) x 10 fractions x 5 seeds
    assert counts["argid_point"] == 3 * 4 * 3  # (none + paraphrastic + lexsub) x 4 fractions x 3 seeds
    block = proc.stdout.split("rule iterate_shard:")[1].split("Shell command")[0]
    assert "gres=gpu:1" in block and "mem_mb=32000" in block
    # the cross aligner, pre-trained on synthetic rewrites of the imported sentences
    assert counts["make_synthetic_instances"] == 1 and counts["train_aligner"] == 1
    train = proc.stdout.split("rule train_aligner:")[1].split("rule ")[0]
    assert "--kind cross" in train and "--reversed True" in train and "aligner_synthetic.jsonl" in train
    # the word-aligned corpora: their span instances made by one job each, trained on (the dev parts
    # tuned on), and their phrase pairs
    assert counts["import_word_aligned"] == 5
    args = shlex.split(train.split("spanaug align train")[1].split(" > ")[0])
    made = "results/framenet/models/word_aligned/"
    assert args[args.index("--instances") + 1 : args.index("--instances") + 4] == [
        f"{made}{name}-train.spans.jsonl" for name in ("edinburgh", "multimwa-mtref", "multimwa-wiki")
    ]
    assert args[args.index("--dev") + 1 : args.index("--dev") + 3] == [
        f"{made}multimwa-{name}-dev.spans.jsonl" for name in ("mtref", "wiki")
    ]
    assert args[args.index("--phrase-pairs") + 1] == "data/edinburgh-train.gold.json"
    # the card names the kind and every corpus the aligner trained on; the report reads the trained aligner
    card = proc.stdout.split("rule export_card:")[1].split("rule ")[0]
    card_args = shlex.split(card.split("spanaug export card")[1].split(" > ")[0])
    run = json.loads(card_args[card_args.index("--run") + 1])
    assert run["aligner_kind"] == "cross" and "data/edinburgh-train.gold.json" in run["aligner_corpora"]
    assert len(run["aligner_corpora"]) == 6  # 3 corpora, 2 dev parts, the lexicon of the synthetic pre-training
    summary = proc.stdout.split("rule report_summary:")[1].split("rule ")[0]
    assert "--aligner results/framenet/models/aligner" in summary
    assert "--aligner-model results/framenet/models/aligner" in card  # its records: a toy or not
    # the cross-domain table, and its page in the report
    assert counts["align_cross_domain"] == 1
    assert "results/framenet/aligner_eval/cross_domain/cross_domain.html" in proc.stdout


def test_a_bad_config_stops_before_any_job_naming_every_key(tmp_path):
    """The preflight: a dry run and a real run both stop while the DAG is built, with every problem."""
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    # The demo's own files, from this workdir (tmp_path), and four things that are not there:
    config["aligner"]["train"]["bitext"] = str(REPO / "resources/demo/bitext.tsv")
    config["frameid"]["lexicon"] = config["stats"]["lexicon"] = str(REPO / "resources/demo/fndata-demo")
    config["argid"]["framenet"] = str(REPO / "resources/demo/fndata-demo")  # checked by the preflight too
    config["data"]["inputs"] = [str(tmp_path / "fndata-1.7")]
    config["paraphraser"] = {"model": str(tmp_path / "t5-paraphraser"), "prefix": "paraphrase: "}
    config["aligner"]["encoder"] = "bert-base-cased"
    config["stats"]["pos_tagger"] = "spacy:en_core_web_sm"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    for args in (["-n"], []):
        # An empty Hugging Face cache: bert-base-cased is then missing wherever the test runs.
        env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf")}
        proc = _run(tmp_path, path, *args, check=False, env=env)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "spanaug: error: the config names things that are missing (4)" in out
        for key in ("data.inputs", "paraphraser.model", "aligner.encoder", "stats.pos_tagger"):
            assert f"  - {key}: " in out, key
        assert "Traceback" not in out and 'File "' not in out
    assert not (tmp_path / "results").exists()  # no job ran


def test_overrides_keep_their_types_and_a_second_configfile_merges(run, tmp_path):
    work, config, _ = run
    proc = _run(
        work,
        config,
        "-n",
        "-p",
        "--config",
        "paraphraser={beam_size: 4, return_top: 2}",
        "augmenters=null",
        "run_name=typed",
    )
    assert "--beam-size 4 --return-top 2" in proc.stdout and _arguments_under(proc.stdout, f"{RESULTS_DIR}/typed/")
    assert "Figure 8 compares none with geca" in proc.stdout + proc.stderr
    override = tmp_path / "ablation.yaml"
    override.write_text("run_name: k3\naligner: {train: {k: 3}}\n")
    proc = _run(work, [config, override], "-n", "-p")
    train = proc.stdout.split("rule train_aligner:")[1].split("rule ")[0]
    assert (
        _arguments_under(train, f"{RESULTS_DIR}/k3/models/aligner") and "--k 3" in train and "--epochs 2" in train
    )  # merged, typed


def test_cross_aligner_sources_from_config_plan_as_jobs(run, tmp_path):
    """aligner.train's reversed, phrase pairs and synthetic pre-training reach align train."""
    work, config, _ = run
    lexicon = REPO / "resources/demo/fndata-demo"
    override = tmp_path / "cross.yaml"
    override.write_text(
        yaml.safe_dump(
            {
                "run_name": "synth",
                "aligner": {
                    "kind": "cross",
                    "train": {"reversed": True, "synthetic_lexicon": str(lexicon), "phrase_max_per_pair": 6},
                },
            }
        )
    )
    proc = _run(work, [config, override], "-n", "-p")
    counts = _job_counts(proc.stdout)
    assert counts.get("make_synthetic_instances") == 1
    made = proc.stdout.split("rule make_synthetic_instances:")[1].split("rule ")[0]
    sentences = shlex.quote(f"{RESULTS_DIR}/synth/data/sentences.parquet")
    assert f"--sentences {sentences} --lexicon {lexicon}" in made
    train = proc.stdout.split("rule train_aligner:")[1].split("rule ")[0]
    assert "--kind cross" in train and "--reversed True" in train and "--phrase-max-per-pair 6" in train
    pretrain = shlex.quote(f"{RESULTS_DIR}/synth/models/aligner_synthetic.jsonl")
    assert f"--pretrain {pretrain}" in train and "--synthetic-lexicon" not in train
    # demo.yaml's bitext_phrases: the phrase pairs are the bitext's diff alignment, made in the run.
    pairs = shlex.quote(f"{RESULTS_DIR}/synth/models/aligner_pairs.json")
    assert f"--phrase-pairs {pairs}" in train and "--phrase-keep-identical True" in train


def test_a_changed_config_under_the_same_run_name_is_refused(run, tmp_path):
    work, config, res = run
    before = (res / "augmented.parquet").stat().st_mtime_ns
    changed = yaml.safe_load(Path(config).read_text())
    changed["paraphraser"]["beam_size"] = 2
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(changed))
    assert "paraphraser.beam_size: 3 -> 2" in _run(work, path, "-n").stdout  # a dry run warns
    proc = _run(work, path, check=False)
    assert proc.returncode != 0 and "paraphraser.beam_size: 3 -> 2" in proc.stdout + proc.stderr
    assert "run_name" in proc.stdout + proc.stderr
    assert (res / "augmented.parquet").stat().st_mtime_ns == before  # nothing was rerun


def _killed_then_rerun(tmp_path, reference, config, when):
    """Run the workflow as the README does, kill -9 its whole process group once ``when`` exists, rerun
    the README's command; returns the rerun's output."""
    work = tmp_path / "killed"
    work.mkdir()
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    cmd = [
        SNAKEMAKE,
        "-s",
        str(REPO / "workflow" / "Snakefile"),
        "--directory",
        str(work),
        "--profile",
        str(REPO / "profiles/local"),
        "--configfile",
        str(path),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    target = work / config.get("results_dir", "results") / config["run_name"] / when
    deadline = time.time() + 900
    while not target.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the kill"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list((work / ".snakemake" / "locks").iterdir())  # what made the next run fail before
    rerun = subprocess.run(cmd, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-6000:]
    res = work / config.get("results_dir", "results") / config["run_name"]
    rows = artifacts.read_table(res / "augmented.parquet", artifacts.AUGMENTED).to_pylist()
    assert rows == artifacts.read_table(reference / "augmented.parquet", artifacts.AUGMENTED).to_pylist()
    assert not list(res.rglob(".spanaug-tmp"))
    return rerun.stdout + rerun.stderr


@pytest.mark.parametrize("shard_jobs", ["iteration", "chain"])
def test_kill_9_then_the_documented_rerun_gives_the_same_rows(run, tmp_path, shard_jobs):
    """kill -9 of the whole process group mid-run (iteration 1 half paraphrased, jobs running), then the
    README's command again: the stale lock goes, incomplete outputs are redone, the rows are the same,
    with a job per stage as in the reference run or one job per shard (shard_jobs: chain)."""
    _, config, res = run
    killed = yaml.safe_load(Path(config).read_text())
    killed["shard_jobs"] = shard_jobs
    # The augmented rows depend on the pipeline only: the evaluation sections are off to save time.
    killed["augmenters"] = killed["frameid"] = killed["argid"] = killed["baselines"] = killed["human_eval"] = None
    killed["aligner"]["evaluation"] = None
    out = _killed_then_rerun(tmp_path, res, killed, "iterations/iter1/shard000.paraphrases.parquet")
    assert "removed the locks a killed Snakemake left" in out
