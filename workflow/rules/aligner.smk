# The span aligner (aligner.kind: the paper's, or the cross encoder): trained here unless the
# config names a trained one; then every beam is aligned.
# Word-aligned corpora (aligner.train.word_aligned, word_aligned_dev) become span instances here first.
# Every file a job reads is an input (spanaug.workflow.plan names them), so a changed
# bitext, corpus or instance file retrains the aligner and realigns what it aligned.


rule make_alignment_instances:
    input:
        bitext=planned("aligner_bitext"),
    output:
        instances=PLAN.made_instances(),
        pairs=PLAN.made_pairs(),
    log:
        f"{LOGS}/make_alignment_instances.log",
    benchmark:
        f"{BENCH}/make_alignment_instances.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug align make-instances --bitext {input.bitext:q} --out {output.instances:q} --pairs-out {output.pairs:q}"
        " > {log:q} 2>&1"


rule import_word_aligned:
    input:
        planned("word_aligned_file", "corpus"),
    output:
        f"{RES}/models/word_aligned/{{corpus}}.spans.jsonl",
    log:
        f"{LOGS}/import_word_aligned.{{corpus}}.log",
    benchmark:
        f"{BENCH}/import_word_aligned.{{corpus}}.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug align import-aligned --input {input:q} --format edinburgh --out {output:q} > {log:q} 2>&1"


rule make_synthetic_instances:
    input:
        sentences=rules.import_corpus.output.sentences,
        lexicon=planned("synthetic_lexicon"),
    output:
        PLAN.made_synthetic(),
    log:
        f"{LOGS}/make_synthetic_instances.log",
    benchmark:
        f"{BENCH}/make_synthetic_instances.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    shell:
        "spanaug align synthetic --sentences {input.sentences:q} --lexicon {input.lexicon:q} --out {output:q} > {log:q} 2>&1"


rule train_aligner:
    input:
        unpack(planned("train_aligner_inputs")),
    output:
        directory(f"{RES}/models/aligner"),
    log:
        f"{LOGS}/train_aligner.log",
    benchmark:
        f"{BENCH}/train_aligner.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        files=input_options(
            "instances", "dev", "phrase_pairs", "pretrain", "extra_instances"
        ),
        encoder=config["aligner"]["encoder"],
        kind=config["aligner"]["kind"],
        options=section_options(
            "aligner",
            "train",
            skip=(
                "instances",
                "dev",
                "word_aligned",
                "word_aligned_dev",
                "word_aligned_phrases",
                "bitext",
                "bitext_phrases",
                "phrase_pairs",
                "pretrain",
                "extra_instances",
                "synthetic_lexicon",
            ),
        ),
        device=config["device"],
    shell:
        "spanaug align train --kind {params.kind} {params.files} --encoder {params.encoder:q} --out {output:q}"
        " {params.options} --device {params.device} > {log:q} 2>&1"


# shard_jobs: chain runs this stage inside iterate_shard (iterations.smk).
if PLAN.per_stage_jobs():

    rule align:
        input:
            paraphrases=rules.paraphrase.output.paraphrases,
            model=planned("aligner_model_input"),
        output:
            aligned=PLAN.shard_pattern("aligned"),
            stats=PLAN.shard_pattern("align_stats"),
        log:
            f"{LOGS}/iter{{i}}/align.shard{{j}}.log",
        benchmark:
            f"{BENCH}/iter{{i}}/align.shard{{j}}.tsv"
        conda:
            "../../envs/gpu.yaml"
        threads: GPU_THREADS
        resources:
            **GPU,
        params:
            model=planned("aligner_model"),
            options=STAGE["align"],
            frame_elements=STAGE["align_frame_elements"],
            device=config["device"],
        shell:
            "spanaug align paraphrases --model {params.model:q} --paraphrases {input.paraphrases:q} --out {output.aligned:q}"
            " --stats {output.stats:q}"
            " {params.options} {params.frame_elements} --device {params.device}"
            " > {log:q} 2>&1"
