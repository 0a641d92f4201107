# Augmenters compared downstream: the pipeline's outputs under a filter, lexical substitution and
# GECA as Frame ID training examples; span alignments composed along chains for the aligner.
AUG = config.get("augmenters") or {}


rule augment_paraphrastic:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        examples=f"{RES}/augmenters/paraphrastic.parquet",
        counts=report(f"{RES}/augmenters/paraphrastic.json", caption="../report/augmenters.rst", category="Augmenters"),
    params:
        filters=augmenter_filter_opts("paraphrastic"),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/augment_paraphrastic.log",
    benchmark:
        f"{BENCH}/augment_paraphrastic.tsv"
    shell:
        "{SPANAUG} augment paraphrastic --augmented {input.augmented} --seeds {input.seeds} {params.filters}"
        " --out {output.examples} --counts {output.counts} > {log} 2>&1"


rule augment_lexsub:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        examples=f"{RES}/augmenters/lexsub.parquet",
        counts=report(f"{RES}/augmenters/lexsub.json", caption="../report/augmenters.rst", category="Augmenters"),
    params:
        filters=augmenter_filter_opts("lexsub"),
        tagger=(AUG.get("lexsub") or {}).get("pos_tagger", "lexicon"),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/augment_lexsub.log",
    benchmark:
        f"{BENCH}/augment_lexsub.tsv"
    shell:
        "{SPANAUG} augment lexsub --augmented {input.augmented} --seeds {input.seeds} {params.filters}"
        " --pos-tagger {params.tagger} --out {output.examples} --counts {output.counts} > {log} 2>&1"


rule augment_geca:
    input:
        train=frameid_pool,
    output:
        examples=f"{RES}/augmenters/geca.parquet",
        counts=report(f"{RES}/augmenters/geca.json", caption="../report/augmenters.rst", category="Augmenters"),
    params:
        opts=geca_opts(),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/augment_geca.log",
    benchmark:
        f"{BENCH}/augment_geca.tsv"
    shell:
        "{SPANAUG} augment geca --train {input.train} {params.opts} --out {output.examples}"
        " --counts {output.counts} > {log} 2>&1"


rule augment_graph:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        instances=f"{RES}/augmenters/graph.jsonl",
        counts=report(f"{RES}/augmenters/graph.json", caption="../report/graph.rst", category="Augmenters"),
    params:
        filters=augmenter_filter_opts("graph"),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/augment_graph.log",
    benchmark:
        f"{BENCH}/augment_graph.tsv"
    shell:
        "{SPANAUG} augment graph --augmented {input.augmented} --seeds {input.seeds} {params.filters}"
        " --out {output.instances} --counts {output.counts} > {log} 2>&1"


rule aligner_selftrain:
    input:
        made=[] if (A.get("evaluation") or {}).get("data") else rules.make_alignment_instances.output,
        extra=rules.augment_graph.output.instances,
    output:
        table=report(f"{RES}/aligner_eval/selftrain/ablation.csv", caption="../report/selftrain.rst", category="Span aligner"),
        summary=f"{RES}/aligner_eval/selftrain/summary.json",
    params:
        data=(A.get("evaluation") or {}).get("data") or rules.make_alignment_instances.output.instances,
        out_dir=f"{RES}/aligner_eval/selftrain",
        encoder=A["encoder"],
        epochs=(A.get("evaluation") or {}).get("epochs", 10),
        seed=(A.get("evaluation") or {}).get("seed", 0),
        k=AT.get("k", 5),
        device=A["device"],
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/aligner_selftrain.log",
    benchmark:
        f"{BENCH}/aligner_selftrain.tsv"
    shell:
        "{SPANAUG} align ablate --data {params.data} --encoder {params.encoder} --out-dir {params.out_dir}"
        " --systems Df+Mx+Cue+SBCE --extra-instances {input.extra} --epochs {params.epochs} --seed {params.seed}"
        " --k {params.k} --device {params.device} > {log} 2>&1"
