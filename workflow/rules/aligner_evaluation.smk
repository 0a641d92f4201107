# The span aligner on held-out data: the Table 2 ablations (with Figures 4-5 and the memorisation
# split), the same with the chain-graph instances added (a self-training row), and the word
# aligners of Tables 1-2, and the aligner kinds and data sources beyond the paper (aligner.systems). Null data paths fall back on what make_alignment_instances derives
# from the aligner's bitext. Every data file is an input (also those a command takes in a JSON mapping).


rule align_ablation:
    input:
        unpack(planned("ablation_inputs", "ablation")),
    output:
        table=f"{RES}/aligner_eval/{{ablation}}/ablation.csv",
        plot=report(
            f"{RES}/aligner_eval/{{ablation}}/ablation.png",
            caption="../report/ablation.rst",
            category="Span aligner",
            subcategory="{ablation}",
        ),
        memo=f"{RES}/aligner_eval/{{ablation}}/memorisation.csv",
        by_len=f"{RES}/aligner_eval/{{ablation}}/by_span_length.csv",
        by_pos=f"{RES}/aligner_eval/{{ablation}}/by_position_difference.csv",
        figs=report(
            f"{RES}/aligner_eval/{{ablation}}/breakdowns.png",
            caption="../report/breakdowns.rst",
            category="Span aligner",
            subcategory="{ablation}",
        ),
        summary=f"{RES}/aligner_eval/{{ablation}}/summary.json",
    log:
        f"{LOGS}/align_ablation.{{ablation}}.log",
    benchmark:
        f"{BENCH}/align_ablation.{{ablation}}.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        out_dir=out_dir,
        encoder=config["aligner"]["encoder"],
        k=aligner_k_option,
        options=section_options("aligner", "evaluation", skip=("data",)),
        rows=ablation_options,
        device=config["device"],
    shell:
        "spanaug align ablate --data {input.data:q} --encoder {params.encoder:q} {params.k} --out-dir {params.out_dir:q}"
        " {params.options} {params.rows} --device {params.device} > {log:q} 2>&1"


rule compare_aligners:
    input:
        unpack(planned("baseline_inputs")),
    output:
        table=f"{RES}/aligner_eval/comparison.csv",
        plot=report(
            f"{RES}/aligner_eval/comparison.png",
            caption="../report/comparison.rst",
            category="Span aligner",
        ),
        summary=f"{RES}/aligner_eval/comparison.json",
    log:
        f"{LOGS}/compare_aligners.log",
    benchmark:
        f"{BENCH}/compare_aligners.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        out_dir=out_dir,
        encoder=config["aligner"]["encoder"],
        k=aligner_k_option,
        options=section_options(
            "baselines", skip=("instances", "gold_pairs", "extra_text", "fastalign")
        ),
        fastalign=section_options("baselines", "fastalign"),
        extra_text=input_options("extra_text"),
        device=config["device"],
    shell:
        "spanaug baseline compare --instances {input.instances:q} --gold-pairs {input.gold_pairs:q} {params.extra_text}"
        " --encoder {params.encoder:q} {params.k} --out-dir {params.out_dir:q} {params.options} {params.fastalign}"
        " --device {params.device} > {log:q} 2>&1"


rule align_systems:
    input:
        unpack(planned("systems_inputs")),
    output:
        table=report(
            f"{RES}/aligner_eval/systems/systems.csv",
            caption="../report/systems.rst",
            category="Span aligner",
        ),
        summary=f"{RES}/aligner_eval/systems/systems_summary.json",
    log:
        f"{LOGS}/align_systems.log",
    benchmark:
        f"{BENCH}/align_systems.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        out_dir=out_dir,
        encoder=config["aligner"]["encoder"],
        k=aligner_k_option,
        options=cross_options("systems"),
        files=input_options("data", "gold_pairs", "synthetic"),
        device=config["device"],
    shell:
        "spanaug align systems --encoder {params.encoder:q} {params.k} --out-dir {params.out_dir:q}"
        " {params.options} {params.files} --device {params.device} > {log:q} 2>&1"


rule align_cross_domain:
    input:
        unpack(planned("cross_domain_inputs")),
    output:
        table=report(
            f"{RES}/aligner_eval/cross_domain/cross_domain.csv",
            caption="../report/cross_domain.rst",
            category="Span aligner",
        ),
        summary=f"{RES}/aligner_eval/cross_domain/cross_domain.json",
    log:
        f"{LOGS}/align_cross_domain.log",
    benchmark:
        f"{BENCH}/align_cross_domain.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: GPU_THREADS
    resources:
        **GPU,
    params:
        out_dir=out_dir,
        encoder=config["aligner"]["encoder"],
        k=aligner_k_option,
        options=cross_options("cross_domain"),
        files=input_options("synthetic"),
        device=config["device"],
    shell:
        "spanaug align cross-domain --encoder {params.encoder:q} {params.k} --out-dir {params.out_dir:q}"
        " {params.options} {params.files} --device {params.device} > {log:q} 2>&1"
