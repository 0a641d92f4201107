# The paraphraser: optionally trained here (the paper's architecture), then constrained decoding.
# The bitext is a param, not an input (external data; see align.smk).
P = config["paraphraser"]


rule train_paraphraser:
    output:
        directory(f"{RES}/models/paraphraser"),
    params:
        bitext=(P.get("train") or {}).get("bitext"),
        opts=" ".join(
            opt(f"--{k.replace('_', '-')}", v) for k, v in (P.get("train") or {}).items() if k != "bitext"
        ),
        device=P["device"],
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/train_paraphraser.log",
    benchmark:
        f"{BENCH}/train_paraphraser.tsv"
    shell:
        "{SPANAUG} paraphraser train --bitext {params.bitext} --out {output} {params.opts}"
        " --device {params.device} > {log} 2>&1"


rule paraphrase:
    input:
        requests=rules.expand_constraints.output,
        model=paraphraser_input,
    output:
        paraphrases=f"{RES}/iterations/iter{{i}}/shard{{j}}.paraphrases.parquet",
        stats=f"{RES}/iterations/iter{{i}}/shard{{j}}.paraphrase_stats.json",
    params:
        model=paraphraser_model,
        prefix=shlex.quote(P["prefix"]),
        opts=" ".join(
            [
                f"--backend {P['backend']} --mode {P['mode']} --beam-size {P['beam_size']} --return-top {P['return_top']}",
                f"--top-k {P['top_k']} --num-samples {P['num_samples']} --seed {P['seed']}",
                opt("--batch-size", P.get("batch_size")),
                opt("--max-new-tokens", P.get("max_new_tokens")),
                f"--device {P['device']} --dtype {P['dtype']}",
            ]
        ),
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/iter{{i}}/paraphrase.shard{{j}}.log",
    benchmark:
        f"{BENCH}/iter{{i}}/paraphrase.shard{{j}}.tsv"
    shell:
        "{SPANAUG} paraphrase --requests {input.requests} --out {output.paraphrases}"
        " --stats {output.stats} --model {params.model} --prefix {params.prefix} {params.opts} > {log} 2>&1"
