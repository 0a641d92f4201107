# spanaug: iterative paraphrastic augmentation of span-labelled data (Culkin et al., TACL 2021).
#   snakemake --profile profiles/local                            # production settings (config.yaml)
#   snakemake --profile profiles/local --configfile config/demo.yaml
from snakemake.utils import min_version

min_version("9.0")

# config.yaml holds the production settings. Config files given with --configfile replace it (several
# are merged in order, nested keys too: a small override file on top of a complete one), and
# --config KEY=VALUE overrides either.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


# Rule files follow the package: the pipeline, its evaluation, the downstream comparison, the release
# and the report's own pages.
include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/iterations.smk"
include: "workflow/rules/paraphraser.smk"
include: "workflow/rules/aligner.smk"
include: "workflow/rules/statistics.smk"
include: "workflow/rules/aligner_evaluation.smk"
include: "workflow/rules/filtering.smk"
include: "workflow/rules/human_eval.smk"
include: "workflow/rules/augmenters.smk"
include: "workflow/rules/frameid.smk"
include: "workflow/rules/export.smk"
include: "workflow/rules/report.smk"


wildcard_constraints:
    i=r"\d+",
    j=r"\d{3}",
    augmenter=r"none|paraphrastic|lexsub|geca",
    fraction=r"[0-9]*\.?[0-9]+",
    seed=r"\d+",
    ablation=r"table2|selftrain",


localrules:
    all,
    shard_seeds,
    gather_iteration,
    assemble,
    human_simulate,
    span_task_simulate,
    frameid_curves,
    report_warnings,
    report_chains,
    report_summary,


rule all:
    default_target: True
    input:
        final_outputs(),


# When jobs are about to run: stop if the config changed under this run_name, else record it; note
# that a Snakemake runs here (stale-lock detection from other hosts). See src/spanaug/workflow/rundir.py.
onstart:
    guard_results()


onsuccess:
    rundir.unregister_owner(".")


onerror:
    rundir.unregister_owner(".")
