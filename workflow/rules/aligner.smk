# The span aligner (aligner.kind: the paper's, or the cross encoder): trained here unless the
# config names a trained one; then every beam is aligned.
# Word-aligned corpora (aligner.train.word_aligned, word_aligned_dev) become span instances here first.
# External data (instances, dev, bitext, phrase pairs, extra and pre-training instances) are params,
# not inputs, so a dry run plans without them;
# after changing them, force a retrain with -R train_aligner.


rule make_alignment_instances:
    output:
        instances=made_instances(),
        pairs=made_pairs(),
    log:
        f"{LOGS}/make_alignment_instances.log",
    benchmark:
        f"{BENCH}/make_alignment_instances.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        bitext=aligner_bitext,
    shell:
        "spanaug align make-instances --bitext {params.bitext:q} --out {output.instances:q} --pairs-out {output.pairs:q}"
        " > {log:q} 2>&1"


rule import_word_aligned:
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
    params:
        corpus=word_aligned_file,
    shell:
        "spanaug align import-aligned --input {params.corpus:q} --format edinburgh --out {output:q} > {log:q} 2>&1"


rule make_synthetic_instances:
    input:
        sentences=rules.import_corpus.output.sentences,
    output:
        made_synthetic(),
    log:
        f"{LOGS}/make_synthetic_instances.log",
    benchmark:
        f"{BENCH}/make_synthetic_instances.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        lexicon=synthetic_lexicon,
    shell:
        "spanaug align synthetic --sentences {input.sentences:q} --lexicon {params.lexicon:q} --out {output:q} > {log:q} 2>&1"


rule train_aligner:
    input:
        made=aligner_training_input,
        pretrain=aligner_pretrain_input,
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
        instances=aligner_training_instances,
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
                "synthetic_lexicon",
            ),
        ),
        dev=aligner_dev_option,
        phrase_pairs=aligner_phrase_pairs_option,
        pretrain=aligner_pretrain_option,
        device=config["device"],
    shell:
        "spanaug align train --kind {params.kind} --instances {params.instances} --encoder {params.encoder:q} --out {output:q}"
        " {params.options} {params.dev} {params.phrase_pairs} {params.pretrain} --device {params.device} > {log:q} 2>&1"


rule align:
    input:
        paraphrases=rules.paraphrase.output.paraphrases,
        model=aligner_input,
    output:
        aligned=f"{RES}/iterations/iter{{i}}/shard{{j}}.aligned.parquet",
        stats=f"{RES}/iterations/iter{{i}}/shard{{j}}.align_stats.json",
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
        model=aligner_model,
        batch_size=config["aligner"]["batch_size"],
        dtype=config["aligner"]["dtype"],
        frame_elements=flags(config["frame_elements"], keys=("mode", "candidates")),
        device=config["device"],
    shell:
        "spanaug align paraphrases --model {params.model:q} --paraphrases {input.paraphrases:q} --out {output.aligned:q}"
        " --stats {output.stats:q}"
        " --batch-size {params.batch_size} --dtype {params.dtype} {params.frame_elements} --device {params.device}"
        " > {log:q} 2>&1"
