# Intrinsic statistics of the augmented dataset, into the HTML report.


rule intrinsic_stats:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        json=f"{RES}/report/stats.json",
        csv=f"{RES}/report/per_iteration.csv",
        plot=report(
            f"{RES}/report/per_iteration.png",
            caption="../report/per_iteration.rst",
            category="Augmented dataset",
        ),
        dists=report(
            f"{RES}/report/span_distributions.png",
            caption="../report/span_distributions.rst",
            category="Augmented dataset",
        ),
    log:
        f"{LOGS}/intrinsic_stats.log",
    benchmark:
        f"{BENCH}/intrinsic_stats.tsv"
    conda:
        tagger_env(config["stats"]["pos_tagger"])
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=flags(config["stats"]),
    shell:
        "spanaug stats --augmented {input.augmented} --seeds {input.seeds} --out-json {output.json}"
        " --out-csv {output.csv} --out-plot {output.plot} --out-dist-plot {output.dists} {params.options} > {log} 2>&1"
