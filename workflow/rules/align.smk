# The span aligner: trained here unless the config names a trained one; then every beam is aligned.
# External data (instances, dev, bitext) are params, not inputs, so a dry-run plans without them;
# after changing them, force a retrain with -R train_aligner.
A = config["aligner"]
AT = A.get("train") or {}


rule make_alignment_instances:
    output:
        instances=f"{RES}/models/aligner_instances.jsonl",
        pairs=f"{RES}/models/aligner_pairs.json",
    resources:
        **CPU,
    conda:
        "../../envs/cpu.yaml"
    params:
        bitext=AT.get("bitext"),
    log:
        f"{LOGS}/make_alignment_instances.log",
    shell:
        "{SPANAUG} align make-instances --bitext {params.bitext} --out {output.instances}"
        " --pairs-out {output.pairs} > {log} 2>&1"


rule train_aligner:
    input:
        made=[] if AT.get("instances") else rules.make_alignment_instances.output,
    output:
        directory(f"{RES}/models/aligner"),
    params:
        train=AT.get("instances") or rules.make_alignment_instances.output.instances,
        dev=opt("--dev", AT.get("dev")),
        encoder=A["encoder"],
        opts=" ".join(
            [
                f"--features {','.join(AT.get('features', ['df', 'mx', 'cue']))}",
                f"--loss {AT.get('loss', 'soft')} --k {AT.get('k', 5)}",
                f"--epochs {AT.get('epochs', 10)} --seed {AT.get('seed', 0)} --device {A['device']}",
                f"--finetune-layers {AT.get('finetune_layers', 0)}",
                f"--encoder-learning-rate {AT.get('encoder_learning_rate', 2e-5)}",
                " ".join(["--extra", *map(shlex.quote, AT["extra_instances"])]) if AT.get("extra_instances") else "",
            ]
        ),
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/train_aligner.log",
    benchmark:
        f"{BENCH}/train_aligner.tsv"
    shell:
        "{SPANAUG} align train --train {params.train} {params.dev} --encoder {params.encoder}"
        " --out {output} {params.opts} > {log} 2>&1"


rule align:
    input:
        paraphrases=rules.paraphrase.output.paraphrases,
        model=aligner_input,
    output:
        f"{RES}/iterations/iter{{i}}/shard{{j}}.aligned.parquet",
    params:
        model=aligner_model,
        batch_size=A["batch_size"],
        device=A["device"],
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/iter{{i}}/align.shard{{j}}.log",
    benchmark:
        f"{BENCH}/iter{{i}}/align.shard{{j}}.tsv"
    shell:
        "{SPANAUG} align paraphrases --model {params.model} --paraphrases {input.paraphrases}"
        " --out {output} --batch-size {params.batch_size} --device {params.device} > {log} 2>&1"


rule align_ablation:
    input:
        made=[] if (A.get("evaluation") or {}).get("data") else rules.make_alignment_instances.output,
    output:
        table=report(f"{RES}/aligner_eval/ablation.csv", caption="../report/ablation.rst", category="Span aligner"),
        plot=report(f"{RES}/aligner_eval/ablation.png", caption="../report/ablation.rst", category="Span aligner"),
        memo=report(f"{RES}/aligner_eval/memorisation.csv", caption="../report/memorisation.rst", category="Span aligner"),
        by_len=report(f"{RES}/aligner_eval/by_span_length.csv", caption="../report/breakdowns.rst", category="Span aligner"),
        by_pos=report(f"{RES}/aligner_eval/by_position_difference.csv", caption="../report/breakdowns.rst", category="Span aligner"),
        figs=report(f"{RES}/aligner_eval/breakdowns.png", caption="../report/breakdowns.rst", category="Span aligner"),
        summary=f"{RES}/aligner_eval/summary.json",
    params:
        data=(A.get("evaluation") or {}).get("data") or rules.make_alignment_instances.output.instances,
        out_dir=f"{RES}/aligner_eval",
        encoder=A["encoder"],
        epochs=(A.get("evaluation") or {}).get("epochs", 10),
        seed=(A.get("evaluation") or {}).get("seed", 0),
        k=AT.get("k", 5),
        extensions=" ".join(
            [
                f"--finetune-layers {(A.get('evaluation') or {}).get('finetune_layers', 0)}",
                "--extra-reversed" if (A.get("evaluation") or {}).get("extra_reversed") else "",
            ]
        ),
        device=A["device"],
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/align_ablation.log",
    benchmark:
        f"{BENCH}/align_ablation.tsv"
    shell:
        "{SPANAUG} align ablate --data {params.data} --encoder {params.encoder} --out-dir {params.out_dir}"
        " --epochs {params.epochs} --seed {params.seed} --k {params.k} {params.extensions}"
        " --device {params.device} > {log} 2>&1"
