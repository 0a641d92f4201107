# The paraphraser: optionally trained here (the paper's architecture, or a pretrained model
# fine-tuned: paraphraser.train.init), then constrained decoding. Its bitext is an input, and the
# pretrained model when it is a local folder or .gguf file: a changed one retrains it. Training takes
# the paraphrase stage's settings too: a seq2seq model's prefix, a decoder-only model's prompt, and
# the held-out decoding whose chrF and BLEU go to heldout_metrics.json beside the model.


rule train_paraphraser:
    input:
        bitext=planned("paraphraser_bitext"),
        init=planned("paraphraser_init_input"),
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
        # A function: a string param's braces ({word} in paraphraser.prompt) would be read as wildcards.
        paraphrase=lambda wildcards: STAGE["paraphrase"],
        device=config["device"],
    shell:
        "spanaug paraphraser train --bitext {input.bitext:q} --out {output:q} {params.options}"
        " --paraphrase={params.paraphrase:q} --device {params.device} > {log:q} 2>&1"


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
            options=lambda wildcards: STAGE["paraphrase"],  # a function: see train_paraphraser's
            device=config["device"],
        shell:
            "spanaug paraphrase --requests {input.requests:q} --out {output.paraphrases:q} --stats {output.stats:q}"
            " --model {params.model:q} {params.options} --device {params.device} > {log:q} 2>&1"
