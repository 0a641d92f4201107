"""What the Snakemake workflow needs around its jobs: the preflight check of a run's config, the run
directory's bookkeeping (recorded config, stale locks and temporary files) and the rules' software
environments. It imports only :mod:`spanaug.core` and light libraries: Snakemake imports it while
it builds the DAG, before any job runs.
"""
