# Word-alignment baselines (FastAlign, DiscAlign) against the span aligner: the paper's Tables 1-2.
# Null data paths fall back to what make_alignment_instances derives from the aligner's bitext.
B = config.get("baselines") or {}
FA = B.get("fastalign") or {}


rule compare_aligners:
    input:
        made=baseline_made_inputs,
    output:
        table=report(f"{RES}/aligner_eval/comparison.csv", caption="../report/comparison.rst", category="Span aligner"),
        plot=report(f"{RES}/aligner_eval/comparison.png", caption="../report/comparison.rst", category="Span aligner"),
        summary=f"{RES}/aligner_eval/comparison.json",
    params:
        instances=B.get("instances") or rules.make_alignment_instances.output.instances,
        gold_pairs=B.get("gold_pairs") or rules.make_alignment_instances.output.pairs,
        out_dir=f"{RES}/aligner_eval",
        encoder=A["encoder"],
        opts=" ".join(
            [
                f"--epochs {B.get('epochs', 10)} --seed {B.get('seed', 0)} --k {AT.get('k', 5)}",
                f"--iterations {FA.get('iterations', 5)}",
                "" if FA.get("lowercase", True) else "--no-lowercase",
                opt("--fast-align-bin", FA.get("fast_align_bin")),
                opt("--atools-bin", FA.get("atools_bin")),
                " ".join(["--extra-text", *map(shlex.quote, B["extra_text"])]) if B.get("extra_text") else "",
                f"--device {A['device']}",
            ]
        ),
    resources:
        **GPU,
    conda:
        "../../envs/gpu.yaml"
    log:
        f"{LOGS}/compare_aligners.log",
    benchmark:
        f"{BENCH}/compare_aligners.tsv"
    shell:
        "{SPANAUG} baseline compare --instances {params.instances} --gold-pairs {params.gold_pairs}"
        " --encoder {params.encoder} --out-dir {params.out_dir} {params.opts} > {log} 2>&1"
