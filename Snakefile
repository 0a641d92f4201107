# spanaug: iterative paraphrastic augmentation of span-labelled data (Culkin et al., TACL 2021).
#   snakemake --profile profiles/local                            # production settings (config.yaml)
#   snakemake --profile profiles/local --configfile config/demo.yaml
from snakemake.utils import min_version

min_version("9.0")

# config.yaml holds the production settings; a --configfile given on the command line replaces it
# whole (rather than being merged into it), so each config file is complete and self-describing.
if not config:

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
    input:
        final_outputs(),
    default_target: True
