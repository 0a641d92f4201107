# Filtering (Table 4 heuristics, neural P/R-classifiers). Judgments come from the human-evaluation
# loop (human_eval.smk) when it ran; without them the neural filter is skipped and its columns stay null.


rule filter_outputs:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
        judgments=planned("judgments_input"),
    output:
        table=f"{RES}/filtering/filters.csv",
        scored=f"{RES}/filtering/scored.parquet",
        summary=f"{RES}/filtering/filters.json",
    log:
        f"{LOGS}/filter_outputs.log",
    benchmark:
        f"{BENCH}/filter_outputs.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        out_dir=out_dir,
        judgments=input_options("judgments"),
        options=flags(config["filtering"]),
    shell:
        "spanaug filter --augmented {input.augmented:q} --seeds {input.seeds:q} --out-dir {params.out_dir:q}"
        " {params.judgments} {params.options} > {log:q} 2>&1"
