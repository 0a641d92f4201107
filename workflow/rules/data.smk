# Import the corpus, choose the seeds and split them into iteration-0 shards.


rule import_corpus:
    output:
        sentences=f"{RES}/data/sentences.parquet",
        stats=report(f"{RES}/data/import_stats.json", caption="../report/import_stats.rst", category="Input corpus"),
    params:
        fmt=config["data"]["format"],
        inputs=" ".join(shlex.quote(p) for p in config["data"]["inputs"]),
        max_tokens=opt("--max-tokens", config["data"].get("max_tokens")),
        parts=" ".join(config["data"]["parts"]),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/import_corpus.log",
    benchmark:
        f"{BENCH}/import_corpus.tsv"
    shell:
        "{SPANAUG} import {params.fmt} --input {params.inputs} --out {output.sentences}"
        " --stats {output.stats} {params.max_tokens} --parts {params.parts} > {log} 2>&1"


rule select_seeds:
    input:
        sentences=rules.import_corpus.output.sentences,
    output:
        seeds=f"{RES}/data/seeds.parquet",
        report=report(f"{RES}/data/seeds_report.json", caption="../report/seeds.rst", category="Input corpus"),
    params:
        mode=config["seeds"]["mode"],
        n_frames=config["seeds"]["n_frames"],
        lus=config["seeds"]["lus_per_frame"],
        per_lu=config["seeds"]["annotations_per_lu"],
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/select_seeds.log",
    benchmark:
        f"{BENCH}/select_seeds.tsv"
    shell:
        "{SPANAUG} seeds --sentences {input.sentences} --out {output.seeds} --report {output.report}"
        " --mode {params.mode} --n-frames {params.n_frames} --lus-per-frame {params.lus}"
        " --per-lu {params.per_lu} > {log} 2>&1"


rule shard_seeds:
    input:
        seeds=rules.select_seeds.output.seeds,
    output:
        [chain_shard(0, j) for j in SHARDS],
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/shard_seeds.log",
    benchmark:
        f"{BENCH}/shard_seeds.tsv"
    shell:
        "{SPANAUG} shard --seeds {input.seeds} --out {output} > {log} 2>&1"
