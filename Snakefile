# spanaug: iterative paraphrastic augmentation of span-labelled data (Culkin et al., TACL 2021).
#   snakemake --profile profiles/local                            # production defaults (config.yaml)
#   snakemake --profile profiles/local --configfile config/demo.yaml
from snakemake.utils import min_version

min_version("9.0")

# config.yaml holds the production defaults; a --configfile given on the command line replaces it
# whole (rather than being merged into it), so each config file is complete and self-describing.
if not config:

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/constraints.smk"
include: "workflow/rules/paraphrase.smk"
include: "workflow/rules/align.smk"
include: "workflow/rules/baselines.smk"
include: "workflow/rules/augment.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/filtering.smk"
include: "workflow/rules/augmenters.smk"
include: "workflow/rules/frameid.smk"


rule all:
    input:
        final_outputs(),
    default_target: True
