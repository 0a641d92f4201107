# The paraphraser: optionally trained here (the paper's architecture), then constrained decoding.
# Its bitext is an input: a changed bitext retrains it.


rule train_paraphraser:
    input:
        bitext=planned("paraphraser_bitext"),
    output:
        directory(f"{RES}/models/paraphraser"),
    log:
        f"{LOGS}/train_paraphraser.log",
    benchmark:
        f"{BENCH}/train_paraphraser.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        options=section_options("paraphraser", "train", skip=("bitext",)),
        device=config["device"],
    shell:
        "spanaug paraphraser train --bitext {input.bitext:q} --out {output:q} {params.options} --device {params.device} > {log:q} 2>&1"


# shard_jobs: chain runs this stage inside iterate_shard (iterations.smk).
if PLAN.per_stage_jobs():

    rule paraphrase:
        input:
            requests=rules.expand_constraints.output,
            model=planned("paraphraser_model_input"),
        output:
            paraphrases=PLAN.shard_pattern("paraphrases"),
            stats=PLAN.shard_pattern("paraphrase_stats"),
        log:
            f"{LOGS}/iter{{i}}/paraphrase.shard{{j}}.log",
        benchmark:
            f"{BENCH}/iter{{i}}/paraphrase.shard{{j}}.tsv"
        conda:
            "../../envs/gpu.yaml"
        threads: GPU_THREADS
        resources:
            **GPU,
        params:
            model=planned("paraphraser_model"),
            options=STAGE["paraphrase"],
            device=config["device"],
        shell:
            "spanaug paraphrase --requests {input.requests:q} --out {output.paraphrases:q} --stats {output.stats:q}"
            " --model {params.model:q} {params.options} --device {params.device} > {log:q} 2>&1"
