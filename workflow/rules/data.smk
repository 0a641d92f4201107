# The corpus and the seeds: import, seed selection, iteration-0 shards.


rule import_corpus:
    input:
        corpus=planned("corpus_inputs"),
    output:
        sentences=f"{RES}/data/sentences.parquet",
        stats=f"{RES}/data/import_stats.json",
    log:
        f"{LOGS}/import_corpus.log",
    benchmark:
        f"{BENCH}/import_corpus.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=flags(config["data"], skip=("inputs",)),
    shell:
        "spanaug import --inputs {input.corpus:q} --out {output.sentences:q} --stats {output.stats:q} {params.options} > {log:q} 2>&1"


rule select_seeds:
    input:
        sentences=rules.import_corpus.output.sentences,
    output:
        seeds=f"{RES}/data/seeds.parquet",
        report=f"{RES}/data/seeds_report.json",
    log:
        f"{LOGS}/select_seeds.log",
    benchmark:
        f"{BENCH}/select_seeds.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=flags(config["seeds"]),
    shell:
        "spanaug seeds --sentences {input.sentences:q} --out {output.seeds:q} --report {output.report:q}"
        " {params.options} > {log:q} 2>&1"


rule shard_seeds:
    input:
        seeds=rules.select_seeds.output.seeds,
    output:
        [PLAN.chain_shard(0, j) for j in SHARDS],
    log:
        f"{LOGS}/shard_seeds.log",
    benchmark:
        f"{BENCH}/shard_seeds.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug shard --seeds {input.seeds:q} --out {output:q} > {log:q} 2>&1"
