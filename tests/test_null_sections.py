"""Every null-able section can be off in any combination the schema allows: the preflight and a dry run
of the whole workflow both accept it (a covering set of the combinations, below)."""

import itertools
import subprocess

import pytest
from conftest import REPO
from test_preflight import _demo
from test_workflow import SNAKEMAKE

from spanaug.workflow.preflight import check_run

TOP = ("baselines", "human_eval", "augmenters", "frameid")


def combinations() -> list[dict]:
    """All 16 on/off combinations of the top-level sections, with aligner.evaluation and
    aligner.systems set from their bits' parities: every pair of the six switches takes all four
    on/off pairs (a covering set of the 64 combinations)."""
    out = []
    for bits in itertools.product((0, 1), repeat=len(TOP)):
        off = {name: None for name, bit in zip(TOP, bits) if bit}
        if "frameid" in off:  # argid trains and tests on frameid's split: off with it
            off["argid"] = None
        aligner = {
            "evaluation": None if bits[0] ^ bits[1] else {"epochs": 5},
            "systems": {} if bits[2] ^ bits[3] else None,
        }
        out.append({**off, "aligner": aligner})
    return out


def test_the_combinations_cover_every_pair_of_switches():
    def switches(c):
        return [c.get(name, 1) is not None for name in TOP] + [
            c["aligner"]["evaluation"] is not None,
            c["aligner"]["systems"] is not None,
        ]

    rows = [switches(c) for c in combinations()]
    for i, j in itertools.combinations(range(6), 2):
        assert {(r[i], r[j]) for r in rows} == {(a, b) for a in (False, True) for b in (False, True)}


@pytest.mark.parametrize(
    "changes", combinations(), ids=lambda c: "+".join(sorted(k for k in c if c[k] is None)) or "all-on"
)
def test_config_check_accepts_each_combination(changes):
    assert check_run(_demo(**changes)) == []


def test_argid_without_frameid_is_refused_naming_both():
    with pytest.raises(Exception, match="argid: trains and tests on frameid's split"):
        check_run(_demo(frameid=None))


@pytest.mark.workflow
@pytest.mark.parametrize(
    "changes", combinations(), ids=lambda c: "+".join(sorted(k for k in c if c[k] is None)) or "all-on"
)
def test_dry_run_plans_each_combination(changes, tmp_path):
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    import yaml

    override = tmp_path / "off.yaml"
    override.write_text(yaml.safe_dump({"run_name": "nulls", **changes}))
    proc = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "workflow/Snakefile"), "--configfile", str(REPO / "config/demo.yaml"),
         str(override), "-n", "--cores", "1"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.workflow
@pytest.mark.parametrize("mode", ["off", "keep", "align"])
def test_dry_run_plans_the_frame_elements_page_in_each_mode(mode, tmp_path):
    """The Frame elements page is made in every mode (with FEs off it says so), so the warnings and
    summary pages that read it plan alike."""
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    import yaml

    override = tmp_path / "fe.yaml"
    override.write_text(yaml.safe_dump({"run_name": f"fe-{mode}", "frame_elements": {"mode": mode}}))
    proc = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "workflow/Snakefile"), "--configfile", str(REPO / "config/demo.yaml"),
         str(override), "-n", "-p", "--cores", "1"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "rule report_frame_elements:" in proc.stdout
    assert "spanaug report frame-elements " in proc.stdout and f"--mode {mode}" in proc.stdout
