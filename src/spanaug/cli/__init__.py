"""``spanaug <command>``: every pipeline stage as a plain command (the Snakemake rules call these)."""
