#!/usr/bin/env python
"""A FrameNet-scale dress rehearsal on the one-node SLURM cluster of scripts/slurm/cluster.sh.

``make rehearsal`` runs it. Every frame annotation of the shared FrameNet 1.7 dev CoNLL seeds the
production config (config/config.yaml with config/rehearsal.yaml on top: 10 iterations, 16 shards,
stand-in models made here) through ``profiles/slurm``, and while it runs the script

1. cancels (``scancel``) one running SLURM job that paraphrases or aligns (or runs a shard's chain);
2. kills the Snakemake head with SIGKILL in the middle of an iteration, then resumes as docs/running.md
   says (``scancel --name`` of the killed head's SLURM run ID, then the same command again);
3. restarts slurmd (``cluster.sh restart-slurmd``).

Then it runs the same config locally, uninterrupted, and compares the two datasets row for row.
It prints the jobs submitted with and without grouping (dry runs), the wall time, each rule's share of
the summed job time (benchmark files), the scheduling overhead, files and bytes per seed and
iteration, and a projection for full FrameNet. The last line sums it up.

    .venv/bin/python scripts/rehearsal.py                      # what make rehearsal runs
    .venv/bin/python scripts/rehearsal.py --seeds 200 --iterations 3 --no-local   # a quick look
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SNAKEMAKE = str(BIN / "snakemake")
SHARED = REPO.parent / "shared" / "data"
CONLL = SHARED / "fn1.7.dev.syntaxnet.conll"
MODELS = REPO / "results" / "rehearsal-models"
CONFIGS = ["config/config.yaml", "config/rehearsal.yaml"]
#: The rules of one iteration of one shard (the jobs grouping merges), and the one job of a shard's
#: every iteration instead (shard_jobs: chain).
ITERATION_RULES = ("expand_constraints", "paraphrase", "align", "select_best")
CHAIN_RULE = "iterate_shard"
#: The SLURM comment of a job that paraphrases or aligns: a rule's own, a group's, or a shard's chain.
GPU_JOB_COMMENT = r"rule_(paraphrase|align|iterate_shard)_wildcards_|rule_iter\d+_.*(paraphrase|align)"
#: Full FrameNet 1.7 under the production config: the seed count of scripts/gpu_budget.py (SEEDS, whose
#: source SEEDS_SOURCE states).
FULL_SEEDS, FULL_ITERATIONS = 198_368, 10
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def say(message: str) -> None:
    print(f"rehearsal: {message}", flush=True)


# ---------------------------------------------------------------- inputs: seeds and stand-in models


def seed_corpus(limit: int | None) -> Path:
    """The dev CoNLL itself, or its first ``limit`` blocks (frame annotations) for a quick look."""
    if not limit:
        return CONLL
    blocks = CONLL.read_text(encoding="utf-8").strip("\n").split("\n\n")[:limit]
    out = MODELS / f"dev-first{limit}.conll"
    out.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return out


def make_models() -> None:
    """The stand-in paraphraser (a random T5) and the aligner's encoder (a random BERT), their
    vocabularies trained on the dev sentences; made once, kept for later rehearsals."""
    from spanaug.demo.standins import Size, save_encoder_standin, save_standin
    from spanaug.pipeline.importers import read_conll

    if (MODELS / "paraphraser").is_dir() and (MODELS / "encoder").is_dir():
        return
    texts = sorted({" ".join(row["tokens"]) for row in read_conll(CONLL)})
    size = Size(d_model=64, layers=2, heads=2, ffn=128, max_positions=256)
    save_standin(MODELS / "paraphraser", "t5", texts, size, vocab_size=2000)
    save_encoder_standin(MODELS / "encoder", texts, size, vocab_size=2000)
    say(f"stand-in models in {MODELS.relative_to(REPO)} (vocabularies from {len(texts)} dev sentences)")


# ---------------------------------------------------------------- Snakemake commands


def overrides(run_name: str, args: argparse.Namespace, corpus: Path) -> list[str]:
    return [
        "--configfile",
        *CONFIGS,
        "--config",
        f"run_name={run_name}",
        f"iterations={args.iterations}",
        f"n_shards={args.shards}",
        f"data={{format: conll, inputs: [{corpus}]}}",
    ]


def slurm_command(run_name: str, args: argparse.Namespace, corpus: Path, profile: str = "profiles/slurm") -> list[str]:
    """The SLURM run; its rerun after a head kill is the same command (docs/running.md: Killed runs)."""
    res = f"results/{run_name}"
    return [
        SNAKEMAKE,
        "--profile",
        profile,
        *overrides(run_name, args, corpus),
        "--jobs",
        str(args.jobs),
        # short jobs: the plugin's default first check after 40 s would dominate
        "--slurm-init-seconds-before-status-checks",
        "5",
        "--seconds-between-status-checks",
        "5",
        "--slurm-logdir",
        f"{res}/slurm_logs",
        "--slurm-keep-successful-logs",
    ]


def planned_submissions(run_name: str, args: argparse.Namespace, corpus: Path, profile: str) -> dict[str, int]:
    """SLURM jobs a dry run plans: all of them, and those of the iterations (a group job counts once)."""
    proc = subprocess.run(
        [SNAKEMAKE, "-n", *slurm_command(run_name, args, corpus, profile)[1:]],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        sys.exit(f"rehearsal: dry run failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return count_submissions(proc.stdout)


def local_rules() -> set[str]:
    """Rules that run in the head, never on SLURM: those whose definition says ``localrule: True``
    (a dry run prints them as any other rule). The report's table pages are rules made in a loop
    (report.smk) whose names start with report_table_."""
    local = {"all"}
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        # A rule may sit in an `if` (shard_jobs picks the iteration's rules): its body is indented deeper.
        for _, name, body in re.findall(r"^([ \t]*)rule (\w+):\n((?:\1[ \t]+.*\n|\n)+)", smk.read_text(), re.M):
            if re.search(r"^\s+localrule: True", body, re.M):
                local.add(name)
    return local


def count_submissions(printed: str) -> dict[str, int]:
    """SLURM jobs in a dry run's listing: each ungrouped job of a rule that is not local, and each
    group job once (its jobs are printed indented under "Group job")."""
    local = local_rules()
    ungrouped = [
        rule
        for rule in re.findall(r"^rule (\w+):$", printed, re.M)
        if rule not in local and not rule.startswith("report_table_")
    ]
    groups = re.findall(r"^.*Group job (\S+) \(", printed, re.M)
    iteration = sum(rule in (*ITERATION_RULES, CHAIN_RULE) for rule in ungrouped) + len(groups)
    return {"all": len(ungrouped) + len(groups), "iterations": iteration}


def production_run():
    """config/config.yaml with every default filled in (a RunConfig)."""
    from spanaug.core.overrides import read_run_config

    return read_run_config(REPO / "config/config.yaml")


def production_plan(profile: str) -> dict[str, int]:
    """SLURM jobs the production config (config/config.yaml alone: full FrameNet, its n_shards) plans,
    in a folder of its own with empty stand-ins of its data (rules take them as inputs); the
    preflight only warns about them."""
    import tempfile

    from spanaug.workflow.plan import Plan, make_stand_ins

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "config").symlink_to(REPO / "config")
        run = production_run()
        make_stand_ins(Plan(run, "results/framenet").external_files(), work)
        proc = subprocess.run(
            [SNAKEMAKE, "-n", "--profile", str(REPO / profile), "-s", str(REPO / "workflow/Snakefile")]
            + ["--directory", tmp, "--configfile", "config/config.yaml"],
            env={**ENV, "SPANAUG_PREFLIGHT": "warn"},
            capture_output=True,
            text=True,
        )
    if proc.returncode:
        sys.exit(f"rehearsal: the production dry run failed:\n{proc.stderr[-2000:]}")
    return count_submissions(proc.stdout)


def profile_without_groups() -> str:
    """profiles/slurm without its grouping, to count what the run would submit without it."""
    folder = MODELS / "profile-without-groups"
    folder.mkdir(parents=True, exist_ok=True)
    import yaml

    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    for key in ("groups", "group-components"):
        profile.pop(key, None)
    (folder / "config.yaml").write_text(yaml.safe_dump(profile))
    return str(folder)


# ---------------------------------------------------------------- SLURM and the faults


def squeue(name: str | None = None, states: str = "all") -> list[dict[str, str]]:
    cmd = ["squeue", "-h", "-t", states, "-o", "%i|%T|%j|%k"]
    if name:
        cmd += ["--name", name]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    return [dict(zip(("id", "state", "name", "comment"), line.split("|", 3))) for line in out.splitlines()]


def run_id(head_log: Path) -> str | None:
    """The SLURM run ID a head logged (its jobs' name)."""
    found = re.search(r"SLURM run ID: (\S+)", head_log.read_text(errors="replace")) if head_log.exists() else None
    return found.group(1) if found else None


def start_head(cmd: list[str], log: Path) -> subprocess.Popen:
    say(f"head: {' '.join(cmd[1:3])} ... (log {log.relative_to(REPO)})")
    with log.open("w") as out:
        return subprocess.Popen(cmd, cwd=REPO, env=ENV, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def chains_done(res: Path, iteration: int) -> int:
    return len(list((res / "iterations" / f"iter{iteration}").glob("shard*.chain.parquet")))


def benchmark_times(res: Path) -> dict[str, float]:
    """Each finished job's benchmark file and its modification time (a rerun job rewrites it)."""
    return {str(p): p.stat().st_mtime for p in (res / "benchmarks").rglob("*.tsv")}


def recorded_logs() -> set[str]:
    """The logs of the jobs Snakemake has recorded as finished: a record in .snakemake/metadata
    (one per output, its path base64-encoded) is written by the head after the job's outputs
    were checked and touched."""
    logs: set[str] = set()
    for record in (REPO / ".snakemake" / "metadata").glob("*"):
        try:
            meta = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written
        if not meta.get("incomplete"):
            logs.update(meta.get("log") or [])
    return logs


def log_of(benchmark: Path, res: Path) -> str:
    """The log of the job a benchmark file belongs to (rules name both alike: benchmarks/iter4/
    align.shard007.tsv, logs/iter4/align.shard007.log), relative to the repository."""
    rel = Path(benchmark).relative_to(res / "benchmarks").with_suffix(".log")
    return str((res / "logs" / rel).relative_to(REPO))


class Faults:
    """The three faults, each injected once when the run reaches its point."""

    def __init__(self, res: Path, args: argparse.Namespace, cmd: list[str], logs: Path):
        self.res, self.args, self.cmd, self.logs = res, args, cmd, logs
        self.cancelled: str | None = None
        self.killed_at: dict[str, float] | None = None
        self.recorded: set[str] = set()
        self.lost: list[str] = []
        self.slurmd_restarted = False
        self.heads = 0
        self.kill_iteration = max(1, args.iterations // 2)

    def new_head(self) -> subprocess.Popen:
        self.heads += 1
        return start_head(self.cmd, self.logs / f"head{self.heads}.log")

    def step(self, head: subprocess.Popen) -> subprocess.Popen:
        """One look at the run; returns the head now running (a new one after the kill)."""
        rid = run_id(self.logs / f"head{self.heads}.log")
        if self.cancelled is None and rid:
            for job in squeue(rid, "running"):
                if re.match(GPU_JOB_COMMENT, job["comment"]):
                    subprocess.run(["scancel", job["id"]], check=True)
                    self.cancelled = f"{job['id']} ({job['comment']})"
                    say(f"fault 1: scancel of running job {self.cancelled}")
                    break
        done = chains_done(self.res, self.kill_iteration)
        if self.cancelled and self.killed_at is None and 0 < done < self.args.shards:
            self.killed_at = benchmark_times(self.res)
            self.recorded = recorded_logs()
            self.lost = [j["comment"] for j in squeue(rid)]
            os.kill(head.pid, signal.SIGKILL)
            head.wait()
            say(
                f"fault 2: kill -9 of the head (pid {head.pid}) with {done} of {self.args.shards} shards of "
                f"iteration {self.kill_iteration} done; its {len(self.lost)} SLURM jobs cancelled "
                f"(scancel --name {rid})"
            )
            subprocess.run(["scancel", "--name", rid], check=True)
            while squeue(rid, "running,completing,pending"):
                time.sleep(1)
            return self.new_head()
        resumed = self.killed_at is not None and self.heads == 2 and rid
        if resumed and not self.slurmd_restarted and squeue(rid, "running"):
            self.slurmd_restarted = True
            say("fault 3: slurmd restarted with jobs running")
            subprocess.run([str(REPO / "scripts/slurm/cluster.sh"), "restart-slurmd"], check=True)
        return head

    def rerun(self) -> list[str]:
        """Jobs whose benchmark file existed at the head kill and was written again after it."""
        after = benchmark_times(self.res)
        return sorted(p for p, t in (self.killed_at or {}).items() if after.get(p, t) != t)

    def redone(self) -> list[str]:
        """Jobs the head had recorded as finished before it was killed, and that ran again."""
        return [p for p in self.rerun() if log_of(Path(p), self.res) in self.recorded]

    def unrecorded(self) -> list[str]:
        """Jobs that finished on SLURM but that the killed head had not recorded, and that ran again.
        For a group job the head touches the outputs level by level and records each job after its
        touch, so a kill in that second leaves an output newer than the unrecorded one made from it
        (snakemake/snakemake#789): Snakemake, finding no record, runs the later jobs again."""
        return [p for p in self.rerun() if log_of(Path(p), self.res) not in self.recorded]


# ---------------------------------------------------------------- figures


def rule_of(benchmark: Path, bench_root: Path) -> str:
    """The rule a benchmark file belongs to (iter3/paraphrase.shard004.tsv: paraphrase)."""
    rel = benchmark.relative_to(bench_root)
    return "report_table" if rel.parts[0] == "report" else rel.name.split(".")[0]


def benchmark_seconds(path: Path) -> float:
    """The seconds a benchmark file records (one row per run of its job)."""
    with path.open() as f:
        return sum(float(r["s"]) for r in csv.DictReader(f, delimiter="\t"))


def job_seconds(res: Path) -> dict[str, float]:
    bench_root = res / "benchmarks"
    total: dict[str, float] = defaultdict(float)
    for path in bench_root.rglob("*.tsv"):
        total[rule_of(path, bench_root)] += benchmark_seconds(path)
    return dict(total)


def priorities() -> dict[str, int]:
    """The rules' priorities as the workflow gives them (spanaug.workflow.plan.PRIORITIES; others: 0)."""
    from spanaug.workflow.plan import PRIORITIES

    return dict(PRIORITIES)


def job_starts(res: Path) -> dict[str, float]:
    """Each rule's first job start (epoch seconds): a benchmark file is written when its job ends,
    so the start is its modification time less the seconds it records."""
    bench_root = res / "benchmarks"
    first: dict[str, float] = {}
    for path in bench_root.rglob("*.tsv"):
        start = path.stat().st_mtime - benchmark_seconds(path)
        rule = rule_of(path, bench_root)
        first[rule] = min(start, first.get(rule, start))
    return first


def critical_path(res: Path, start: float) -> str:
    """When the training the iterations wait for began, against the first job of priority 0
    (evaluations and reports), in minutes into the run: what the rules' priorities are for."""
    starts, prio = job_starts(res), priorities()
    trains = [r for r in ("train_aligner", "train_paraphraser") if r in starts]
    others = [r for r in starts if prio.get(r, 0) == 0]
    parts = [f"{r} started at {(starts[r] - start) / 60:.1f} min" for r in trains]
    if others:
        first = min(others, key=starts.__getitem__)
        parts.append(f"the first job of priority 0 ({first}) at {(starts[first] - start) / 60:.1f} min")
    return "; ".join(parts) or "no training or priority-0 job ran"


def written(res: Path) -> tuple[int, int, int, int]:
    """(files, bytes) of the iterations' folder and of the whole run's folder."""
    it = [p for p in (res / "iterations").rglob("*") if p.is_file()]
    everything = [p for p in res.rglob("*") if p.is_file()]
    return len(it), sum(p.stat().st_size for p in it), len(everything), sum(p.stat().st_size for p in everything)


def seeds_of(res: Path) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(res / "data" / "seeds.parquet").num_rows


def figures(
    res: Path,
    args: argparse.Namespace,
    start: float,
    wall: float,
    submitted: int,
    planned: dict[str, dict[str, int]],
    cores: int,
) -> dict[str, object]:
    seconds = job_seconds(res)
    summed = sum(seconds.values())
    seeds = seeds_of(res)
    it_files, it_bytes, all_files, all_bytes = written(res)
    per = seeds * args.iterations
    with_g, without_g = planned["with"], planned["without"]
    say(
        f"jobs submitted to SLURM: {submitted} (planned with grouping {with_g['all']}, of which iterations "
        f"{with_g['iterations']}; without grouping {without_g['all']}, iterations {without_g['iterations']}: "
        f"{with_g['iterations'] / without_g['iterations']:.3f} of the iteration jobs)"
    )
    overhead = 1 - summed / (wall * cores)
    say(f"wall time: {wall / 60:.1f} min on {cores} cores; summed job time {summed / 60:.1f} min")
    say(f"overhead: 1 - summed job time / (wall time x cores) = {overhead:.1%}")
    say(f"critical path: {critical_path(res, start)}")
    for rule, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        say(f"  {rule:<28} {s / 60:7.1f} min  {s / summed:6.1%} of the summed job time")
    say(
        f"written: iterations/ {it_files} files, {it_bytes / 1e6:.1f} MB; the whole run {all_files} files, "
        f"{all_bytes / 1e6:.1f} MB; per seed and iteration: {it_files / per:.4f} files, {it_bytes / per:,.0f} bytes "
        f"(iterations/), {all_bytes / per:,.0f} bytes (everything)"
    )
    full = FULL_SEEDS * FULL_ITERATIONS
    full_shards = production_run().n_shards
    # Files come per shard and iteration (requests, paraphrases, aligned, chain, three stats files,
    # a log and a benchmark per rule) whatever the seeds; bytes grow with seeds x iterations.
    files_full = full_shards * FULL_ITERATIONS * it_files / (args.shards * args.iterations)
    prod_with, prod_without = planned["production with"], planned["production without"]
    say(
        f"full FrameNet ({FULL_SEEDS:,} seeds x {FULL_ITERATIONS} iterations, {full_shards} shards, the production "
        f"config): {prod_with['all']:,} SLURM jobs with grouping ({prod_with['iterations']:,} for the iterations), "
        f"{prod_without['all']:,} without ({prod_without['iterations']:,}); {files_full:,.0f} files under "
        f"iterations/, {it_bytes / per * full / 1e9:,.1f} GB; queue waves one after the other per shard: "
        f"{prod_with['iterations'] // full_shards} with grouping, {prod_without['iterations'] // full_shards} without"
    )
    if args.decode_rate and args.pairs_rate:
        requests = full
        hours = requests / args.decode_rate / 3600 + requests * 3 / args.pairs_rate / 3600
        say(
            f"GPU-hours for full FrameNet at scripts/bench_gpu.py's {args.decode_rate} sentences/s and "
            f"{args.pairs_rate} pairs/s: {hours:,.1f}, without the jobs' fixed cost (bench_gpu.py adds it)"
        )
    else:
        say("GPU-hours: pass --decode-rate and --pairs-rate from scripts/bench_gpu.py on a GPU")
    return {"overhead": overhead, "submitted": submitted, "wall_s": wall, "summed_s": summed}


# ---------------------------------------------------------------- the rehearsal


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=0, help="use the dev file's first N frame annotations (0: all)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=50, help="SLURM jobs in flight at once")
    ap.add_argument("--no-faults", action="store_true", help="run through SLURM without injecting faults")
    ap.add_argument("--no-local", action="store_true", help="skip the uninterrupted local run and the comparison")
    ap.add_argument("--decode-rate", type=float, help="bench_gpu.py's decoding sentences/s on a GPU")
    ap.add_argument("--pairs-rate", type=float, help="bench_gpu.py's aligner pairs/s on a GPU")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    if not CONLL.exists():
        sys.exit(f"rehearsal: {CONLL} is missing (the shared data beside the repository, see its README)")
    MODELS.mkdir(parents=True, exist_ok=True)
    make_models()
    corpus = seed_corpus(args.seeds)
    res, local = REPO / "results" / "rehearsal", REPO / "results" / "rehearsal-local"
    for folder in (res, local):
        shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([str(REPO / "scripts/slurm/cluster.sh"), "start"], check=True)
    cores = int(subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()[0])
    planned = {
        "with": planned_submissions("rehearsal", args, corpus, "profiles/slurm"),
        "without": planned_submissions("rehearsal", args, corpus, profile_without_groups()),
        "production with": production_plan("profiles/slurm"),
        "production without": production_plan(profile_without_groups()),
    }
    logs = MODELS / "heads"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir()
    faults = Faults(res, args, slurm_command("rehearsal", args, corpus), logs)
    start = time.time()
    head = faults.new_head()
    while head.poll() is None:
        time.sleep(2)
        if not args.no_faults:
            head = faults.step(head)
    wall = time.time() - start
    if head.returncode:
        sys.exit(f"rehearsal: the SLURM run failed (exit {head.returncode}); see {logs}")
    heads = sorted(logs.glob("head*.log"))
    submitted = sum(p.read_text(errors="replace").count("has been submitted with SLURM jobid") for p in heads)
    redone, unrecorded = faults.redone(), faults.unrecorded()
    summary = figures(res, args, start, wall, submitted, planned, cores)
    if not args.no_faults:
        say(
            f"faults: scancel {faults.cancelled}; head killed, {len(faults.lost)} jobs lost with it; "
            f"slurmd restarted: {faults.slurmd_restarted}; "
            f"jobs redone after the head kill that it had recorded as finished: "
            f"{len(redone)}{' ' + ', '.join(redone) if redone else ''}; finished on SLURM but not yet "
            f"recorded by the killed head, run again: {len(unrecorded)}"
            f"{' ' + ', '.join(unrecorded) if unrecorded else ''}"
        )
    identical = None
    if not args.no_local:
        say("the uninterrupted local run of the same config")
        t = time.time()
        target = str((local / "augmented.parquet").relative_to(REPO))
        subprocess.run(
            [SNAKEMAKE, "--profile", "profiles/local", *overrides("rehearsal-local", args, corpus)]
            + ["--cores", str(cores), "--", target],
            cwd=REPO,
            env=ENV,
            check=True,
            stdout=(MODELS / "local.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        say(f"local run: {(time.time() - t) / 60:.1f} min")
        compare = [sys.executable, str(REPO / "scripts/same_rows.py"), str(local / "augmented.parquet")]
        identical = subprocess.run([*compare, str(res / "augmented.parquet")], cwd=REPO).returncode == 0
    (res / "rehearsal.json").write_text(
        json.dumps(
            {
                **summary,
                "redone": redone,
                "unrecorded": unrecorded,
                "cancelled": faults.cancelled,
                "identical": identical,
            },
            indent=1,
        )
    )
    say(
        f"{summary['submitted']} SLURM jobs, overhead {summary['overhead']:.1%}, redone after the head kill: "
        f"{len(redone)} (unrecorded, run again: {len(unrecorded)}), identical rows: {identical}"
    )
    return 0 if identical in (True, None) and not redone else 1


if __name__ == "__main__":
    sys.exit(main())
