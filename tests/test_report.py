"""The report's own pages: tables as HTML, example chains, warnings of a degraded run, the summary."""

import base64
import json
import re

import numpy as np
import pytest
from conftest import output, seed, write_augmented

from spanaug.cli.main import main
from spanaug.core import files, modeldir
from spanaug.core.degraded import warn
from spanaug.downstream.augmenters import empty_warnings
from spanaug.downstream.curve_checks import same_as_baseline
from spanaug.evaluation.aligner_ablation import below_baseline
from spanaug.evaluation.filtering import filter_stage
from spanaug.evaluation.statistics import StatsSettings, intrinsic_stats, plot_per_iteration
from spanaug.report import html, warnings
from spanaug.report.chains import chains_page, sample_chains
from spanaug.report.tables import table_page


@pytest.fixture
def run(tmp_path):
    """Two seeds, a three-iteration chain and a chain that ends when its output fails to align."""
    seeds = [
        seed("s1", ["Abby", "bought", "a", "car"], 1, 1, "Commerce_buy", "buy.v"),
        seed("s2", ["They", "quit", "<smoking>"], 1, 1, "Activity_stop", "quit.v"),
    ]
    chain = [
        output("s1", 1, ["Abby", "purchased", "a", "car"], 1, 1, "Commerce_buy", "buy.v", "purchase"),
        output("s1", 2, ["Yesterday", "Abby", "acquired", "a", "car"], 2, 2, "Commerce_buy", "buy.v", "acquire"),
        output("s1", 3, ["Abby", "got", "a", "car"], 1, 1, "Commerce_buy", "buy.v", "get"),
        output("s2", 1, ["They", "<b>gave</b>", "up"], None, None, "Activity_stop", "quit.v", None),
    ]
    write_augmented(tmp_path, seeds, chain)
    return tmp_path


# ---------------------------------------------------------------- tables


def test_csv_table_page_escapes_text_formats_numbers_and_embeds_the_raw_file(tmp_path):
    rows = [{"system": "<script>alert(1)</script>", "f1": 0.123456, "n": 1234}, {"system": "b & c", "f1": None, "n": 5}]
    files.write_csv(rows, tmp_path / "t.csv")
    page = table_page(tmp_path / "t.csv", 200, "Scores")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "b &amp; c" in page and '<td class="num">0.123</td>' in page and '<td class="num">1,234</td>' in page
    raw = re.search(r'download="t.csv" href="data:text/csv;base64,([^"]+)"', page).group(1)
    assert base64.b64decode(raw) == (tmp_path / "t.csv").read_bytes()


def test_json_table_page_shows_nested_tables_and_the_recorded_warnings_first(tmp_path):
    data = {
        "judged_outputs": 3,
        "filters": {"lax": {"max_iteration": 3}},
        "table": [{"filter": "lax", "outputs": 0}],
        "warnings": [{"kind": "empty", "message": "filter 'lax' passes 0 of 3 aligned outputs"}],
    }
    (tmp_path / "f.json").write_text(json.dumps(data))
    page = table_page(tmp_path / "f.json", 200)
    assert page.index("Warnings") < page.index("judged_outputs")
    # Autoescape writes ' as &#39;.
    assert "filter &#39;lax&#39; passes 0 of 3" in page and "<th>max_iteration</th>" in page
    assert "<th>filter</th><th>outputs</th>" in page


def test_long_tables_are_cut_and_say_so(tmp_path):
    files.write_csv([{"i": i} for i in range(30)], tmp_path / "long.csv")
    page = table_page(tmp_path / "long.csv", max_rows=10)
    assert page.count("<tr><td") == 10 and "The first 10 of 30 rows" in page


def test_tables_command_writes_one_page_per_input(tmp_path):
    files.write_csv([{"a": 1}], tmp_path / "a.csv")
    (tmp_path / "b.json").write_text('{"x": 2}')
    assert (
        main(
            [
                "report",
                "tables",
                "--inputs",
                str(tmp_path / "a.csv"),
                str(tmp_path / "b.json"),
                "--outputs",
                str(tmp_path / "a.html"),
                str(tmp_path / "b.html"),
                "--titles",
                "A",
                "B",
            ]
        )
        == 0
    )
    assert "<h1>A</h1>" in (tmp_path / "a.html").read_text() and "<h1>B</h1>" in (tmp_path / "b.html").read_text()
    assert (
        main(
            [
                "report",
                "tables",
                "--inputs",
                str(tmp_path / "a.csv"),
                "--outputs",
                str(tmp_path / "x.html"),
                str(tmp_path / "y.html"),
            ]
        )
        == 2
    )


def test_marked_spans_are_escaped_and_nested():
    text = html.marked(["a", "<b>", "c"], [(1, 1, "aligned"), (None, None, "trigger")])
    assert text == 'a <mark class="aligned">&lt;b&gt;</mark> c'


# ---------------------------------------------------------------- example chains


def test_chains_sample_is_seeded_and_ordered_by_iteration(run):
    chains, with_outputs, n_seeds = sample_chains(run / "augmented.parquet", run / "seeds.parquet", 1, seed=3)
    again, _, _ = sample_chains(run / "augmented.parquet", run / "seeds.parquet", 1, seed=3)
    assert [c["sentence_id"] for c in chains] == [c["sentence_id"] for c in again]
    assert (with_outputs, n_seeds) == (2, 2)
    full, _, _ = sample_chains(run / "augmented.parquet", run / "seeds.parquet", 5)
    assert [c["sentence_id"] for c in full] == ["s2", "s1"]  # by frame: Activity_stop, Commerce_buy
    assert [o["iteration"] for o in full[1]["outputs"]] == [1, 2, 3]


def test_chains_page_marks_the_trigger_and_each_aligned_span(run):
    page = chains_page(run / "augmented.parquet", run / "seeds.parquet", 5, demo=True)
    assert 'Abby <mark class="trigger">bought</mark> a car' in page
    assert 'Yesterday Abby <mark class="aligned">acquired</mark> a car' in page
    assert "none aligned: the chain ends" in page and "&lt;smoking&gt;" in page and "<b>gave</b>" not in page
    assert "Demo run" in page and "2 of the 2 seeds with outputs" in page


# ---------------------------------------------------------------- warnings of a degraded run


def test_stages_record_empty_and_degraded_results(run, tmp_path):
    stats, _, _ = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", StatsSettings(pos_tagger=None))
    assert any("POS diversity (Table 3) skipped" in w["message"] for w in stats["warnings"])
    filter_stage(run / "augmented.parquet", run / "seeds.parquet", tmp_path / "filtering")
    summary = json.loads((tmp_path / "filtering/filters.json").read_text())
    # The hand-made outputs all score 0.9 with the aligner: both aligner-score filters pass nothing.
    empty = {w["message"].split("'")[1] for w in summary["warnings"] if w["kind"] == "empty"}
    assert {"aligner score >= .99", "aligner score >= .95", "lax", "strict"} <= empty and "iter <= 3" not in empty
    assert empty_warnings("paraphrastic", {"examples": 0, "filter": "lax"})[0]["kind"] == "empty"
    assert empty_warnings("paraphrastic", {"examples": 4, "filter": "lax"}) == []
    assert "0 span-alignment instances" in empty_warnings("graph", {"instances": 0, "chains": 2})[0]["message"]
    rows = [
        {"system": "cosine (untrained)", "soft_f1": 0.8, "n": 10},
        {"system": "Cue", "soft_f1": 0.1, "n": 10},
        {"system": "Df+Mx+Cue+SBCE", "soft_f1": 0.6, "n": 10},
        {"system": "+SBCE +tuned", "soft_f1": 0.9, "n": 10},
    ]
    assert [w["message"].split(":")[0] for w in below_baseline(rows)] == ["Df+Mx+Cue+SBCE"]  # Cue is an ablation


def test_curves_equal_to_none_are_found():
    rows = [
        {"augmenter": a, "fraction": f, "f1_mean": m, "f1_std": 0.0, "augmented_examples": e}
        for a, f, m, e in [
            ("none", 0.5, 0.4, 0),
            ("none", 1.0, 0.6, 0),
            ("geca", 0.5, 0.4, 0),
            ("geca", 1.0, 0.6, 0),
            ("lexsub", 0.5, 0.4, 3),
            ("lexsub", 1.0, 0.6, 5),
            ("paraphrastic", 0.5, 0.5, 3),
            ("paraphrastic", 1.0, 0.6, 4),
        ]
    ]
    assert same_as_baseline(rows) == {"geca": True, "lexsub": False}


def test_a_curve_point_whose_model_predicts_nothing_is_a_warning(tmp_path):
    """Read from the curves' prediction counts: every seed silent is empty, some degraded, none (or an
    F1 of 0 from a model that predicts) is no warning; argument ID's curves have their own stage."""
    rows = [
        {"augmenter": a, "fraction": f, "seeds": 3, "f1_mean": m, "f1_std": 0.0, "augmented_examples": e}
        | ({"seeds_predicting_nothing": silent} if silent is not None else {})
        for a, f, m, e, silent in [
            ("none", 0.5, 0.0, 0, 3),
            ("none", 1.0, 0.0, 0, 0),
            ("paraphrastic", 0.5, 0.31, 40, 1),
            ("paraphrastic", 1.0, 0.33, 80, None),
        ]
    ]
    files.write_csv(rows, tmp_path / "argid/curves.csv")
    out = tmp_path / "w.json"
    args = ["report", "warnings", "--argid-curves", str(tmp_path / "argid/curves.csv"), "--out-json", str(out)]
    assert main([*args, "--out-html", str(tmp_path / "w.html"), "--base", str(tmp_path)]) == 0
    records = json.loads(out.read_text())["warnings"]
    assert [(r["stage"], r["kind"], r["source"]) for r in records] == [
        ("argument ID", "empty", "argid/curves.csv"),
        ("argument ID", "degraded", "argid/curves.csv"),
    ]
    assert records[0]["message"].startswith("no augmentation at 50% of the training sentences: 3 of 3 seeds' models")
    assert "paraphrastic at 50%" in records[1]["message"] and "F1 of 0.310 measures no model" in records[1]["message"]
    assert "predicted nothing on the test set" in (tmp_path / "w.html").read_text()


def _shard_stats(root, iteration, shard, **stats):
    path = root / "iterations" / f"iter{iteration}" / f"shard{shard:03d}.paraphrase_stats.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "requests": 0,
                "outputs": 0,
                "violations_dropped": 0,
                "duplicates_dropped": 0,
                "requests_without_output": 0,
                **stats,
            }
        )
    )
    return path


def test_warnings_page_lists_every_degraded_stage(run, tmp_path):
    res = tmp_path / "res"
    stats = [
        _shard_stats(res, 1, 0, requests=10, outputs=24, violations_dropped=40, requests_without_output=2),
        _shard_stats(res, 1, 1, requests=10, outputs=30),
        _shard_stats(res, 2, 0),
        _shard_stats(res, 2, 1),
    ]
    (res / "models/aligner").mkdir(parents=True)
    (res / "models/aligner" / modeldir.CONFIG_FILE).write_text(json.dumps({"threshold": 0.0}))
    files.write_csv([{"iteration": 1, "outputs": 4, "aligned": 4}], res / "per_iteration.csv")
    files.write_csv(
        [
            {
                "augmenter": a,
                "fraction": 1.0,
                "seeds": 1,
                "f1_mean": 0.5,
                "f1_std": 0.0,
                "train_sentences": 4,
                "augmented_examples": e,
            }
            for a, e in [("none", 0), ("geca", 0)]
        ],
        res / "frameid/curves.csv",
    )
    geca = res / "augmenters/geca.json"
    geca.parent.mkdir(parents=True)
    geca.write_text(
        json.dumps({"examples": 0, "warnings": empty_warnings("geca", {"examples": 0, "fragment_pairs": 0})})
    )
    (res / "human_eval.json").write_text("{}")
    records, para, _ = warnings.collect(
        [geca],
        stats,
        width=6,
        aligner=res / "models/aligner",
        per_iteration=res / "per_iteration.csv",
        curves=res / "frameid/curves.csv",
        simulated_judgments=res / "human_eval.json",
        base=res,
    )
    assert para[0]["requests"] == 20 and para[0]["requests_without_output"] == 2
    assert para[0]["violation_share_of_candidates"] == pytest.approx(40 / 120)
    by_stage = {}
    for r in records:
        by_stage.setdefault(r["stage"], []).append(r)
    assert by_stage["augmenter: GECA"][0]["source"] == "augmenters/geca.json"
    paraphrase = [r["message"] for r in by_stage["paraphrase"]]
    assert any("iteration 1: 2 of 20 requests (10%) got no output" in m for m in paraphrase)
    assert any("iteration 2: no requests" in m for m in paraphrase)
    assert "never predicts 'no counterpart'" in by_stage["span aligner"][0]["message"]
    assert any(
        "equals the no augmentation curve at every fraction" in r["message"] for r in by_stage["Frame ID (Figure 8)"]
    )
    assert "SIMULATED" in by_stage["human evaluation"][0]["message"]
    page = warnings.warnings_page(records)
    assert f"{len(records)} warning(s)" in page and page.count("<tr><td>") == len(records)
    assert "No stage reported" in warnings.warnings_page([])


def test_only_an_untuned_null_threshold_is_a_warning(tmp_path):
    """A threshold of 0 chosen on held-out pairs is measured, not degraded; one never tuned is."""
    model = tmp_path / "aligner"
    model.mkdir()
    for saved, flagged in [
        ({"threshold": 0.0, "threshold_source": "untuned"}, True),
        ({"threshold": 0.0, "threshold_source": "held-out 10% of training pairs"}, False),
        ({"threshold": 0.3, "threshold_source": "dev instances"}, False),
        ({"threshold": 0.0}, True),
    ]:  # saved before threshold_source existed
        (model / modeldir.CONFIG_FILE).write_text(json.dumps(saved))
        assert bool(warnings.aligner_warnings(model)) is flagged, saved


def test_warnings_command_cuts_the_paraphrase_page_at_max_rows(tmp_path):
    shards = [str(_shard_stats(tmp_path, i, 0, requests=2, outputs=2)) for i in range(1, 5)]
    common = ["report", "warnings", "--paraphrase-stats", *shards, "--width", "3"]
    common += ["--out-json", str(tmp_path / "w.json"), "--out-html", str(tmp_path / "w.html")]
    common += ["--out-paraphrase-csv", str(tmp_path / "p.csv"), "--out-paraphrase-html", str(tmp_path / "p.html")]
    assert main([*common, "--max-rows", "2"]) == 0
    assert "The first 2 of 4 rows" in (tmp_path / "p.html").read_text()
    assert main(common) == 0  # the setting's default shows every row of a short table
    assert "The first" not in (tmp_path / "p.html").read_text()


def test_warnings_and_summary_commands(run, tmp_path):
    stats, rows, _ = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", StatsSettings(pos_tagger=None))
    files.write_json(stats, tmp_path / "report/stats.json")
    files.write_csv(rows, tmp_path / "per_iteration.csv")
    filter_stage(run / "augmented.parquet", run / "seeds.parquet", tmp_path / "filtering")
    shard = _shard_stats(tmp_path, 1, 0, requests=2, outputs=2)
    assert (
        main(
            [
                "report",
                "warnings",
                "--summaries",
                str(tmp_path / "report/stats.json"),
                str(tmp_path / "filtering/filters.json"),
                "--paraphrase-stats",
                str(shard),
                "--width",
                "3",
                "--out-json",
                str(tmp_path / "w.json"),
                "--out-html",
                str(tmp_path / "w.html"),
                "--out-paraphrase-csv",
                str(tmp_path / "p.csv"),
                "--out-paraphrase-html",
                str(tmp_path / "p.html"),
            ]
        )
        == 0
    )
    records = warnings.load(tmp_path / "w.json")
    assert {r["stage"] for r in records} == {"intrinsic statistics", "filters (Table 4)"}
    run_json = json.dumps(
        {
            "run_name": "framenet",
            "inputs": ["fndata-1.7"],
            "demo": False,
            "iterations": 3,
            "n_shards": 2,
            "paraphraser": "humarin/chatgpt_paraphraser_on_T5_base",
            "encoder": "bert",
        }
    )
    args = [
        "report",
        "summary",
        "--run",
        run_json,
        "--stats",
        str(tmp_path / "report/stats.json"),
        "--per-iteration",
        str(tmp_path / "per_iteration.csv"),
        "--filters",
        str(tmp_path / "filtering/filters.json"),
        "--warnings",
        str(tmp_path / "w.json"),
        "--paraphrase",
        str(tmp_path / "p.csv"),
        "--out-html",
        str(tmp_path / "s.html"),
        "--out-fragment",
        str(tmp_path / "s_fragment.html"),
        "--out-json",
        str(tmp_path / "s.json"),
    ]
    assert main(args) == 0
    page = (tmp_path / "s.html").read_text()
    assert "Run <strong>framenet</strong>" in page and "Demo run" not in page and "humarin/chatgpt" in page
    assert f"{len(records)} warning(s)" in page and "<th>aligned outputs</th>" in page
    fragment = (tmp_path / "s_fragment.html").read_text()
    assert fragment.startswith('<div class="spanaug-summary">') and "<html" not in fragment
    assert json.loads((tmp_path / "s.json").read_text())["dataset"]["outputs"] == 4
    assert (
        main([*args[:3], json.dumps({"run_name": "demo", "demo": True, "simulated_judgments": True}), *args[4:]]) == 0
    )
    page = (tmp_path / "s.html").read_text()
    assert "Demo run." in page and "<strong>simulated</strong>" in page
    assert "Toy models" not in page  # the demo corpus alone says nothing of the models

    # The paraphraser by name and size (its weights' headers); the toy banner, with its rule, only for
    # one trained from scratch on few pairs, not for a pretrained model fine-tuned on as few.
    from safetensors.numpy import save_file

    para = tmp_path / "paraphraser"
    para.mkdir()
    save_file({"w": np.zeros((4, 8), np.float32), "b": np.zeros(8, np.float32)}, str(para / "model.safetensors"))
    record = {"steps": 9, "pairs": 80, "config": {"bitext": "pairs.tsv"}, "init": "gemma-3-270m.gguf"}
    (para / "training_summary.json").write_text(json.dumps(record))
    assert main([*args, "--paraphraser", str(para)]) == 0
    page = (tmp_path / "s.html").read_text()
    assert f"The paraphraser <code>{para}</code> has 40 parameters" in page and "Toy models" not in page
    assert " and was fine-tuned from gemma-3-270m.gguf on 80 sentence pairs of pairs.tsv." in page
    assert json.loads((tmp_path / "s.json").read_text())["paraphraser"]["parameters"] == 40
    del record["init"]
    (para / "training_summary.json").write_text(json.dumps(record))
    assert main([*args, "--paraphraser", str(para)]) == 0
    page = (tmp_path / "s.html").read_text()
    assert "Toy models" in page and "trained from scratch on 80 sentence pairs" in page
    assert "mechanics, not paraphrase quality" in page and "fewer than 1,000 sentence pairs" in page


def _engine(backend="static", path="graphs", captures=40, fallbacks=0, device="NVIDIA H200", dtype="bfloat16"):
    return {
        "backend": backend,
        "device": device,
        "dtype": dtype,
        "decode_path": path,
        "cuda_graph_captures": captures,
        "cuda_graph_fallbacks": fallbacks,
    }


def test_the_shards_engines_reach_the_summary_and_lost_graphs_the_warnings_page(run, tmp_path):
    """Each paraphrase and align shard's engine record, summed per run on the summary; a shard whose
    CUDA graphs were lost is a warning naming it."""
    para = [
        _shard_stats(tmp_path, 1, 0, requests=2, outputs=2, **_engine()),
        _shard_stats(tmp_path, 1, 1, requests=2, outputs=2, **_engine(path="fallback", captures=30, fallbacks=2)),
        _shard_stats(tmp_path, 2, 0, requests=2, outputs=2, **_engine(captures=10)),
    ]
    align = []
    for i, shard in [(1, 0), (1, 1)]:
        align.append(tmp_path / "iterations" / f"iter{i}" / f"shard{shard:03d}.align_stats.json")
        files.write_json({"beams": 3, **_engine("cross aligner", "eager", 0)}, align[-1])
    common = ["report", "warnings", "--paraphrase-stats", *map(str, para), "--align-stats", *map(str, align)]
    assert main([*common, "--out-json", str(tmp_path / "w.json"), "--out-html", str(tmp_path / "w.html")]) == 0
    lost = [r for r in warnings.load(tmp_path / "w.json") if "CUDA graphs lost" in r["message"]]
    assert [(r["stage"], r["kind"]) for r in lost] == [("paraphrase", "degraded")]
    assert lost[0]["message"].startswith("iteration 1, shard 001: CUDA graphs lost, 2 capture(s) failed")
    assert "CUDA graphs lost" in (tmp_path / "w.html").read_text()
    texts = [e["text"] for e in warnings.load_engines(tmp_path / "w.json")]
    assert texts == [
        "paraphrase: static on NVIDIA H200, bfloat16, fallback in 1 of 3 shards, graphs in 2 of 3 shards "
        "(80 captures, 2 fallbacks)",
        "align: cross aligner on NVIDIA H200, bfloat16, eager in 2 shard(s)",
    ]
    stats, rows, _ = intrinsic_stats(run / "augmented.parquet", run / "seeds.parquet", StatsSettings(pos_tagger=None))
    files.write_json(stats, tmp_path / "stats.json")
    files.write_csv(rows, tmp_path / "per_iteration.csv")
    filter_stage(run / "augmented.parquet", run / "seeds.parquet", tmp_path / "filtering")
    summary = [
        "report",
        "summary",
        "--run",
        json.dumps({"run_name": "framenet"}),
        "--stats",
        str(tmp_path / "stats.json"),
    ]
    summary += [
        "--per-iteration",
        str(tmp_path / "per_iteration.csv"),
        "--filters",
        str(tmp_path / "filtering/filters.json"),
    ]
    summary += ["--warnings", str(tmp_path / "w.json"), "--out-html", str(tmp_path / "s.html")]
    summary += ["--out-fragment", str(tmp_path / "f.html"), "--out-json", str(tmp_path / "s.json")]
    assert main(summary) == 0
    page = (tmp_path / "s.html").read_text()
    assert f"Ran on: {texts[0]}; {texts[1]}." in page
    assert json.loads((tmp_path / "s.json").read_text())["engines"][0]["cuda_graph_captures"] == 80


def test_a_damaged_engine_record_is_an_error_naming_the_shard(tmp_path, capsys):
    shard = _shard_stats(tmp_path, 1, 0, **_engine(path="warp"))
    out = ["--out-json", str(tmp_path / "w.json"), "--out-html", str(tmp_path / "w.html")]
    assert main(["report", "warnings", "--paraphrase-stats", str(shard), *out]) == 2
    err = capsys.readouterr().err.strip()
    why = "decode_path must be one of graphs, eager, fallback, not 'warp'"
    assert err == f"spanaug: error: {shard}: its engine record is malformed: {why}"


def test_warn_logs_and_records(caplog):
    out = []
    warn(out, "empty", "nothing passed")
    assert out == [{"kind": "empty", "message": "nothing passed"}] and "nothing passed" in caplog.text


def test_per_iteration_plot_draws_scores_and_names_unaligned_outputs(tmp_path, monkeypatch):
    drawn = {}
    from spanaug.core import plotting

    def save(fig, path):
        drawn["axes"] = fig.axes

    monkeypatch.setattr(plotting, "save", save)
    plot_per_iteration(
        [{"iteration": 1, "outputs": 4, "aligned": 3, "mean_paraphrase_score": 0.5, "mean_aligner_score": 0.9}],
        tmp_path / "p.png",
    )
    labels = [t.get_text() for ax in drawn["axes"] if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "no span aligned (1 in all)" in labels and "mean aligner score" in labels
    assert any("mean paraphrase score" in label for label in labels)


def test_chains_ended_by_require_are_warnings_with_their_counts(tmp_path):
    """frame_elements.require can end most chains while retention reads 100% (only kept outputs
    count): the warnings page says how many chains it ended, per iteration, from the selection
    stage's shard statistics."""

    def select_stats(i, j, **counts):
        path = tmp_path / f"iter{i}" / f"shard{j:03d}.select_stats.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"requests": 0, "outputs": 0, "ended_by_require": 0, **counts}))
        return str(path)

    shards = [
        select_stats(1, 0, requests=800, outputs=200, ended_by_require=600),
        select_stats(1, 1, requests=739, outputs=159, ended_by_require=580),
        select_stats(2, 0, requests=300, outputs=300),
        select_stats(3, 0, requests=4, ended_by_require=4),
    ]
    assert [(r["iteration"], r["requests"], r["ended_by_require"]) for r in warnings.select_rows(shards)] == [
        (1, 1539, 1180),
        (2, 300, 0),
        (3, 4, 4),
    ]
    out = tmp_path / "w.json"
    args = ["report", "warnings", "--select-stats", *shards, "--out-json", str(out)]
    assert main([*args, "--out-html", str(tmp_path / "w.html"), "--base", str(tmp_path)]) == 0
    records = json.loads(out.read_text())["warnings"]
    assert [(r["stage"], r["kind"]) for r in records] == [("select", "degraded"), ("select", "empty")]
    assert "iteration 1: frame_elements.require ended 1,180 of 1,539 chains (77%)" in records[0]["message"]
    assert "iteration 3: frame_elements.require ended 4 of 4 chains" in records[1]["message"]
    assert "frame_elements.require ended" in (tmp_path / "w.html").read_text()


def test_the_summary_counts_a_gguf_paraphrasers_parameters_from_its_file(tmp_path):
    from spanaug.report.summary import paraphraser_identity

    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(tmp_path / "tiny.gguf"), "llama")
    writer.add_tensor("token_embd.weight", __import__("numpy").zeros((10, 4), dtype="float32"))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert paraphraser_identity(str(tmp_path / "tiny.gguf"))["parameters"] == 40
    assert paraphraser_identity("gguf:no-such-model")["parameters"] is None
