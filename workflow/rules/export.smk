# The augmented dataset for release: open-SESAME CoNLL for Frame ID and SRL tools, and a dataset
# card beside a copy of the Parquet files (the folder loads with Hugging Face datasets).


rule export_conll:
    input:
        augmented=rules.assemble.output,
    output:
        conll=f"{RES}/release/augmented.conll",
        ids=f"{RES}/release/augmented.conll.ids.tsv",
        summary=f"{RES}/release/export_conll.json",
    log:
        f"{LOGS}/export_conll.log",
    benchmark:
        f"{BENCH}/export_conll.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug export conll --augmented {input.augmented:q} --out {output.conll:q} --out-ids {output.ids:q}"
        " --summary {output.summary:q} > {log:q} 2>&1"


rule export_card:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
        filters=rules.filter_outputs.output.summary,
        conll=rules.export_conll.output.conll,
        # the models' own records say whether they are toys (spanaug.core.provenance)
        paraphraser=planned("paraphraser_model_input"),
        aligner=planned("aligner_model_input"),
    output:
        card=f"{RES}/release/README.md",
        data=[
            f"{RES}/release/data/augmented.parquet",
            f"{RES}/release/data/seeds.parquet",
        ],
    log:
        f"{LOGS}/export_card.log",
    benchmark:
        f"{BENCH}/export_card.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        out_dir=out_dir,
        run=run_option(),
        paraphraser=input_options("paraphraser", flag="--paraphraser-model"),
        aligner=input_options("aligner", flag="--aligner-model"),
    shell:
        "spanaug export card --augmented {input.augmented:q} --seeds {input.seeds:q} --out-dir {params.out_dir:q}"
        " {params.run} --filters {input.filters:q} --conll {input.conll:q} {params.paraphraser} {params.aligner}"
        " > {log:q} 2>&1"
