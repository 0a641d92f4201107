# Argument identification trained on samples of Frame ID's training part, with and without the run's
# augmented outputs and the frame elements they carry, scored on its test part. Each point is its own job.


rule argid_point:
    input:
        unpack(planned("argid_point_inputs", "augmenter")),
    output:
        f"{RES}/argid/points/{{augmenter}}/f{{fraction}}.s{{seed}}.json",
    log:
        f"{LOGS}/argid/{{augmenter}}.f{{fraction}}.s{{seed}}.log",
    benchmark:
        f"{BENCH}/argid/{{augmenter}}.f{{fraction}}.s{{seed}}.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        files=input_options("dev", "examples", "framenet"),
        options=section_options(
            "argid",
            keys=(
                "encoder",
                "epochs",
                "batch_size",
                "learning_rate",
                "finetune",
                "encoder_learning_rate",
                "patience",
                "holdout_share",
                "threads",
                "lost_fes",
            ),
        ),
        device=config["device"],
    shell:
        "spanaug argid point --train {input.train:q} --test {input.test:q} {params.files} --fraction {wildcards.fraction}"
        " --seed {wildcards.seed} --augmenter {wildcards.augmenter} {params.options}"
        " --device {params.device} --out {output:q} > {log:q} 2>&1"


rule argid_curves:
    input:
        planned("argid_points"),
    output:
        table=f"{RES}/argid/curves.csv",
        plot=report(
            f"{RES}/argid/curves.png",
            caption="../report/argid_curves.rst",
            category="Argument identification",
        ),
    log:
        f"{LOGS}/argid_curves.log",
    benchmark:
        f"{BENCH}/argid_curves.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug argid curves --points {input:q} --out-table {output.table:q} --out-plot {output.plot:q} > {log:q} 2>&1"
