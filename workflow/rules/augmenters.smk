# Augmenters compared downstream: the pipeline's outputs under a filter, lexical substitution and
# GECA as Frame ID training examples; span alignments composed along chains for the aligner.


rule augment_paraphrastic:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        examples=f"{RES}/augmenters/paraphrastic.parquet",
        counts=f"{RES}/augmenters/paraphrastic.json",
    log:
        f"{LOGS}/augment_paraphrastic.log",
    benchmark:
        f"{BENCH}/augment_paraphrastic.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        filters=augmenter_filter_options("paraphrastic"),
    shell:
        "spanaug augment paraphrastic --augmented {input.augmented:q} --seeds {input.seeds:q} {params.filters}"
        " --out {output.examples:q} --counts {output.counts:q} > {log:q} 2>&1"


rule augment_lexsub:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        examples=f"{RES}/augmenters/lexsub.parquet",
        counts=f"{RES}/augmenters/lexsub.json",
    log:
        f"{LOGS}/augment_lexsub.log",
    benchmark:
        f"{BENCH}/augment_lexsub.tsv"
    conda:
        tagger_env(
            config["augmenters"]["lexsub"]["pos_tagger"]
            if config["augmenters"]
            else None
        )
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        filters=augmenter_filter_options("lexsub"),
        tagger=section_options("augmenters", "lexsub", skip=("filter",)),
    shell:
        "spanaug augment lexsub --augmented {input.augmented:q} --seeds {input.seeds:q} {params.filters} {params.tagger}"
        " --out {output.examples:q} --counts {output.counts:q} > {log:q} 2>&1"


rule augment_geca:
    input:
        train=planned("frameid_pool"),
    output:
        examples=f"{RES}/augmenters/geca.parquet",
        counts=f"{RES}/augmenters/geca.json",
    log:
        f"{LOGS}/augment_geca.log",
    benchmark:
        f"{BENCH}/augment_geca.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=section_options("augmenters", "geca"),
    shell:
        "spanaug augment geca --train {input.train:q} {params.options} --out {output.examples:q}"
        " --counts {output.counts:q} > {log:q} 2>&1"


rule augment_graph:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        instances=f"{RES}/augmenters/graph.jsonl",
        counts=f"{RES}/augmenters/graph.json",
    log:
        f"{LOGS}/augment_graph.log",
    benchmark:
        f"{BENCH}/augment_graph.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        filters=augmenter_filter_options("graph"),
    shell:
        "spanaug augment graph --augmented {input.augmented:q} --seeds {input.seeds:q} {params.filters}"
        " --out {output.instances:q} --counts {output.counts:q} > {log:q} 2>&1"
