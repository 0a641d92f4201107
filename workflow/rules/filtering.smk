# Filtering (Table 4 heuristics, neural P/R-classifiers) and the human-evaluation loop (§6.2).
# Judgments come from a crowd results file named in the config, or, in the demo only, from
# simulated annotators; without either the neural filter is skipped and its columns stay null.
F = config.get("filtering") or {}
H = config.get("human_eval") or {}


rule human_export:
    input:
        augmented=rules.assemble.output,
        sentences=rules.import_corpus.output.sentences,
    output:
        task=report(f"{RES}/human_eval/task.csv", caption="../report/human_task.rst", category="Human evaluation"),
        key=f"{RES}/human_eval/task.key.csv",
    params:
        n_items=H.get("n_items", 100),
        seed=H.get("seed", 0),
        framenet=opt("--framenet", config["data"]["inputs"][0] if config["data"]["format"] == "framenet" else None),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/human_export.log",
    shell:
        "{SPANAUG} human export --augmented {input.augmented} --sentences {input.sentences} --out-task {output.task}"
        " --out-key {output.key} --n-items {params.n_items} --seed {params.seed} {params.framenet} > {log} 2>&1"


rule human_simulate:
    input:
        key=rules.human_export.output.key,
    output:
        f"{RES}/human_eval/results.simulated.csv",
    params:
        raters=H.get("raters", 3),
        seed=H.get("seed", 0),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/human_simulate.log",
    shell:
        "{SPANAUG} human simulate --key {input.key} --out {output} --raters {params.raters} --seed {params.seed}"
        " > {log} 2>&1"


rule human_import:
    input:
        key=rules.human_export.output.key,
        simulated=[human_results()] if H.get("simulate") and not H.get("results") else [],
    output:
        summary=report(f"{RES}/human_eval/human_eval.json", caption="../report/human_eval.rst", category="Human evaluation"),
        hist=report(f"{RES}/human_eval/score_histogram.png", caption="../report/human_eval.rst", category="Human evaluation"),
        judgments=f"{RES}/human_eval/judgments.csv",
    params:
        results=human_results(),
        out_dir=f"{RES}/human_eval",
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/human_import.log",
    shell:
        "{SPANAUG} human import --results {params.results} --key {input.key} --out-dir {params.out_dir} > {log} 2>&1"


rule filter_outputs:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
        judgments=judgments_input,
    output:
        table=report(f"{RES}/filtering/filters.csv", caption="../report/filters.rst", category="Augmented dataset"),
        scored=f"{RES}/filtering/scored.parquet",
        summary=f"{RES}/filtering/filters.json",
    params:
        out_dir=f"{RES}/filtering",
        filters=filters_opt(),
        judgments=lambda wildcards, input: opt("--judgments", input.judgments[0] if input.judgments else None),
        downweight=F.get("downweight", 0.5),
        seed=F.get("seed", 0),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/filter_outputs.log",
    benchmark:
        f"{BENCH}/filter_outputs.tsv"
    shell:
        "{SPANAUG} filter --augmented {input.augmented} --seeds {input.seeds} --out-dir {params.out_dir}"
        " {params.judgments} {params.filters} --downweight {params.downweight} --seed {params.seed} > {log} 2>&1"
