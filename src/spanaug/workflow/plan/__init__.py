"""What a run reads and makes, decided once from its config; the workflow's rules only call it.

Every file a job reads is an input of its rule, so that Snakemake reruns the jobs that read a file
whose contents changed (its mtime; and, with the default ``--rerun-triggers``, a changed set of
inputs). :meth:`Plan.external_files` lists the files outside the run that the config names, each
with its config key; the ``*_inputs`` methods say which of them, and which of the run's own
results, each rule reads.

A directory input (a FrameNet release, a model folder) reruns its readers when the directory's own
mtime changes: when an entry is added, removed or renamed into it (as ``save_pretrained`` and the
release's unpacking do), not when a file inside is rewritten in place.

Paths are relative to Snakemake's working directory. The module imports no torch: Snakemake imports
it while it builds the DAG.
"""

from spanaug.workflow.plan.files import ExternalFile, local_model, make_stand_ins
from spanaug.workflow.plan.options import (
    PRIORITIES,
    files_option,
    flags,
    job_resources,
    nice,
    opt,
    stage_options,
    tagger_env,
)
from spanaug.workflow.plan.results import (
    AUGMENTER_WILDCARD,
    AUGMENTERS,
    FRAMEID_AUGMENTERS,
    MADE_BY,
    SUMMARY_READS,
    TABLES,
    Table,
)
from spanaug.workflow.plan.run import Plan

__all__ = [
    "AUGMENTERS",
    "AUGMENTER_WILDCARD",
    "FRAMEID_AUGMENTERS",
    "MADE_BY",
    "PRIORITIES",
    "SUMMARY_READS",
    "TABLES",
    "ExternalFile",
    "Plan",
    "Table",
    "files_option",
    "flags",
    "job_resources",
    "local_model",
    "make_stand_ins",
    "nice",
    "opt",
    "stage_options",
    "tagger_env",
]
