"""The released dataset's card: ``README.md`` beside a copy of the Parquet files.

The YAML front matter is the Hugging Face dataset-card metadata: ``configs`` name the Parquet
files, so ``datasets.load_dataset(<folder>)`` loads them (``augmented``, the default, and
``seeds``), and the folder can be pushed to the hub as it is. The body says what a row is,
gives counts per iteration, the frames and the filters, where the data came from (the run's
inputs, models and settings), the licences of the inputs, and how to cite.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import date
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from spanaug.core import artifacts, files
from spanaug.core.consistency import check_seeds_cover
from spanaug.core.errors import InputError
from spanaug.evaluation import fe_retention

CITATION = """@article{culkin-etal-2021-iterative,
  title = {Iterative Paraphrastic Augmentation with Discriminative Span Alignment},
  author = {Culkin, Ryan and Hu, J. Edward and Stengel-Eskin, Elias and Qin, Guanghui and Van Durme, Benjamin},
  journal = {Transactions of the Association for Computational Linguistics},
  volume = {9},
  year = {2021}
}

@inproceedings{baker-etal-1998-berkeley,
  title = {The {B}erkeley {F}rame{N}et Project},
  author = {Baker, Collin F. and Fillmore, Charles J. and Lowe, John B.},
  booktitle = {Proceedings of COLING-ACL 1998},
  year = {1998}
}"""

FIELDS = [
    ("output_id", "`seed_id#iteration`: the output's stable id"),
    ("seed_id", "the seed sentence it derives from (`sentence_id` in the `seeds` config)"),
    ("frame", "the seed's frame, which the aligned span evokes"),
    ("lexical_unit", "the seed's lexical unit (`lemma.pos`)"),
    ("seed_trigger", "the seed's trigger text"),
    ("iteration", "1-based: iteration i paraphrases the same seed's output of iteration i-1 (the seed for i = 1)"),
    ("paraphrase_tokens, paraphrase_text", "the paraphrase"),
    (
        "aligned_start, aligned_end",
        "the trigger's counterpart in the paraphrase: inclusive token indices (null: nothing aligned)",
    ),
    ("aligned_text, aligned_lemma", "the aligned span and its citation form"),
    ("paraphrase_score", "the paraphraser's length-normalised NLL (lower is better)"),
    ("aligner_score", "the span aligner's score, 0-1"),
    ("beam_rank", "the output's rank among the decoded beams"),
    (
        "constraints",
        "the phrases the paraphrase was forbidden to contain (the trigger, its forms and earlier triggers)",
    ),
    (
        "frame_elements",
        "the seed's frame elements carried into the paraphrase ({name, start, end, null_type, coreness, score}): "
        "a span (inclusive) and the carrying's score 0-1; null_type CNI/DNI/INI for a null instantiation, LOST "
        "for an FE the paraphrase (or an earlier one of its chain) lost; the list is null when "
        "frame_elements.mode was off or the seed has none annotated",
    ),
]


def _size_category(n: int) -> str:
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return name
    return "10M<n<100M"


def _is_demo_corpus(path: str) -> bool:
    return "resources/demo" in Path(path).as_posix()


def licences(run: dict[str, Any]) -> tuple[str, list[str]]:
    """The card's ``license`` id and one line per input saying what licence applies.

    The outputs paraphrase the corpus's sentences and keep its labels, so the corpus's licence is
    the dataset's: MIT only for the demo corpus (written for this project), ``other`` otherwise.
    """
    lines, kinds = [], set()
    for path in run.get("inputs", []):
        if _is_demo_corpus(path):
            kinds.add("demo")
            lines.append(f"- Corpus `{path}`: the demo corpus written for the spanaug project, under its MIT licence.")
        elif (
            run.get("format") == "framenet"
            or "framenet" in path.lower()
            or "fndata" in path.lower()
            or Path(path).name.startswith("fn1.")
        ):
            kinds.add("framenet")
            lines.append(
                f"- Corpus `{path}`: FrameNet (Berkeley FrameNet Project, ICSI), released under a Creative "
                "Commons Attribution licence (see the release's documentation for its version). The "
                "outputs paraphrase FrameNet sentences and carry FrameNet's frame labels: attribute FrameNet."
            )
        else:
            kinds.add("unknown")
            lines.append(f"- Corpus `{path}`: its licence is not known to spanaug; state it here before release.")
    if run.get("paraphraser_bitext"):
        lines.append(
            f"- Paraphraser: trained in this run on `{run['paraphraser_bitext']}`; the bitext's licence "
            "governs the model, and may govern the outputs."
        )
    elif run.get("paraphraser_model"):
        lines.append(
            f"- Paraphraser: `{run['paraphraser_model']}`; see its model card for its licence and training data."
        )
    lines += aligner_data_licences(run.get("aligner_corpora") or [])
    enc = run.get("encoder")
    if enc == "minilm":
        lines.append("- Aligner encoder: all-MiniLM-L6-v2 (sentence-transformers), Apache 2.0.")
    elif enc:
        lines.append(f"- Aligner encoder: `{enc}`; see its model card.")
    return ("mit" if kinds == {"demo"} else "other"), lines


_FRAMENET = "FrameNet (Berkeley FrameNet Project, ICSI), under a Creative Commons Attribution licence"
#: Aligner training data known by its file name: (a part of the name, what it is and its licence).
KNOWN_ALIGNER_DATA: tuple[tuple[str, str], ...] = (
    (
        "edinburgh",
        "Edinburgh++ (Cohn, Callison-Burch and Lapata 2008; the version of Thadani, Martin and White 2012), "
        "under the Apache License 2.0",
    ),
    (
        "multimwa-mtref",
        "MultiMWA-MTRef (Lan, Jiang and Xu 2021), released by its authors for research with their code, "
        "without a licence file: research use; cite Lan et al. (2021)",
    ),
    (
        "multimwa-wiki",
        "MultiMWA-Wiki (Lan, Jiang and Xu 2021), released by its authors for research with their code, "
        "without a licence file: research use; cite Lan et al. (2021)",
    ),
    ("resources/demo", "the demo data written for the spanaug project, under its MIT licence"),
    ("fndata", _FRAMENET),
    ("framenet", _FRAMENET),
    ("fn1.", _FRAMENET),
)


def aligner_data_licences(paths: list[str]) -> list[str]:
    """One line per file the span aligner trained or was tuned on: what it is and its licence, where the
    file name says (the aligner's weights derive from them; the outputs' spans are its answers)."""
    lines = []
    for path in paths:
        name = Path(path).as_posix().lower()
        known = next((text for key, text in KNOWN_ALIGNER_DATA if key in name), None)
        lines.append(
            f"- Aligner training data `{path}`: "
            + (f"{known}." if known else "its licence is not known to spanaug; state it here before release.")
        )
    return lines


def _copy(src: Path | str, dst: Path) -> None:
    """Copy a Parquet file into the release, atomically (a half-copied file is never left behind)."""
    with files.atomic_path(dst, ".parquet") as tmp:
        shutil.copyfile(src, tmp)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def per_iteration(table: Any) -> list[list[Any]]:
    rows = []
    for it in sorted(set(table.column("iteration").to_pylist())):
        part = table.filter(pc.equal(table.column("iteration"), it))
        aligned = part.filter(part.column("aligned_start").is_valid())
        rows.append(
            [
                it,
                part.num_rows,
                aligned.num_rows,
                len(set(part.column("frame").to_pylist())),
                pc.mean(part.column("paraphrase_score")).as_py(),
                pc.mean(part.column("aligner_score")).as_py(),
            ]
        )
    return rows


def write_card(
    augmented: Path | str,
    seeds: Path | str,
    out_dir: Path | str,
    run: dict[str, Any],
    filters: Path | str | None = None,
    conll: Path | str | None = None,
    top_frames: int = 25,
) -> dict[str, Any]:
    """Copy the data into ``out_dir/data/`` and write ``out_dir/README.md``; returns the counts."""
    out_dir = Path(out_dir)
    table = artifacts.read_table(augmented, artifacts.AUGMENTED)
    seed_table = artifacts.read_table(seeds, artifacts.SENTENCES)
    check_seeds_cover(seeds, seed_table, augmented, table.column("seed_id"))  # before a release copies them
    _copy(augmented, out_dir / "data" / "augmented.parquet")
    _copy(seeds, out_dir / "data" / "seeds.parquet")
    n = table.num_rows
    aligned = table.filter(table.column("aligned_start").is_valid())
    licence, licence_lines = licences(run)
    name = run.get("run_name", "run")
    front = _front_matter(run, n, licence, licence_lines)
    frames = Counter(aligned.column("frame").to_pylist())
    seed_frames = Counter(seed_table.column("frame").to_pylist())
    parts = [
        "---",
        _yaml(front),
        "---",
        "",
        f"# spanaug {name}: paraphrastically augmented frame triggers",
        "",
        (
            f"{n:,} paraphrases of {seed_table.num_rows:,} seed sentences, made by iterative paraphrastic augmentation "
            "(Culkin et al., TACL 2021) with spanaug: each row is a paraphrase of a seed "
            "sentence, or of the same seed's previous paraphrase, with the span that rewrites the seed's frame "
            f"trigger ({aligned.num_rows:,} rows have one) and the seed's frame."
        ),
        "",
    ]
    if run.get("demo"):
        parts += [
            "> **Demo data.** Made from the bundled demo corpus with tiny models trained for a minute: it shows "
            "the pipeline's mechanics, not paraphrase quality. Do not train on it.",
            "",
        ]
    if run.get("toy_models"):
        parts += [
            "> **Toy models.** By their own training records, "
            + "; ".join(run["toy_models"])
            + ". The outputs show the pipeline's mechanics, not paraphrase quality: do not train on them or "
            "release them as a dataset.",
            "",
        ]
    parts += _files_section(n, seed_table.num_rows, aligned.num_rows, conll)
    parts += [
        "## Fields",
        "",
        _table(["column", "meaning"], [[f"`{a}`", b] for a, b in FIELDS]),
        "",
        "## Counts per iteration",
        "",
        _table(
            ["iteration", "outputs", "aligned", "frames", "mean paraphrase score", "mean aligner score"],
            per_iteration(table),
        ),
        "",
        "## Frames",
        "",
        f"{len(frames):,} frames among the aligned outputs ({len(seed_frames):,} among the seeds). The "
        f"{min(top_frames, len(frames))} with most outputs:",
        "",
        _table(
            ["frame", "aligned outputs", "seeds"],
            [[f, c, seed_frames.get(f, 0)] for f, c in frames.most_common(top_frames)],
        ),
        "",
    ]
    parts += _frame_elements_section(table, seed_table, run.get("frame_elements"))
    parts += _filters_section(filters, seed_table.num_rows)
    parts += _closing_sections(run, licence_lines)
    with files.atomic_path(out_dir / "README.md", ".md") as tmp:
        tmp.write_text("\n".join(parts), encoding="utf-8")
    return {"outputs": n, "aligned": aligned.num_rows, "seeds": seed_table.num_rows, "frames": len(frames)}


def _front_matter(run: dict[str, Any], n: int, licence: str, licence_lines: list[str]) -> dict[str, Any]:
    """The card's YAML header: the dataset's name, licence, size and its two configs."""
    name = run.get("run_name", "run")
    return {
        "pretty_name": f"spanaug {name}: paraphrastically augmented frame triggers",
        "language": ["en"],
        "license": licence,
        **(
            {"license_name": "framenet-cc-by", "license_link": "https://framenet.icsi.berkeley.edu/"}
            if any("FrameNet (Berkeley" in line for line in licence_lines)
            else {}
        ),
        "task_categories": ["token-classification"],
        "tags": ["framenet", "frame-semantics", "paraphrase", "data-augmentation", "span-alignment"]
        + (["toy-models", "not-for-training"] if run.get("toy_models") else []),
        "size_categories": [_size_category(n)],
        "configs": [
            {"config_name": "default", "data_files": [{"split": "train", "path": "data/augmented.parquet"}]},
            {"config_name": "seeds", "data_files": [{"split": "train", "path": "data/seeds.parquet"}]},
        ],
    }


def _files_section(n: int, n_seeds: int, n_aligned: int, conll: Path | str | None) -> list[str]:
    """What the folder holds, and how to load it."""
    return [
        "## Files",
        "",
        _table(
            ["file", "rows", "what"],
            [
                ["`data/augmented.parquet` (config `default`)", f"{n:,}", "the outputs, one per seed and iteration"],
                [
                    "`data/seeds.parquet` (config `seeds`)",
                    f"{n_seeds:,}",
                    "the seed sentences (`sentence_id`, "
                    "`tokens`, `span_start`/`span_end` inclusive, `frame`, `lexical_unit`, provenance)",
                ],
                *(
                    [
                        [
                            f"`{Path(conll).name}`",
                            f"{n_aligned:,} blocks",
                            "the aligned outputs in open-SESAME CoNLL "
                            "(15 columns; lexical unit and frame on the trigger tokens; the carried frame elements "
                            "as BIO tags in column 15, null-instantiated and lost FEs left out), with "
                            f"`{Path(conll).name}.ids.tsv` mapping sentence numbers to output ids",
                        ]
                    ]
                    if conll
                    else []
                ),
            ],
        ),
        "",
        "```python",
        "from datasets import load_dataset",
        'outputs = load_dataset("path/to/this/folder")["train"]           # or the hub name, once pushed',
        'seeds = load_dataset("path/to/this/folder", "seeds")["train"]',
        "```",
        "",
    ]


def _closing_sections(run: dict[str, Any], licence_lines: list[str]) -> list[str]:
    """Provenance, the inputs' licences and the citation."""
    return [
        "## Provenance",
        "",
        *_provenance(run),
        "",
        "## Licences of the inputs",
        "",
        *licence_lines,
        "",
        "## Citation",
        "",
        "Cite the method and FrameNet:",
        "",
        "```bibtex",
        CITATION,
        "```",
        "",
    ]


def _filters_section(filters: Path | str | None, n_seeds: int) -> list[str]:
    if not filters:
        return []
    try:
        data = json.loads(Path(filters).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(filters, None, f"not a filters summary ({exc})") from None
    bounds = data.get("filters", {})
    rows = [
        [
            r["filter"],
            ", ".join(f"{k} {v}" for k, v in bounds.get(r["filter"], {}).items()) or "–",
            f"{r['outputs']:,}",
            r.get("multiple_over_seeds") if r.get("multiple_over_seeds") is not None else "–",
        ]
        for r in data.get("table", [])
    ]
    return [
        "## Filters",
        "",
        "The run's heuristic filters (the seed paper's Table 4 unless the config names others: bounds on "
        "iteration, paraphrase score and aligner score, and `min_fe_score` on the lowest score of the frame "
        "elements an output carries, a lost one scoring 0) and their sizes; apply one with the same bounds on "
        "the columns, or use the run's `filtering/subsets/*.parquet`.",
        "",
        _table(["filter", "bounds", "outputs", f"× {n_seeds:,} seeds"], rows),
        "",
    ]


def _provenance(run: dict[str, Any]) -> list[str]:
    try:
        version = metadata.version("spanaug")
    except metadata.PackageNotFoundError:
        version = "unknown"
    items = [
        ("made", f"{date.today().isoformat()} with spanaug {version}"),
        ("run", run.get("run_name")),
        ("corpus", ", ".join(f"`{p}`" for p in run.get("inputs", [])) + f" ({run.get('format', '?')})"),
        ("seeds", run.get("seeds_mode")),
        ("iterations", run.get("iterations")),
        ("paraphraser", run.get("paraphraser")),
        ("decoding", run.get("decoding")),
        ("span aligner", run.get("aligner")),
        ("span aligner trained on", ", ".join(f"`{p}`" for p in run.get("aligner_corpora") or [])),
        ("aligner encoder", run.get("encoder")),
        ("toy models", "; ".join(run.get("toy_models") or [])),
        ("frame elements", _fe_settings(run.get("frame_elements"))),
    ]
    return [f"- {k}: {v}" for k, v in items if v not in (None, "")] + [
        "- the whole configuration: the run's config file (`snakemake --report` shows it), every default in "
        "`workflow/schemas/config.schema.yaml` of that spanaug version."
    ]


#: How each ``frame_elements.mode`` carries an FE, for the card.
FE_MODES = {
    "align": "placed by the span aligner (its best consistent placement)",
    "keep": "found where its words occur verbatim in the output",
}


def _fe_settings(fe: dict[str, Any] | None) -> str | None:
    """The FE settings as the provenance lists them."""
    if not fe:
        return None
    return f"mode {fe.get('mode')}, select {fe.get('select')}, require {fe.get('require')}"


def _frame_elements_section(table: Any, seeds: Any, fe: dict[str, Any] | None) -> list[str]:
    """FE retention per iteration (overall and per coreness class), or why the outputs carry none."""
    counts = fe_retention.seed_fe_counts(seeds)
    held = (
        f"The seeds hold {counts['overt_fes']:,} overt frame elements in {counts['seeds_with_fes']:,} of "
        f"{counts['seeds']:,} seeds (and {counts['null_instantiated_fes']:,} null instantiations)."
    )
    mode = (fe or {}).get("mode")
    if not fe_retention.carries_fes(table):
        why = "`frame_elements.mode` was off" if mode in (None, "off") else f"`frame_elements.mode` was {mode}"
        return [
            "## Frame elements",
            "",
            f"{held} {why}: the outputs carry no frame elements (`frame_elements` is null in every row, and the "
            "CoNLL export tags none), so this data teaches frame identification, not argument identification.",
            "",
        ]
    how = FE_MODES.get(mode, "carried") if mode else "carried"
    rows = [
        [
            r["iteration"],
            r["outputs_with_fes"],
            r["fes_to_carry"],
            r["carried"],
            r["lost"],
            *(_pct(r[key]) for key in ("retention", *fe_retention.CLASS_COLUMNS.values())),
            r["outputs_keeping_every_fe"],
            r["mean_fe_score"] if r["mean_fe_score"] is not None else "–",
        ]
        for r in fe_retention.per_iteration(table)
    ]
    return [
        "## Frame elements",
        "",
        f"{held} Each output carries its seed's frame elements ({_fe_settings(fe) or 'settings unknown'}; each FE "
        f"{how}): an FE with a span and the carrying's score, or `null_type: LOST` where a paraphrase lost it (an FE "
        "lost stays lost in later iterations; an output whose trigger did not align loses all). **Retention** is the "
        "share of the seeds' overt FEs that an iteration's outputs still carry (a chain that ended earlier has no "
        "output there, and counts nowhere): overall and per coreness class "
        "(core: Core, Core-Unexpressed; non-core: Peripheral, Extra-Thematic; unknown: the input does not say, "
        "as in CoNLL, which `require: core` protects as core).",
        "",
        _table(
            [
                "iteration",
                "outputs with FEs",
                "seed FEs to carry",
                "carried",
                "lost",
                "retention",
                "core",
                "non-core",
                "unknown coreness",
                "outputs keeping every FE",
                "mean score of carried FEs",
            ],
            rows,
        ),
        "",
    ]


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{share:.1%}"


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")
