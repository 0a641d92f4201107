"""The report's Frame elements page: retention tables, FE-marked chains, the off page, its warnings
on the warnings page and its line on the summary."""

import csv
import json

import pyarrow as pa
import pytest
from conftest import fe, write_fe_chains

from spanaug.cli.main import main
from spanaug.core import artifacts, files
from spanaug.evaluation.filtering import filter_stage
from spanaug.evaluation.statistics import StatsSettings, intrinsic_stats
from spanaug.report import warnings
from spanaug.report.frame_elements import LOW_RETENTION, colours, fe_sentence, fe_warnings


def _page(tmp_path, augmented, mode="align", demo=False):
    out = tmp_path / "report"
    args = ["report", "frame-elements", "--augmented", str(augmented), "--seeds", str(tmp_path / "seeds.parquet")]
    args += ["--mode", mode, "--select", "joint", "--require", "core", "--demo", str(demo).lower()]
    args += ["--out-html", str(out / "frame_elements.html"), "--out-csv", str(out / "frame_elements.csv")]
    args += ["--out-names-csv", str(out / "names.csv"), "--out-json", str(out / "frame_elements.json")]
    assert main(args) == 0
    return (out / "frame_elements.html").read_text(), json.loads((out / "frame_elements.json").read_text()), out


def _without_fes(tmp_path):
    """The same outputs as FEs off makes them: every list null."""
    table = artifacts.read_table(tmp_path / "augmented.parquet", artifacts.AUGMENTED)
    off = table.set_column(
        table.schema.get_field_index("frame_elements"),
        "frame_elements",
        pa.array([None] * table.num_rows, artifacts.FRAME_ELEMENTS),
    )
    artifacts.write_table(off, tmp_path / "off.parquet", artifacts.AUGMENTED)
    return tmp_path / "off.parquet"


def test_fe_sentence_colours_each_fe_labels_it_and_nests_the_trigger():
    palette = colours(["Degree", "Exerter"])
    assert palette["Degree"] != palette["Exerter"]
    tokens = ["the", "strongest", "<critics>", "of", "it"]
    # Degree is the trigger itself (incorporated); Exerter covers two tokens; the trigger crosses no tag.
    text = fe_sentence(tokens, [fe("Degree", 1, 1), fe("Exerter", 2, 4), fe("Place", null_type="INI")], (1, 1), palette)
    assert text == (
        f'the <span class="fe" style="background:{palette["Degree"]}"><span class="trig">strongest</span>'
        f"<sub>Degree</sub></span> "
        f'<span class="fe" style="background:{palette["Exerter"]}">&lt;critics&gt; of it<sub>Exerter</sub></span>'
    )
    # An FE covering a trigger that spans past it: runs keep every tag nested.
    text = fe_sentence(["a", "b", "c", "d"], [fe("X", 0, 1)], (1, 2), palette)
    assert text.count("<span") == text.count("</span>") == 3
    assert text.index('<span class="trig">b</span>') < text.index("<sub>X</sub>")
    assert fe_sentence(["a", "b"], None, None, palette) == "a b"


def test_page_shows_retention_names_and_fe_marked_chains(tmp_path):
    write_fe_chains(tmp_path)
    page, summary, out = _page(tmp_path, tmp_path / "augmented.parquet", demo=True)
    assert "Demo run" in page and "The seeds hold <strong>6</strong> overt frame elements in 2 of 3 seeds" in page
    assert "<code>frame_elements.mode: align</code>" in page and "<code>require: core</code>" in page
    assert 'src="data:image/png;base64,' in page  # the retention and score figure, inline
    # The chains: s1 and s2 have overt FEs (s3 none, so it is not drawn); lost FEs listed beside.
    assert "2 of the 2 seeds that have overt FEs and outputs" in page
    assert '<span class="lost">lost: Seller</span>' in page
    assert '<span class="lost">lost: Agent, Activity</span>' in page
    assert "Place (INI)" in page and "no trigger aligned: the chain ends" in page
    assert "<sub>Buyer</sub>" in page and '<span class="trig">purchased</span>' in page
    with open(out / "frame_elements.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["iteration"], r["carried"], r["lost"], r["retention"]) for r in rows] == [
        ("1", "6", "0", "1.0"),
        ("2", "3", "3", "0.5"),
    ]
    with open(out / "names.csv", newline="") as handle:
        names = {r["name"]: r for r in csv.DictReader(handle)}
    assert names["Seller"]["retention_iter2"] == "0.0" and "Place" not in names
    assert summary["mode"] == "align" and summary["seed_overt_fes"] == 6 and summary["outputs_carry_fes"]
    # 50% retention in iteration 2 is not below LOW_RETENTION; but of the 4 FEs whose words its outputs
    # repeat, 2 were lost: verbatim agreement 50%, under the default 80%.
    assert [w["kind"] for w in summary["warnings"]] == ["degraded"]
    assert "iteration(s) 2 (50% of 4)" in summary["warnings"][0]["message"]
    assert [(r["verbatim_fes"], r["verbatim_agreement"]) for r in rows] == [("6", "1.0"), ("4", "0.5")]


def test_off_page_says_what_the_seeds_hold_and_warns(tmp_path):
    write_fe_chains(tmp_path)
    page, summary, out = _page(tmp_path, _without_fes(tmp_path), mode="off")
    assert "Frame elements are off" in page and "The seeds hold 6 overt frame elements in 2 of 3 seeds" in page
    assert "data:image/png" not in page and "Example chains" not in page
    (warning,) = summary["warnings"]
    assert warning["kind"] == "degraded" and "frame_elements.mode is off, but 2 of 3 seeds hold 6" in warning["message"]
    assert (out / "frame_elements.csv").read_text().startswith("iteration,outputs,") and summary["per_iteration"] == []


def test_low_and_empty_retention_are_warnings():
    def row(it, carried, lost):
        share = carried / (carried + lost)
        return {"iteration": it, "fes_to_carry": carried + lost, "carried": carried, "retention": share}

    counts = {"seeds": 3, "seeds_with_fes": 2, "overt_fes": 6, "null_instantiated_fes": 0}
    assert fe_warnings("align", counts, [row(1, 5, 5), row(2, 6, 0)]) == []  # exactly 50%: no warning
    found = fe_warnings("keep", counts, [row(1, 9, 1), row(2, 4, 6), row(3, 0, 10)])
    assert [w["kind"] for w in found] == ["empty", "degraded"]
    assert "iteration 3: none of 10 seed FEs was carried" in found[0]["message"]
    assert f"below {LOW_RETENTION:.0%} in iteration(s) 2 (40%)" in found[1]["message"]
    assert fe_warnings("off", {**counts, "overt_fes": 0}, []) == []  # nothing to carry: nothing lost


def test_fe_warnings_reach_the_warnings_page_and_retention_the_summary(tmp_path):
    write_fe_chains(tmp_path)
    _page(tmp_path, _without_fes(tmp_path), mode="off")
    records, _, _ = warnings.collect([tmp_path / "report/frame_elements.json"])
    assert [r["stage"] for r in records] == ["frame elements"]
    _, _, out = _page(tmp_path, tmp_path / "augmented.parquet")
    stats, rows, _ = intrinsic_stats(tmp_path / "augmented.parquet", tmp_path / "seeds.parquet", StatsSettings())
    files.write_json(stats, tmp_path / "stats.json")
    files.write_csv(rows, tmp_path / "per_iteration.csv")
    filter_stage(tmp_path / "augmented.parquet", tmp_path / "seeds.parquet", tmp_path / "filtering")
    warnings.write_warnings([], tmp_path / "w.json", tmp_path / "w.html")
    args = ["report", "summary", "--run", json.dumps({"run_name": "fe"}), "--stats", str(tmp_path / "stats.json")]
    args += ["--per-iteration", str(tmp_path / "per_iteration.csv"), "--warnings", str(tmp_path / "w.json")]
    args += ["--filters", str(tmp_path / "filtering/filters.json")]
    args += ["--frame-elements", str(out / "frame_elements.json")]
    args += ["--out-html", str(tmp_path / "s.html"), "--out-fragment", str(tmp_path / "f.html")]
    assert main([*args, "--out-json", str(tmp_path / "s.json")]) == 0
    section = (tmp_path / "s.html").read_text().split("<h2>Frame elements</h2>")[1].split("<h2>")[0]
    assert "Mode <code>align</code>" in section and "the seeds hold 6 overt frame elements" in section
    assert '<td class="num">0.500</td>' in section  # iteration 2's retention
    numbers = json.loads((tmp_path / "s.json").read_text())["frame_elements"]
    assert [r["retention"] for r in numbers["per_iteration"]] == pytest.approx([1.0, 0.5])


def test_fes_placed_off_their_own_words_are_a_warning():
    """Retention counts FEs placed anywhere; verbatim agreement checks the ones whose words the output
    repeats. Under frame_elements.min_verbatim_agreement, the page (and so the warnings page) warns."""

    def row(it, verbatim, agreed):
        return {
            "iteration": it,
            "fes_to_carry": 10,
            "carried": 10,
            "retention": 1.0,
            "verbatim_fes": verbatim,
            "verbatim_agreement": agreed / verbatim if verbatim else None,
        }

    counts = {"seeds": 3, "seeds_with_fes": 2, "overt_fes": 6, "null_instantiated_fes": 0}
    assert fe_warnings("align", counts, [row(1, 61, 59), row(2, 0, 0)], 0.8) == []
    found = fe_warnings("align", counts, [row(1, 61, 12), row(2, 40, 36), row(3, 30, 20)], 0.8)
    assert [w["kind"] for w in found] == ["degraded"]
    assert "iteration(s) 1 (20% of 61), 3 (67% of 30)" in found[0]["message"]
    assert fe_warnings("align", counts, [row(1, 61, 12)], 0.1) == []


def test_the_page_reports_verbatim_agreement_per_iteration(tmp_path):
    write_fe_chains(tmp_path)
    _page(tmp_path, tmp_path / "augmented.parquet")
    with open(tmp_path / "report" / "frame_elements.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {"verbatim_fes", "verbatim_agreement"} <= set(rows[0])
