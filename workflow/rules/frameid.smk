# Figure 8: Frame ID trained on samples of the training sentences, with and without each
# augmenter's examples, scored on one fixed test split. Each point is its own (GPU) job.


rule frameid_split:
    input:
        sentences=rules.import_corpus.output.sentences,
    output:
        train=f"{RES}/frameid/split/train.parquet",
        dev=f"{RES}/frameid/split/dev.parquet",
        test=f"{RES}/frameid/split/test.parquet",
    log:
        f"{LOGS}/frameid_split.log",
    benchmark:
        f"{BENCH}/frameid_split.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        out_dir=out_dir,
        options=section_options("frameid", keys=("parts", "dev_share", "test_share")),
    shell:
        "spanaug frameid split --sentences {input.sentences:q} --out-dir {params.out_dir:q} {params.options} > {log:q} 2>&1"


rule frameid_baseline:
    input:
        train=planned("frameid_pool"),
        test=planned("frameid_test"),
    output:
        f"{RES}/frameid/lexicon_baseline.json",
    log:
        f"{LOGS}/frameid_baseline.log",
    benchmark:
        f"{BENCH}/frameid_baseline.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug frameid baseline --train {input.train:q} --test {input.test:q} --out {output:q} > {log:q} 2>&1"


rule frameid_point:
    input:
        unpack(planned("frameid_point_inputs", "augmenter")),
    output:
        f"{RES}/frameid/points/{{augmenter}}/f{{fraction}}.s{{seed}}.json",
    log:
        f"{LOGS}/frameid/{{augmenter}}.f{{fraction}}.s{{seed}}.log",
    benchmark:
        f"{BENCH}/frameid/{{augmenter}}.f{{fraction}}.s{{seed}}.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        files=input_options("dev", "examples", "lexicon"),
        geca_window=geca_window_option,
        options=section_options(
            "frameid",
            keys=(
                "encoder",
                "epochs",
                "batch_size",
                "learning_rate",
                "patience",
            ),
        ),
        device=config["device"],
    shell:
        "spanaug frameid point --train {input.train:q} --test {input.test:q} {params.files} --fraction {wildcards.fraction}"
        " --seed {wildcards.seed} --augmenter {wildcards.augmenter} {params.geca_window} {params.options}"
        " --device {params.device} --out {output:q} > {log:q} 2>&1"


rule frameid_curves:
    input:
        planned("frameid_points"),
    output:
        table=f"{RES}/frameid/curves.csv",
        plot=report(
            f"{RES}/frameid/curves.png",
            caption="../report/frameid_curves.rst",
            category="Frame ID",
        ),
    log:
        f"{LOGS}/frameid_curves.log",
    benchmark:
        f"{BENCH}/frameid_curves.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug frameid curves --points {input:q} --out-table {output.table:q} --out-plot {output.plot:q} > {log:q} 2>&1"
