# The workflow's glue: the config validated and filled in, the checks that run before the DAG, and the
# functions the rules call. Every decision (which files a job reads, which results a config makes, what
# ran) is spanaug.workflow.plan's, written once and tested there: the functions here only call it.
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
from spanaug.workflow import envs, plan, preflight, rundir


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

# Rules call the installed `spanaug` console script: the one installed beside the Snakemake that runs
# them, put first on PATH, so `.venv-gpu/bin/snakemake ...` (docs/gpus.md) runs every rule on that
# environment's CUDA torch with no virtual environment activated, and whatever else is activated
# (a CPU-only .venv) does not shadow it. A SLURM job runs Snakemake from the same installation
# (sys.executable), which sets the same prefix there. With `--sdm conda` each rule's environment puts
# its own first on PATH (an environment installs this checkout, found through SPANAUG_SOURCE: see
# envs/*.yaml), so this one only comes after it.
CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
_HERE = shlex.quote(str(Path(sys.executable).parent))
shell.prefix(
    f'set -euo pipefail; export PATH="$PATH":{_HERE}; '
    if CONDA
    else f'set -euo pipefail; export PATH={_HERE}:"$PATH"; '
)
os.environ.setdefault(envs.SOURCE_VAR, str(CHECKOUT))

RES = f"{config['results_dir']}/{config['run_name']}"
PLAN = plan.Plan(RUN, RES)


def preflight_check():
    """Before the DAG: every file, model, tagger and dependency the config names (spanaug.workflow.preflight),
    and a warning when the GPU rules will run without a GPU.

    SPANAUG_PREFLIGHT=warn reports the problems without stopping. Rules take the data as inputs, so
    Snakemake then stops at the first missing one, naming it (spanaug.workflow.plan.make_stand_ins
    makes empty stand-ins, to plan a run whose data are elsewhere).
    """
    has_module = (
        envs.conda_has_module(CHECKOUT / "envs") if CONDA else preflight.installed
    )
    problems = preflight.check_run(RUN, has_module)
    # GPU rules that will run without a GPU, an aligner that cannot place frame elements: said before
    # the first job. With --sdm conda the jobs import the torch of their own environments, which this
    # process cannot see.
    for warning in preflight.run_warnings(
        RUN, None if CONDA else preflight.installed_torch()
    ):
        logger.warning(f"spanaug: warning: {warning}")
    compared = PLAN.frameid_augmenters()
    if RUN.frameid and compared != RUN.frameid.augmenters:
        logger.info(
            f"augmenters: null (off), so Figure 8 compares none with {', '.join(compared) or 'nothing else'}"
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
SHARDS = PLAN.shards()
flags, opt, tagger_env = plan.flags, plan.opt, plan.tagger_env
# The iteration stages' settings as options, for the per-stage rules and iterate_shard alike.
STAGE = plan.stage_options(RUN)


# -- input and params functions: each calls the plan (or reads the job's inputs back as options)


def planned(method, *names):
    """An input or params function: the plan's ``method``, given the job's wildcards ``names``."""

    def function(wildcards):
        return getattr(PLAN, method)(*(wildcards[name] for name in names))

    function.__name__ = method
    return function


def input_options(*keys, flag=None):
    """A params function: the job's named inputs ``keys`` as options (``--phrase-pairs A B``); an
    empty one is left out."""

    def options(wildcards, input):
        return " ".join(
            plan.files_option(flag or f"--{key.replace('_', '-')}", input.get(key, []))
            for key in keys
        )

    return options


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
    return opt("--k", RUN.aligner.train.k if RUN.aligner.train else None)


def ablation_options(wildcards, input):
    """The self-training row: the full model trained with the chain-graph instances added."""
    if wildcards.ablation == "selftrain":
        return f"--systems Df+Mx+Cue+SBCE --extra-instances {shlex.quote(str(input.extra))}"
    return ""


def cross_options(section):
    """A section's settings and its cross rows' training (filled in from aligner.train.cross when the
    config leaves it out: spanaug.core.aligner_settings.AlignerSection) as options; files are inputs.
    """

    def options(wildcards):
        values = config["aligner"][section]
        return " ".join(
            [
                flags(values, skip=("data", "gold_pairs", "synthetic", "cross")),
                opt(
                    "--cross", json.dumps(values["cross"]) if values["cross"] else None
                ),
            ]
        )

    return options


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


def geca_window_option(wildcards):
    """GECA's window for the experiment's GECA points (the command's default when augmenters are off)."""
    geca = RUN.augmenters.geca.window if RUN.augmenters else None
    return opt("--geca-window", geca)


def run_option(wildcards=None):
    """``--run JSON``: the run's description for a command."""
    return f"--run {shlex.quote(json.dumps(PLAN.run_description(CHECKOUT)))}"


def out_dir(wildcards, output):
    """The folder of a rule's first output (commands that write several files into one)."""
    return os.path.dirname(output[0])


def two_levels_up(wildcards, output):
    """The folder two levels above a rule's first output: the run's, from an output of report/ (sources
    on the warnings page are relative to it); the iterations', from one of iterations/iter1/.
    """
    return os.path.dirname(os.path.dirname(output[0]))


# -- resources: GPU rules ask SLURM for gres/memory/runtime from config; CPU rules for memory/runtime

GPU = plan.job_resources(RUN, "gpu")
CPU = plan.job_resources(RUN, "cpu")
GPU_THREADS = RUN.resources.gpu.cpus
CPU_THREADS = RUN.resources.cpu.cpus


def set_priorities():
    """Give the rules of plan.PRIORITIES their priority (the critical path first when more jobs are
    ready than there are slots), and every rule the SLURM --nice that goes with it (the Snakefile
    calls it once every rule exists). A rule's own slurm_extra (--set-resources) is left as it is.

    Through ``rules``, so the names are this workflow's own also when it is used as a module.
    """
    for name, priority in plan.PRIORITIES.items():
        if rules.has(name):  # shard_jobs picks the iteration's rules
            getattr(rules, name).rule.priority = priority
    for each in workflow.rules:
        if plan.nice(each.priority):
            each.resources.setdefault(
                "slurm_extra", f"--nice={plan.nice(each.priority)}"
            )


# Jobs (on SLURM, a Snakemake of their own per job) skip what the main process has checked.
if workflow.is_main_process:
    preflight_check()
    tidy_workdir()
    dry_run_notes()
