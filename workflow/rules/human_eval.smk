# The human-evaluation loop (§6.2): the annotation task, then the crowd's judgments. The demo has
# no annotators: with human_eval.simulate, simulated judgments (clearly labelled) run the loop.


rule human_export:
    input:
        augmented=rules.assemble.output,
        sentences=rules.import_corpus.output.sentences,
        framenet=planned("framenet_release"),
    output:
        task=f"{RES}/human_eval/task.csv",
        key=f"{RES}/human_eval/task.key.csv",
        summary=f"{RES}/human_eval/task_summary.json",
    log:
        f"{LOGS}/human_export.log",
    benchmark:
        f"{BENCH}/human_export.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=section_options("human_eval", keys=("n_items", "seed")),
        framenet=input_options("framenet"),
    shell:
        "spanaug human export --augmented {input.augmented:q} --sentences {input.sentences:q} --out-task {output.task:q}"
        " --out-key {output.key:q} --summary {output.summary:q} {params.options} {params.framenet} > {log:q} 2>&1"


rule human_simulate:
    input:
        key=rules.human_export.output.key,
    output:
        f"{RES}/human_eval/results.simulated.csv",
    log:
        f"{LOGS}/human_simulate.log",
    benchmark:
        f"{BENCH}/human_simulate.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=section_options("human_eval", keys=("raters", "seed")),
    shell:
        "spanaug human simulate --key {input.key:q} --out {output:q} {params.options} > {log:q} 2>&1"


rule human_import:
    input:
        key=rules.human_export.output.key,
        results=planned("human_results_input"),
    output:
        summary=f"{RES}/human_eval/human_eval.json",
        hist=report(
            f"{RES}/human_eval/score_histogram.png",
            caption="../report/human_eval.rst",
            category="Human evaluation",
        ),
        judgments=f"{RES}/human_eval/judgments.csv",
    log:
        f"{LOGS}/human_import.log",
    benchmark:
        f"{BENCH}/human_import.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        out_dir=out_dir,
    shell:
        "spanaug human import --results {input.results:q} --key {input.key:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# The span-alignment task (§4.1): annotators mark each sampled output's counterpart of the span it
# rewrote; their majority answers become aligner training data (aligner.train.extra_instances).


rule span_task_export:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        task=f"{RES}/human_eval/span_task.csv",
        key=f"{RES}/human_eval/span_task.key.csv",
    log:
        f"{LOGS}/span_task_export.log",
    benchmark:
        f"{BENCH}/span_task_export.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=section_options("human_eval", keys=("span_items", "seed")),
    shell:
        "spanaug human span-task export --augmented {input.augmented:q} --seeds {input.seeds:q} --out-task {output.task:q}"
        " --out-key {output.key:q} {params.options} > {log:q} 2>&1"


rule span_task_simulate:
    input:
        task=rules.span_task_export.output.task,
        key=rules.span_task_export.output.key,
    output:
        f"{RES}/human_eval/span_results.simulated.csv",
    log:
        f"{LOGS}/span_task_simulate.log",
    benchmark:
        f"{BENCH}/span_task_simulate.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=section_options("human_eval", keys=("raters", "seed")),
    shell:
        "spanaug human span-task simulate --task {input.task:q} --key {input.key:q} --out {output:q} {params.options}"
        " > {log:q} 2>&1"


rule span_task_import:
    input:
        task=rules.span_task_export.output.task,
        key=rules.span_task_export.output.key,
        results=planned("span_results_input"),
    output:
        instances=f"{RES}/human_eval/span_alignment.jsonl",
        summary=f"{RES}/human_eval/span_agreement.json",
    log:
        f"{LOGS}/span_task_import.log",
    benchmark:
        f"{BENCH}/span_task_import.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug human span-task import --results {input.results:q} --task {input.task:q} --key {input.key:q}"
        " --out {output.instances:q} --out-summary {output.summary:q} > {log:q} 2>&1"
