# Best beam per seed (the iteration's output shard), per-iteration gathers and the final dataset.


rule select_best:
    input:
        aligned=rules.align.output,
    output:
        f"{RES}/iterations/iter{{i}}/shard{{j}}.chain.parquet",
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/iter{{i}}/select_best.shard{{j}}.log",
    benchmark:
        f"{BENCH}/iter{{i}}/select_best.shard{{j}}.tsv"
    shell:
        "{SPANAUG} select --aligned {input.aligned} --out {output} > {log} 2>&1"


rule gather_iteration:
    input:
        lambda wc: [chain_shard(wc.i, j) for j in SHARDS],
    output:
        f"{RES}/iterations/iter{{i}}.chain.parquet",
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/iter{{i}}/gather_iteration.log",
    shell:
        "{SPANAUG} gather --schema chain --inputs {input} --out {output} > {log} 2>&1"


rule assemble:
    input:
        iteration_outputs(),
    output:
        f"{RES}/augmented.parquet",
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/assemble.log",
    benchmark:
        f"{BENCH}/assemble.tsv"
    shell:
        "{SPANAUG} assemble --inputs {input} --out {output} > {log} 2>&1"
