# Constraint expansion: iteration i-1's outputs become iteration i's requests (one job per shard).


rule expand_constraints:
    input:
        chain=previous_chain,
    output:
        f"{RES}/iterations/iter{{i}}/shard{{j}}.requests.parquet",
    params:
        case="" if config["constraints"]["case_variants"] else "--no-case",
        inflections="" if config["constraints"]["inflections"] else "--no-inflections",
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/iter{{i}}/expand_constraints.shard{{j}}.log",
    benchmark:
        f"{BENCH}/iter{{i}}/expand_constraints.shard{{j}}.tsv"
    shell:
        "{SPANAUG} constraints --chain {input.chain} --out {output} --iteration {wildcards.i}"
        " {params.case} {params.inflections} > {log} 2>&1"
