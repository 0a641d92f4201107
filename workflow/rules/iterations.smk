# One iteration, shard by shard: constraint expansion, the best-aligned beam per seed; then the
# per-iteration gathers and the released dataset. (Paraphrasing and alignment: paraphraser.smk, aligner.smk.)
# With shard_jobs: chain, one job per shard (iterate_shard) runs all four stages of every iteration instead.
#
# Every per-stage rule here is local: on a cluster it runs in the head's Snakemake, not in a job of its own.
# Expanding and selecting are a few seconds of CPU for a production shard (scripts/bench_scale.py:
# 0.7 s and 1.5 s for 24,800 rows, under 0.5 GiB). Submitted, each would hold a GPU idle (inside the
# shard's grouped paraphrase-and-align job, profiles/slurm) or wait in the queue (on its own) for
# longer than its work, and pay a Snakemake start-up and a process's imports on the compute node.


if PLAN.per_stage_jobs():

    rule expand_constraints:
        input:
            chain=planned("previous_chain", "i", "j"),
        output:
            PLAN.shard_pattern("requests"),
        log:
            f"{LOGS}/iter{{i}}/expand_constraints.shard{{j}}.log",
        benchmark:
            f"{BENCH}/iter{{i}}/expand_constraints.shard{{j}}.tsv"
        localrule: True
        conda:
            "../../envs/cpu.yaml"
        threads: CPU_THREADS
        resources:
            **CPU,
        params:
            options=STAGE["constraints"],
        shell:
            "spanaug constraints --chain {input.chain:q} --out {output:q} --iteration {wildcards.i} {params.options}"
            " > {log:q} 2>&1"

    rule select_best:
        input:
            aligned=PLAN.shard_pattern("aligned"),
        output:
            chain=PLAN.shard_pattern("chain"),
            stats=PLAN.shard_pattern("select_stats"),
        log:
            f"{LOGS}/iter{{i}}/select_best.shard{{j}}.log",
        benchmark:
            f"{BENCH}/iter{{i}}/select_best.shard{{j}}.tsv"
        localrule: True
        conda:
            "../../envs/cpu.yaml"
        threads: CPU_THREADS
        resources:
            **CPU,
        params:
            frame_elements=STAGE["select_frame_elements"],
        shell:
            "spanaug select --aligned {input.aligned:q} --out {output.chain:q} --stats {output.stats:q}"
            " {params.frame_elements} > {log:q} 2>&1"

else:

    # shard_jobs: chain. One GPU job per shard runs every iteration's four stages, writing the files
    # the per-stage rules write, with each model loaded once (spanaug.pipeline.shard_chain).
    rule iterate_shard:
        input:
            chain=planned("seeds_chain", "j"),
            paraphraser=planned("paraphraser_model_input"),
            aligner=planned("aligner_model_input"),
        output:
            PLAN.shard_chain_outputs(),
        log:
            f"{LOGS}/iterate_shard.shard{{j}}.log",
        benchmark:
            f"{BENCH}/iterate_shard.shard{{j}}.tsv"
        conda:
            "../../envs/gpu.yaml"
        threads: GPU_THREADS
        resources:
            **GPU,
        params:
            iterations_dir=two_levels_up,
            iterations=config["iterations"],
            options=planned("iterate_options"),
            device=config["device"],
        shell:
            "spanaug iterate --chain {input.chain:q} --iterations-dir {params.iterations_dir:q} --shard {wildcards.j}"
            " --iterations {params.iterations} {params.options} --device {params.device} > {log:q} 2>&1"


rule gather_iteration:
    input:
        planned("iteration_chain_shards", "i"),
    output:
        f"{RES}/iterations/iter{{i}}.chain.parquet",
    log:
        f"{LOGS}/iter{{i}}/gather_iteration.log",
    benchmark:
        f"{BENCH}/iter{{i}}/gather_iteration.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug gather --schema chain --inputs {input:q} --out {output:q} > {log:q} 2>&1"


rule assemble:
    input:
        PLAN.iteration_outputs(),
    output:
        f"{RES}/augmented.parquet",
    log:
        f"{LOGS}/assemble.log",
    benchmark:
        f"{BENCH}/assemble.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug assemble --inputs {input:q} --out {output:q} > {log:q} 2>&1"
