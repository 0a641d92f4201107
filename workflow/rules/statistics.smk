# Intrinsic statistics of the augmented dataset, into the HTML report.


rule intrinsic_stats:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
        lexicon=planned("stats_lexicon"),
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
        options=flags(config["stats"], skip=("lexicon",)),
        lexicon=input_options("lexicon"),
    shell:
        "spanaug stats --augmented {input.augmented:q} --seeds {input.seeds:q} --out-json {output.json:q}"
        " --out-csv {output.csv:q} --out-plot {output.plot:q} --out-dist-plot {output.dists:q} {params.options} {params.lexicon} > {log:q} 2>&1"
