# Figure 8: Frame ID trained on samples of the training sentences, with and without each
# augmenter's examples, scored on one fixed test split. Each point is its own (GPU) job.
FID = config.get("frameid") or {}


rule frameid_split:
    input:
        sentences=rules.import_corpus.output.sentences,
    output:
        train=f"{RES}/frameid/split/train.parquet",
        dev=f"{RES}/frameid/split/dev.parquet",
        test=f"{RES}/frameid/split/test.parquet",
    params:
        out_dir=f"{RES}/frameid/split",
        parts=" ".join(FID.get("parts", ["fulltext"])),
        dev_share=FID.get("dev_share", 0.1),
        test_share=FID.get("test_share", 0.2),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/frameid_split.log",
    shell:
        "{SPANAUG} frameid split --sentences {input.sentences} --out-dir {params.out_dir} --parts {params.parts}"
        " --dev-share {params.dev_share} --test-share {params.test_share} > {log} 2>&1"


rule frameid_baseline:
    input:
        train=frameid_pool,
        test=frameid_test,
    output:
        report(f"{RES}/frameid/lexicon_baseline.json", caption="../report/frameid_baseline.rst", category="Frame ID"),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/frameid_baseline.log",
    shell:
        "{SPANAUG} frameid baseline --train {input.train} --test {input.test} --out {output} > {log} 2>&1"


rule frameid_point:
    input:
        unpack(frameid_point_inputs),
    output:
        f"{RES}/frameid/points/{{augmenter}}/f{{fraction}}.s{{seed}}.json",
    params:
        dev=lambda wildcards, input: opt("--dev", input.get("dev")),
        examples=lambda wildcards, input: opt("--examples", input.get("examples")),
        lexicon=opt("--lexicon", FID.get("lexicon")),
        encoder=FID.get("encoder"),
        geca_window=(AUG.get("geca") or {}).get("window", 1),
        opts=(
            f"--epochs {FID.get('epochs', 10)} --batch-size {FID.get('batch_size', 16)}"
            f" --learning-rate {FID.get('learning_rate', 0.001)}"
        ),
        device=A["device"],
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/frameid/{{augmenter}}.f{{fraction}}.s{{seed}}.log",
    benchmark:
        f"{BENCH}/frameid/{{augmenter}}.f{{fraction}}.s{{seed}}.tsv"
    shell:
        "{SPANAUG} frameid point --train {input.train} --test {input.test} {params.dev}"
        " --fraction {wildcards.fraction} --seed {wildcards.seed} --augmenter {wildcards.augmenter}"
        " {params.examples} --geca-window {params.geca_window} --encoder {params.encoder} {params.lexicon}"
        " {params.opts} --device {params.device} --out {output} > {log} 2>&1"


rule frameid_curves:
    input:
        frameid_points(),
    output:
        table=report(f"{RES}/frameid/curves.csv", caption="../report/frameid_curves.rst", category="Frame ID"),
        plot=report(f"{RES}/frameid/curves.png", caption="../report/frameid_curves.rst", category="Frame ID"),
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    log:
        f"{LOGS}/frameid_curves.log",
    shell:
        "{SPANAUG} frameid curves --points {input} --out-table {output.table} --out-plot {output.plot} > {log} 2>&1"
