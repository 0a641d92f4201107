# The report's own pages: every CSV/JSON result as an HTML table (Snakemake's report shows .html
# entries inline and only offers other files as downloads), the example chains, the frame elements
# (a page in every run: with frame_elements.mode off it says so), the warnings page and the landing
# summary. Category "At a glance" sorts first in the report's menu.


# One rule per table: each page has its own caption, which a single wildcard rule could not give.
for table in PLAN.report_tables():

    rule:
        name:
            f"report_table_{table.slug}"
        input:
            table=f"{RES}/{table.source}",
            paraphraser=PLAN.paraphraser_model_input() if table.from_models else [],
            aligner=PLAN.aligner_model_input() if table.from_models else [],
        output:
            report(
                f"{RES}/{table.page}",
                caption=f"../report/{table.caption}.rst",
                category=table.category,
                subcategory=table.subcategory,
            ),
        log:
            f"{LOGS}/report/{table.slug}.log",
        benchmark:
            f"{BENCH}/report/{table.slug}.tsv"
        localrule: True
        conda:
            "../../envs/cpu.yaml"
        threads: CPU_THREADS
        resources:
            **CPU,
        params:
            title=shlex.quote(table.title),
            max_rows=config["report"]["max_rows"],
            models=input_options("paraphraser", "aligner"),
        shell:
            "spanaug report tables --inputs {input.table:q} --outputs {output:q} --titles {params.title}"
            " --max-rows {params.max_rows} {params.models} > {log:q} 2>&1"


rule report_warnings:
    input:
        unpack(planned("warning_inputs")),
    output:
        json=f"{RES}/report/warnings.json",
        page=report(
            f"{RES}/report/warnings.html",
            caption="../report/warnings.rst",
            category="At a glance",
        ),
        paraphrase=f"{RES}/report/paraphrase_stage.csv",
        paraphrase_page=report(
            f"{RES}/report/paraphrase_stage.html",
            caption="../report/paraphrase_stage.rst",
            category="Augmented dataset",
        ),
    log:
        f"{LOGS}/report/warnings.log",
    benchmark:
        f"{BENCH}/report/warnings.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        width=PLAN.decode_width(),
        optional=input_options(
            "aligner", "comparison", "curves", "argid_curves", "simulated_judgments"
        ),
        base=two_levels_up,
        demo=PLAN.is_demo(CHECKOUT),
        max_rows=config["report"]["max_rows"],
    shell:
        "spanaug report warnings --summaries {input.summaries:q} --paraphrase-stats {input.paraphrase:q}"
        " --select-stats {input.select:q} --align-stats {input.align:q}"
        " --width {params.width} --per-iteration {input.per_iteration:q} {params.optional} --base {params.base:q}"
        " --demo {params.demo} --max-rows {params.max_rows} --out-json {output.json:q} --out-html {output.page:q}"
        " --out-paraphrase-csv {output.paraphrase:q} --out-paraphrase-html {output.paraphrase_page:q} > {log:q} 2>&1"


rule report_chains:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        report(
            f"{RES}/report/chains.html",
            caption="../report/chains.rst",
            category="At a glance",
        ),
    log:
        f"{LOGS}/report/chains.log",
    benchmark:
        f"{BENCH}/report/chains.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        options=flags(config["report"], keys=("chains", "seed")),
        demo=PLAN.is_demo(CHECKOUT),
    shell:
        "spanaug report chains --augmented {input.augmented:q} --seeds {input.seeds:q} {params.options}"
        " --demo {params.demo} --out {output:q} > {log:q} 2>&1"


rule report_frame_elements:
    input:
        augmented=rules.assemble.output,
        seeds=rules.select_seeds.output.seeds,
    output:
        page=report(
            f"{RES}/report/frame_elements.html",
            caption="../report/frame_elements.rst",
            category="Augmented dataset",
        ),
        csv=f"{RES}/report/frame_elements.csv",
        names=f"{RES}/report/frame_elements_by_name.csv",
        json=f"{RES}/report/frame_elements.json",
    log:
        f"{LOGS}/report/frame_elements.log",
    benchmark:
        f"{BENCH}/report/frame_elements.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        fe=flags(
            config["frame_elements"],
            keys=("mode", "select", "require", "min_verbatim_agreement"),
        ),
        options=flags(config["report"], keys=("chains", "seed", "max_rows")),
        demo=PLAN.is_demo(CHECKOUT),
    shell:
        "spanaug report frame-elements --augmented {input.augmented:q} --seeds {input.seeds:q} {params.fe}"
        " {params.options} --demo {params.demo} --out-html {output.page:q} --out-csv {output.csv:q}"
        " --out-names-csv {output.names:q} --out-json {output.json:q} > {log:q} 2>&1"


rule report_summary:
    input:
        unpack(planned("summary_inputs")),
    output:
        page=report(
            f"{RES}/report/summary.html",
            caption="../report/summary.rst",
            category="At a glance",
        ),
        fragment=f"{RES}/report/summary_fragment.html",
        json=f"{RES}/report/summary.json",
    log:
        f"{LOGS}/report/summary.log",
    benchmark:
        f"{BENCH}/report/summary.tsv"
    localrule: True
    conda:
        "../../envs/cpu.yaml"
    threads: CPU_THREADS
    resources:
        **CPU,
    params:
        run=run_option(),
        optional=input_options(
            "aligner",
            "paraphraser",
            "ablation",
            "comparison",
            "human_eval",
            "curves",
            "frameid_baseline",
        ),
    shell:
        "spanaug report summary {params.run} --stats {input.stats:q} --per-iteration {input.per_iteration:q}"
        " --filters {input.filters:q} --warnings {input.warnings:q} --paraphrase {input.paraphrase:q}"
        " --frame-elements {input.frame_elements:q} {params.optional}"
        " --out-html {output.page:q} --out-fragment {output.fragment:q} --out-json {output.json:q} > {log:q} 2>&1"
