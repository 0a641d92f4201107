# Functions the other files of rules share (config validation, paths, options, input functions,
# resources); only functions here, as snakemake --lint wants, and the checks that run before the DAG.
import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.logging import logger
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import update_config

from spanaug.core.config import load_run_config
from spanaug.core.overrides import coerce_overrides, read_config_file
from spanaug.core.errors import SpanaugError, problem_lines
from spanaug.core.files import remove_stale_temporaries
from spanaug.pipeline.aligner.threshold_plan import describe_plan, threshold_plan
from spanaug.core.aligner_settings import corpus_name
from spanaug.workflow import envs, preflight, rundir


def stop(exc):
    """A problem the user can fix: one message (the CLI's form), no traceback."""
    logger.error(f"spanaug: error: {exc}")
    sys.exit(1)


# This checkout (workflow/rules/ is two folders down): its envs/ and the bundled demo resources.
# Not workflow.basedir, the main Snakefile's folder, which is another project's when this workflow is
# used as a module; the user's data and results stay relative to the working directory.
CHECKOUT = Path(workflow.current_basedir).resolve().parents[1]

# The config is validated against the schema generated from the settings dataclasses
# (src/spanaug/core/config.py, workflow/schemas/config.schema.yaml), then every setting it leaves out
# takes its default from them (null sections, "off", included), so rules read config keys without
# fallbacks. Snakemake reads the nested values of --config with YAML's BaseLoader (as strings): the
# schema gives them their types back.
update_config(config, coerce_overrides(dict(workflow.config_settings.config)))
try:
    # Snakemake's YAML loader keeps the last of a key given twice: read each file strictly first
    # (the workflow profile did so already when Snakemake runs this workflow from its command line).
    for configfile in workflow.configfiles:
        read_config_file(configfile)
    RUN = load_run_config(config)
except SpanaugError as exc:
    stop(f"config: {exc}")
config.update(dataclasses.asdict(RUN))

# Rules call the installed `spanaug` console script. With `--sdm conda` each rule's environment puts
# its own first on PATH (an environment installs this checkout, found through SPANAUG_SOURCE: see
# envs/*.yaml); otherwise the one installed beside this Snakemake is found at the end of PATH, so the
# README's `.venv/bin/snakemake ...` runs with no virtual environment activated (a SLURM job runs
# Snakemake from the same installation, which sets the same prefix there).
shell.prefix(
    f'set -euo pipefail; export PATH="$PATH:{shlex.quote(str(Path(sys.executable).parent))}"; '
)
os.environ.setdefault(envs.SOURCE_VAR, str(CHECKOUT))

RES = f"{config['results_dir']}/{config['run_name']}"
CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


def preflight_check():
    """Before the DAG: every file, model, tagger and dependency the config names (spanaug.workflow.preflight),
    and a warning when the GPU rules will run without a GPU.

    SPANAUG_PREFLIGHT=warn reports the problems without stopping (to plan a run before its data exists).
    """
    has_module = (
        envs.conda_has_module(CHECKOUT / "envs") if CONDA else preflight.installed
    )
    problems = preflight.check_run(RUN, has_module)
    # GPU rules that will run without a GPU: said before the first job. With --sdm conda the jobs
    # import the torch of their own environments, which this process cannot see.
    for warning in preflight.gpu_warnings(
        RUN, None if CONDA else preflight.installed_torch()
    ):
        logger.warning(f"spanaug: warning: {warning}")
    if config["frameid"] and frameid_augmenters() != config["frameid"]["augmenters"]:
        logger.info(
            f"augmenters: null (off), so Figure 8 compares none with {', '.join(frameid_augmenters()) or 'nothing else'}"
        )
    if problems and os.environ.get("SPANAUG_PREFLIGHT") == "warn":
        logger.warning(
            problem_lines(
                "preflight (SPANAUG_PREFLIGHT=warn): the run would stop", problems
            )
        )
    elif problems:
        try:
            preflight.preflight(RUN, has_module)
        except SpanaugError as exc:
            stop(exc)


def tidy_workdir():
    """Locks a killed Snakemake left here, and the temporaries of this run's killed jobs (those of this
    host whose process is gone, and other hosts' older than the longest job runtime)."""
    note = rundir.remove_stale_locks(".")
    if note:
        logger.info(note)
    longest = 60 * max(
        config["resources"]["gpu"]["runtime"], config["resources"]["cpu"]["runtime"]
    )
    removed = remove_stale_temporaries(RES, max_age_s=longest)
    if removed:
        logger.info(
            f"removed {len(removed)} temporary file(s) that killed jobs left in {RES}"
        )


def guard_results():
    """When jobs start (onstart): a changed config under this run_name stops the run, unless -R/-F asked
    for reruns; the config the results come from is recorded in results/<run>/config.effective.yaml.
    """
    dag = workflow.dag_settings
    try:
        rundir.guard_record(
            config, RES, forced=bool(dag.forcerun or dag.forceall or dag.forcetargets)
        )
    except SpanaugError as exc:
        stop(exc)
    rundir.register_owner(".")


def dry_run_notes():
    """Says, while the DAG is built, what a run would refuse (the config changed under this run_name), so a
    dry run shows it too. Snakemake 9 knows of a dry run only after parsing (workflow.dryrun is False
    here), so every run says it; a real one then stops in onstart unless -R/-F asked for the reruns.
    """
    changes = rundir.check_record(config, RES)
    if changes:
        logger.warning(rundir.changed_config_message(RES, changes))


LOGS = f"{RES}/logs"
BENCH = f"{RES}/benchmarks"
SHARDS = [f"{j:03d}" for j in range(config["n_shards"])]


# -- command options from config sections


def flags(section, keys=None, skip=()):
    """Settings of a config section as the command options of the same names (``--beam-size 20``).

    A null setting is passed as ``null``; lists as several values (an empty one is left out); a
    mapping (such as filter definitions) as JSON.
    """
    out = []
    for key, value in section.items():
        if (keys is not None and key not in keys) or key in skip:
            continue
        flag = f"--{key.replace('_', '-')}"
        if isinstance(value, list):
            if value:
                out.append(" ".join([flag, *(shlex.quote(str(v)) for v in value)]))
        elif isinstance(value, dict):
            out.append(f"{flag} {shlex.quote(json.dumps(value))}")
        else:
            out.append(f"{flag} {'null' if value is None else shlex.quote(str(value))}")
    return " ".join(out)


def section_options(*path, keys=None, skip=()):
    """``flags`` of a config section that may be off (null): a params function, evaluated per job."""

    def options(wildcards):
        section = config
        for key in path:
            section = section[key]
        return flags(section, keys, skip)

    return options


def aligner_k_option(wildcards=None):
    """The span-length window k of the aligner this run trains (the command's default otherwise)."""
    train = config["aligner"]["train"]
    return opt("--k", train["k"] if train else None)


def opt(flag, value):
    """One option, or nothing when the value is unset."""
    return "" if value is None else f"{flag} {shlex.quote(str(value))}"


# -- paths


def chain_shard(i, j):
    """Iteration i's output (CHAIN) for shard j; iteration 0 holds the seeds."""
    return f"{RES}/iterations/iter{int(i)}/shard{j}.chain.parquet"


def previous_chain(wildcards):
    return chain_shard(int(wildcards.i) - 1, wildcards.j)


def iteration_chain_shards(wildcards):
    return [chain_shard(wildcards.i, j) for j in SHARDS]


def iteration_outputs():
    return [
        f"{RES}/iterations/iter{i}.chain.parquet"
        for i in range(1, config["iterations"] + 1)
    ]


def final_outputs():
    out = [
        f"{RES}/augmented.parquet",
        f"{RES}/report/stats.json",
        f"{RES}/report/per_iteration.csv",
        f"{RES}/report/per_iteration.png",
        f"{RES}/filtering/filters.csv",
    ]
    if config["aligner"]["evaluation"]:
        out.append(f"{RES}/aligner_eval/table2/ablation.csv")
    if config["aligner"]["systems"]:
        out.append(f"{RES}/aligner_eval/systems/systems.csv")
    if config["aligner"]["cross_domain"]:
        out.append(f"{RES}/aligner_eval/cross_domain/cross_domain.csv")
    if config["baselines"]:
        out.append(f"{RES}/aligner_eval/comparison.csv")
    if config["augmenters"]:
        out += [
            f"{RES}/augmenters/{name}.json"
            for name in ("paraphrastic", "lexsub", "geca", "graph")
        ]
        if (
            config["augmenters"]["graph"]["selftrain"]
            and config["aligner"]["evaluation"]
        ):
            out.append(f"{RES}/aligner_eval/selftrain/ablation.csv")
    if config["frameid"]:
        out += [f"{RES}/frameid/curves.csv", f"{RES}/frameid/lexicon_baseline.json"]
    if config["human_eval"]:
        out += [f"{RES}/human_eval/task.csv", f"{RES}/human_eval/span_task.csv"]
        if human_results():
            out.append(f"{RES}/human_eval/human_eval.json")
        if span_results():
            out.append(f"{RES}/human_eval/span_agreement.json")
    out += [f"{RES}/release/README.md", f"{RES}/release/augmented.conll"]
    out += report_pages()
    return out


# -- the report's own pages (report.smk): tables rendered as HTML, example chains, warnings, summary


def report_pages():
    """Every report page this run makes: one per table of the run's results, and the overview."""
    pages = [html for html, source, *_ in report_tables() if source_in_run(source)]
    return pages + [
        f"{RES}/report/{name}.html"
        for name in ("summary", "warnings", "chains", "frame_elements")
    ]


def report_tables():
    """(page, its CSV/JSON source, title, caption, category, subcategory) of every table the report can show.

    The raw files are no report entries of their own (Snakemake offers them as downloads only): each
    page shows the table and carries its raw file as a download link.
    """
    tables = [
        (
            "data/import_stats",
            "json",
            "What the importer kept",
            "import_stats",
            "Input corpus",
        ),
        ("data/seeds_report", "json", "Seed selection", "seeds", "Input corpus"),
        (
            "report/stats",
            "json",
            "Statistics of the augmented dataset",
            "stats",
            "Augmented dataset",
        ),
        (
            "report/per_iteration",
            "csv",
            "Outputs and scores per iteration",
            "per_iteration",
            "Augmented dataset",
        ),
        (
            "filtering/filters",
            "csv",
            "Filters (Table 4)",
            "filters",
            "Augmented dataset",
        ),
        (
            "augmenters/paraphrastic",
            "json",
            "Augmenter: paraphrastic",
            "augmenters",
            "Augmenters",
        ),
        (
            "augmenters/lexsub",
            "json",
            "Augmenter: lexical substitution",
            "augmenters",
            "Augmenters",
        ),
        ("augmenters/geca", "json", "Augmenter: GECA", "augmenters", "Augmenters"),
        (
            "augmenters/graph",
            "json",
            "Chain graph: span-alignment instances",
            "graph",
            "Augmenters",
        ),
        (
            "frameid/lexicon_baseline",
            "json",
            "Frame ID: lexicon baseline",
            "frameid_baseline",
            "Frame ID",
        ),
        (
            "frameid/curves",
            "csv",
            "Frame ID curves (Figure 8)",
            "frameid_curves",
            "Frame ID",
        ),
        (
            "human_eval/task",
            "csv",
            "Annotation task (frame evocation)",
            "human_task",
            "Human evaluation",
        ),
        (
            "human_eval/human_eval",
            "json",
            "Human judgments",
            "human_eval",
            "Human evaluation",
        ),
        (
            "human_eval/span_task",
            "csv",
            "Span-alignment task (§4.1)",
            "span_task",
            "Human evaluation",
        ),
        (
            "human_eval/span_agreement",
            "json",
            "Span-alignment answers: agreement",
            "span_agreement",
            "Human evaluation",
        ),
        (
            "aligner_eval/comparison",
            "csv",
            "Span aligner against word aligners (Tables 1-2)",
            "comparison",
            "Span aligner",
        ),
        (
            "aligner_eval/cross_domain/cross_domain",
            "csv",
            "Span aligner across domains",
            "cross_domain",
            "Span aligner",
        ),
    ]
    for ablation in ("table2", "selftrain"):
        for name, title, caption in (
            ("ablation", "Table 2 ablations", "ablation"),
            ("memorisation", "Memorisation split (§4.6)", "memorisation"),
            ("by_span_length", "F1 by span length (Figure 4)", "breakdowns"),
            (
                "by_position_difference",
                "F1 by position difference (Figure 5)",
                "breakdowns",
            ),
        ):
            if ablation == "selftrain" and name == "ablation":
                title, caption = "Self-training round", "selftrain"
            tables.append(
                (
                    f"aligner_eval/{ablation}/{name}",
                    "csv",
                    title,
                    caption,
                    "Span aligner",
                    ablation,
                )
            )
    return [
        (
            f"{RES}/{stem}.html",
            f"{RES}/{stem}.{ext}",
            title,
            f"../report/{caption}.rst",
            category,
            *sub,
        )
        for stem, ext, title, caption, category, *sub in tables
    ]


def table_slug(page):
    """A table page's name for its rule, log and benchmark: its path in the run, as one word."""
    return os.path.splitext(os.path.relpath(page, RES))[0].replace(os.sep, "_")


def run_folder(wildcards, output):
    """The run's folder, from an output of report/ (sources on the warnings page are relative to it)."""
    return os.path.dirname(os.path.dirname(output[0]))


def source_in_run(path):
    """Whether this run's config makes the file (the optional sections' results only when they are on)."""
    rel = os.path.relpath(path, RES)
    if rel.startswith("augmenters/"):
        return bool(config["augmenters"])
    if rel.startswith("frameid/"):
        return bool(config["frameid"])
    if rel.startswith("human_eval/"):
        if not config["human_eval"]:
            return False
        if rel.startswith("human_eval/human_eval"):
            return bool(human_results())
        if rel.startswith("human_eval/span_agreement"):
            return bool(span_results())
        return True
    if rel == "aligner_eval/comparison.csv":
        return bool(config["baselines"])
    if rel.startswith("aligner_eval/cross_domain/"):
        return bool(config["aligner"]["cross_domain"])
    if rel.startswith("aligner_eval/table2/"):
        return bool(config["aligner"]["evaluation"])
    if rel.startswith("aligner_eval/selftrain/"):
        return bool(
            config["aligner"]["evaluation"]
            and config["augmenters"]
            and config["augmenters"]["graph"]["selftrain"]
        )
    return True


def decode_width():
    """Candidates decoded per request: the beam, or the samples."""
    p = config["paraphraser"]
    return p["beam_size"] if p["mode"] == "beam" else p["num_samples"]


def paraphrase_stats_files():
    return [
        f"{RES}/iterations/iter{i}/shard{j}.paraphrase_stats.json"
        for i in range(1, config["iterations"] + 1)
        for j in SHARDS
    ]


def warning_inputs(wildcards):
    """The results whose warnings the warnings page collects, as named inputs."""
    summaries = [
        f"{RES}/data/import_stats.json",
        f"{RES}/report/stats.json",
        f"{RES}/filtering/filters.json",
        f"{RES}/release/export_conll.json",
        f"{RES}/report/frame_elements.json",
    ]
    inputs = {
        "paraphrase": paraphrase_stats_files(),
        "per_iteration": f"{RES}/report/per_iteration.csv",
        "aligner": aligner_input(wildcards),
    }
    if config["augmenters"]:
        summaries += [
            f"{RES}/augmenters/{name}.json"
            for name in ("paraphrastic", "lexsub", "geca", "graph")
        ]
    if config["aligner"]["evaluation"]:
        summaries.append(f"{RES}/aligner_eval/table2/summary.json")
        if config["augmenters"] and config["augmenters"]["graph"]["selftrain"]:
            summaries.append(f"{RES}/aligner_eval/selftrain/summary.json")
    if config["baselines"]:
        inputs["comparison"] = f"{RES}/aligner_eval/comparison.json"
    if config["frameid"]:
        inputs["curves"] = f"{RES}/frameid/curves.csv"
    if config["human_eval"] and human_results():
        inputs["human_eval"] = f"{RES}/human_eval/human_eval.json"
    if config["human_eval"]:
        summaries.append(f"{RES}/human_eval/task_summary.json")
    if config["human_eval"] and span_results():
        summaries.append(f"{RES}/human_eval/span_agreement.json")
    inputs["summaries"] = summaries
    return inputs


def warning_options(wildcards, input):
    """The warnings command's options for the optional inputs that this run has."""
    aligner = input.aligner[0] if input.aligner else config["aligner"]["model"]
    return " ".join(
        [
            opt("--aligner", aligner),
            opt("--comparison", input.get("comparison")),
            opt("--curves", input.get("curves")),
            opt(
                "--simulated-judgments",
                input.get("human_eval") if simulated_judgments() else None,
            ),
        ]
    )


def summary_inputs(wildcards):
    inputs = {
        "stats": f"{RES}/report/stats.json",
        "per_iteration": f"{RES}/report/per_iteration.csv",
        "filters": f"{RES}/filtering/filters.json",
        "warnings": f"{RES}/report/warnings.json",
        "paraphrase": f"{RES}/report/paraphrase_stage.csv",
        "frame_elements": f"{RES}/report/frame_elements.json",
        "aligner": aligner_input(wildcards),
    }
    if config["aligner"]["evaluation"]:
        inputs["ablation"] = f"{RES}/aligner_eval/table2/summary.json"
    if config["baselines"]:
        inputs["comparison"] = f"{RES}/aligner_eval/comparison.json"
    if config["human_eval"] and human_results():
        inputs["human_eval"] = f"{RES}/human_eval/human_eval.json"
    if config["frameid"]:
        inputs.update(
            curves=f"{RES}/frameid/curves.csv",
            frameid_baseline=f"{RES}/frameid/lexicon_baseline.json",
        )
    return inputs


def summary_options(wildcards, input):
    aligner = input.aligner[0] if input.get("aligner") else config["aligner"]["model"]
    return " ".join(
        [opt("--aligner", aligner)]
        + [
            opt(f"--{key.replace('_', '-')}", input.get(key))
            for key in (
                "ablation",
                "comparison",
                "human_eval",
                "curves",
                "frameid_baseline",
            )
        ]
    )


# -- what ran (the dataset card and the report say it); the span-alignment task (human_eval.smk)


def is_demo():
    """A run on the bundled demo corpus (its report and card say that the numbers are mechanics only)."""
    demo = CHECKOUT / "resources" / "demo"
    inputs = [Path(p).resolve() for p in config["data"]["inputs"]]
    return bool(inputs) and all(p == demo or demo in p.parents for p in inputs)


def simulated_judgments():
    h = config["human_eval"]
    return bool(h and h["simulate"] and not h["results"])


def threshold_description(train):
    """Where the trained aligner's null threshold comes from, as aligner training decides it."""
    share = train["threshold_holdout"]
    dev = [*train["dev"], *train["word_aligned_dev"]]
    plan = threshold_plan(bool(dev), share, n_pairs=None)
    return describe_plan(plan, ", ".join(dev) or None, share)


def run_description():
    """What ran, for the report's summary and the dataset card: data, models and the main settings."""
    p, a = config["paraphraser"], config["aligner"]
    if p["train"]:
        paraphraser = f"trained in this run on {p['train']['bitext']} (the paper's architecture, d_model {p['train']['d_model']})"
    else:
        paraphraser = p["model"]
    decoding = (
        f"beam {p['beam_size']}, top {p['return_top']} aligned"
        if p["mode"] == "beam"
        else f"top-k sampling (k {p['top_k']}), {p['num_samples']} samples"
    )
    if a["model"]:
        aligner = f"{a['model']} (its kind in its config.json)"
    else:
        data = (
            ", ".join([*a["train"]["instances"], *a["train"]["word_aligned"]])
            or f"instances made from {a['train']['bitext']}"
        )
        aligner = f"{a['kind']} kind, trained in this run on {data} (null threshold {threshold_description(a['train'])})"
    return {
        "run_name": config["run_name"],
        "inputs": config["data"]["inputs"],
        "format": config["data"]["format"],
        "seeds_mode": config["seeds"]["mode"],
        "iterations": config["iterations"],
        "n_shards": config["n_shards"],
        "paraphraser": paraphraser,
        "paraphraser_model": None if p["train"] else p["model"],
        "paraphraser_bitext": p["train"]["bitext"] if p["train"] else None,
        "decoding": decoding,
        "aligner": aligner,
        "aligner_kind": None if a["model"] else a["kind"],
        "aligner_corpora": aligner_corpora(),
        "encoder": a["encoder"],
        "frame_elements": {
            k: config["frame_elements"][k] for k in ("mode", "select", "require")
        },
        "demo": is_demo(),
        "simulated_judgments": simulated_judgments(),
    }


def aligner_corpora():
    """Every file the run's aligner trains or tunes on (the dataset card gives each its licence)."""
    train = config["aligner"]["train"]
    if config["aligner"]["model"] or not train:
        return []
    given = [*train["instances"], *train["word_aligned"]]
    files = given or [train["bitext"]]
    files += [*train["dev"], *train["word_aligned_dev"], *train["phrase_pairs"]]
    files += [*train["extra_instances"], *train["pretrain"]]
    files += [train["synthetic_lexicon"]] if train["synthetic_lexicon"] else []
    return list(dict.fromkeys(files))


def run_option():
    """``--run JSON``: the run's description for a command."""
    return f"--run {shlex.quote(json.dumps(run_description()))}"


def span_results(wildcards=None):
    """The span-alignment answers: the user's, the simulated ones (demo), or None."""
    h = config["human_eval"]
    if h["span_results"]:
        return h["span_results"]
    return f"{RES}/human_eval/span_results.simulated.csv" if h["simulate"] else None


def span_import_inputs(wildcards):
    h = config["human_eval"]
    return [span_results()] if h["simulate"] and not h["span_results"] else []


# -- models: a trained artifact of this run, or a name/path given in the config


def paraphraser_model(wildcards=None):
    if config["paraphraser"]["train"]:
        return f"{RES}/models/paraphraser"
    if not config["paraphraser"]["model"]:
        raise ValueError("config: set paraphraser.model or paraphraser.train")
    return config["paraphraser"]["model"]


def paraphraser_input(wildcards):
    return [f"{RES}/models/paraphraser"] if config["paraphraser"]["train"] else []


def aligner_model(wildcards=None):
    return config["aligner"]["model"] or f"{RES}/models/aligner"


def aligner_input(wildcards):
    return [] if config["aligner"]["model"] else [f"{RES}/models/aligner"]


def made_instances():
    return f"{RES}/models/aligner_instances.jsonl"


def made_pairs():
    return f"{RES}/models/aligner_pairs.json"


def aligner_bitext(wildcards):
    return config["aligner"]["train"]["bitext"]


def word_aligned_corpora():
    """aligner.train's word-aligned corpora (training and dev) by name: the file name up to its first dot
    (preflight refuses two of one name), which names their span instances made in the run.
    """
    train = config["aligner"]["train"]
    if not train:
        return {}
    files = [*train["word_aligned"], *train["word_aligned_dev"]]
    return {corpus_name(path): path for path in files}


def made_word_aligned(path):
    """The span instances rule import_word_aligned makes from a word-aligned corpus."""
    return f"{RES}/models/word_aligned/{corpus_name(path)}.spans.jsonl"


def word_aligned_file(wildcards):
    return word_aligned_corpora()[wildcards.corpus]


def aligner_training_files(wildcards=None):
    """The aligner's training instances: the config's files and those made from its word-aligned
    corpora, or (neither given) those made from its bitext."""
    train = config["aligner"]["train"]
    files = [*train["instances"], *map(made_word_aligned, train["word_aligned"])]
    return files or [made_instances()]


def aligner_training_instances(wildcards=None):
    """--instances' values, quoted."""
    return " ".join(map(shlex.quote, aligner_training_files()))


def aligner_dev_option(wildcards=None):
    """--dev: the config's dev files and the instances made from its word-aligned dev corpora."""
    train = config["aligner"]["train"]
    files = [*train["dev"], *map(made_word_aligned, train["word_aligned_dev"])]
    return " ".join(["--dev", *map(shlex.quote, files)]) if files else ""


def aligner_training_input(wildcards):
    """Made instances: those of the word-aligned corpora, or (no instances given) the bitext's, with its
    pairs for bitext_phrases. External files (dev, phrase pairs, extra and pre-training instances) are
    params, not inputs, as the comment of aligner.smk says."""
    train = config["aligner"]["train"]
    made = [
        made_word_aligned(p)
        for p in [*train["word_aligned"], *train["word_aligned_dev"]]
    ]
    if train["instances"] or train["word_aligned"]:
        return made
    return (
        made + [made_instances()] + ([made_pairs()] if train["bitext_phrases"] else [])
    )


def aligner_phrase_pairs_option(wildcards):
    """--phrase-pairs: the config's word-aligned pairs (and its word-aligned corpora, with
    word_aligned_phrases), or with bitext_phrases the bitext's diff alignment."""
    train = config["aligner"]["train"]
    if train["bitext_phrases"] and not (train["instances"] or train["word_aligned"]):
        files = [made_pairs()]
    else:
        files = [
            *train["phrase_pairs"],
            *(train["word_aligned"] if train["word_aligned_phrases"] else []),
        ]
    return " ".join(["--phrase-pairs", *map(shlex.quote, files)]) if files else ""


def made_synthetic():
    return f"{RES}/models/aligner_synthetic.jsonl"


def aligner_pretrain_input(wildcards):
    """The synthetic pre-training instances, when aligner.train.synthetic_lexicon asks for them."""
    return [made_synthetic()] if config["aligner"]["train"]["synthetic_lexicon"] else []


def aligner_pretrain_option(wildcards, input):
    """--pretrain: the config's files and the made synthetic instances."""
    files = [*config["aligner"]["train"]["pretrain"], *input.pretrain]
    return " ".join(["--pretrain", *map(shlex.quote, files)]) if files else ""


def synthetic_lexicon(wildcards):
    return config["aligner"]["train"]["synthetic_lexicon"]


# -- evaluation inputs: external data named in the config, or what this run derives


def ablation_data(wildcards=None):
    return config["aligner"]["evaluation"]["data"] or made_instances()


def ablation_inputs(wildcards):
    inputs = (
        {} if config["aligner"]["evaluation"]["data"] else {"made": made_instances()}
    )
    if wildcards.ablation == "selftrain":
        inputs["extra"] = f"{RES}/augmenters/graph.jsonl"
    return inputs


def ablation_options(wildcards, input):
    """The self-training row: the full model trained with the chain-graph instances added."""
    if wildcards.ablation == "selftrain":
        return f"--systems Df+Mx+Cue+SBCE --extra-instances {shlex.quote(str(input.extra))}"
    return ""


def systems_data(wildcards=None):
    """aligner.systems' instances: its own, aligner.evaluation's, or those made from the bitext."""
    evaluation = config["aligner"]["evaluation"]
    return (
        config["aligner"]["systems"]["data"]
        or (evaluation and evaluation["data"])
        or made_instances()
    )


def systems_pairs(wildcards=None):
    """The word-aligned pairs of aligner.systems' instances: named in the config, or made with them."""
    pairs = config["aligner"]["systems"]["gold_pairs"]
    return pairs or (made_pairs() if systems_data() == made_instances() else None)


def systems_inputs(wildcards):
    return (
        [made_instances(), made_pairs()] if systems_data() == made_instances() else []
    )


def systems_options(wildcards):
    """aligner.systems' settings as options (its cross rows' training filled in from aligner.train.cross
    when the config leaves it out: spanaug.core.aligner_settings.AlignerSection)."""
    section = config["aligner"]["systems"]
    return " ".join(
        [
            flags(section, skip=("data", "gold_pairs", "cross")),
            opt("--gold-pairs", systems_pairs()),
            opt("--cross", json.dumps(section["cross"]) if section["cross"] else None),
        ]
    )


def cross_domain_options(wildcards):
    """aligner.cross_domain's settings as options (its cross rows' training filled in from
    aligner.train.cross when the config leaves it out: spanaug.core.aligner_settings.AlignerSection).
    """
    section = config["aligner"]["cross_domain"]
    return " ".join(
        [
            flags(section, skip=("cross",)),
            opt("--cross", json.dumps(section["cross"]) if section["cross"] else None),
        ]
    )


def baseline_instances(wildcards=None):
    return config["baselines"]["instances"] or made_instances()


def baseline_pairs(wildcards=None):
    return config["baselines"]["gold_pairs"] or made_pairs()


def baseline_inputs(wildcards):
    """The instances/pairs made from the aligner's bitext, when baselines names no external data."""
    b = config["baselines"]
    return (
        [] if b["instances"] and b["gold_pairs"] else [made_instances(), made_pairs()]
    )


def human_results(wildcards=None):
    """The crowd results file: the user's, the simulated one (demo), or None."""
    h = config["human_eval"]
    if h["results"]:
        return h["results"]
    return f"{RES}/human_eval/results.simulated.csv" if h["simulate"] else None


def human_import_inputs(wildcards):
    h = config["human_eval"]
    return [human_results()] if h["simulate"] and not h["results"] else []


def judgments_input(wildcards):
    """The imported judgments that train the neural filter, when there are any."""
    return (
        [f"{RES}/human_eval/judgments.csv"]
        if config["human_eval"] and human_results()
        else []
    )


def judgments_option(wildcards, input):
    return opt("--judgments", input.judgments[0] if input.judgments else None)


def framenet_definitions_option():
    """Frame definitions for the annotation task, when the corpus is a FrameNet release."""
    data = config["data"]
    return opt(
        "--framenet", data["inputs"][0] if data["format"] == "framenet" else None
    )


def augmenter_filter_options(name):
    """A params function: ``--filter NAME`` for an augmenter, with the run's filter definitions."""

    def options(wildcards):
        return " ".join(
            [
                opt("--filter", config["augmenters"][name]["filter"]),
                flags(config["filtering"], keys=("filters",)),
            ]
        )

    return options


def out_dir(wildcards, output):
    """The folder of a rule's first output (commands that write several files into one)."""
    return os.path.dirname(output[0])


# -- the Frame ID experiment: the user's splits, or the imported corpus split by document


def _frameid_file(part):
    f = config["frameid"]
    if f["train"]:
        return f[part] or []
    return f"{RES}/frameid/split/{part}.parquet"


def frameid_pool(wildcards=None):
    """The Frame ID training pool (GECA learns its templates there too); with frameid off, GECA
    learns from the imported corpus instead."""
    if not config["frameid"]:
        return f"{RES}/data/sentences.parquet"
    return _frameid_file("train")


def frameid_test(wildcards=None):
    if config["frameid"]["train"] and not config["frameid"]["test"]:
        raise ValueError("config: frameid.train is set, so frameid.test must be too")
    return _frameid_file("test")


def frameid_point_inputs(wildcards):
    inputs = {"train": frameid_pool(), "test": frameid_test()}
    dev = _frameid_file("dev")
    if dev:
        inputs["dev"] = dev
    if wildcards.augmenter in ("paraphrastic", "lexsub"):
        inputs["examples"] = f"{RES}/augmenters/{wildcards.augmenter}.parquet"
    return inputs


def frameid_point_files(wildcards, input):
    return " ".join(
        [opt("--dev", input.get("dev")), opt("--examples", input.get("examples"))]
    )


def geca_window_option(wildcards):
    """GECA's window for the experiment's GECA points (the command's default when augmenters are off)."""
    return opt(
        "--geca-window",
        config["augmenters"]["geca"]["window"] if config["augmenters"] else None,
    )


def frameid_augmenters():
    """The augmenters Figure 8 compares: with the augmenters section off (null), only GECA, which the
    experiment runs on each sample itself, still has examples."""
    f = config["frameid"]
    if not f:
        return []
    return (
        f["augmenters"]
        if config["augmenters"]
        else [a for a in f["augmenters"] if a == "geca"]
    )


def frameid_points(wildcards=None):
    f = config["frameid"]
    if not f:  # the experiment is off; rule frameid_curves is never asked for
        return []
    return [
        f"{RES}/frameid/points/{augmenter}/f{float(fraction)}.s{seed}.json"
        for augmenter in ["none", *frameid_augmenters()]
        for fraction in f["fractions"]
        for seed in f["seeds"]
    ]


# -- software: each rule's conda environment (--sdm conda), generated from pyproject.toml (make envs)


def tagger_env(spec):
    """The conda environment for POS tagging with ``spec`` (spaCy's for a spaCy model, else the CPU one)."""
    return (
        "../../envs/spacy.yaml"
        if spec and spec.startswith("spacy:")
        else "../../envs/cpu.yaml"
    )


# -- resources: GPU rules ask SLURM for gres/memory/runtime from config; CPU rules for memory/runtime


def job_resources(kind):
    r = config["resources"][kind]
    out = dict(mem_mb=r["mem_mb"], runtime=r["runtime"], cpus_per_task=r["cpus"])
    if kind == "gpu":
        out["gpu"] = r["gpus"]
    if r["gpus"]:
        out["gres"] = f"gpu:{r['gpus']}"
    if r["slurm_partition"]:
        out["slurm_partition"] = r["slurm_partition"]
    return out


GPU = job_resources("gpu")
CPU = job_resources("cpu")
GPU_THREADS = config["resources"]["gpu"]["cpus"]
CPU_THREADS = config["resources"]["cpu"]["cpus"]


# -- priorities: when more jobs are ready than there are slots, the critical path goes first


# Every iteration waits for the seeds and both models; evaluations, augmenters and reports only fill
# the gaps (a cut-down production run on 2 cores started train_aligner 18.5 minutes late because
# evaluation jobs had taken the slots). Rules not named here keep Snakemake's default, 0.
PRIORITIES = {
    "import_corpus": 30,
    "select_seeds": 30,
    "shard_seeds": 30,
    "make_alignment_instances": 20,
    "make_synthetic_instances": 20,
    "train_aligner": 20,
    "train_paraphraser": 20,
    "expand_constraints": 10,
    "paraphrase": 10,
    "align": 10,
    "select_best": 10,
    "gather_iteration": 10,
    "assemble": 10,
}


# On SLURM, Snakemake submits every ready job at once, and the cluster runs them in its own order
# (first come, first served under priority/basic): an evaluation submitted before train_aligner
# was ready took the slot. So each job also asks SLURM for a lower priority, --nice, 1,000 per
# point its rule is below the top of PRIORITIES; a level (10 points) outweighs any difference in submission
# order a run can make (a later job only loses one point per earlier job under priority/basic).
NICE_STEP = 1_000


def set_priorities():
    """Give the rules of PRIORITIES their priority, and every rule the SLURM --nice that goes with
    its priority (the Snakefile calls it once every rule exists). A rule's own slurm_extra
    (--set-resources) is left as it is.

    Through ``rules``, so the names are this workflow's own also when it is used as a module.
    """
    for name, priority in PRIORITIES.items():
        getattr(rules, name).rule.priority = priority
    top = max(PRIORITIES.values())
    for each in workflow.rules:
        nice = NICE_STEP * (top - each.priority)
        if nice:
            each.resources.setdefault("slurm_extra", f"--nice={nice}")


# Jobs (on SLURM, a Snakemake of their own per job) skip what the main process has checked.
if workflow.is_main_process:
    preflight_check()
    tidy_workdir()
    dry_run_notes()
