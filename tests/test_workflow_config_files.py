"""The workflow reads its config files as strictly as `spanaug config check` does."""

import subprocess

import pytest
from conftest import REPO
from test_workflow import SNAKEMAKE

pytestmark = pytest.mark.workflow


def test_a_key_given_twice_stops_the_run_naming_the_line(tmp_path):
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    override = tmp_path / "twice.yaml"
    override.write_text("run_name: first\niterations: 2\nrun_name: second\n")
    proc = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "workflow/Snakefile"), "--configfile", str(REPO / "config/demo.yaml"),
         str(override), "-n", "--cores", "1"],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"spanaug: error: config: {override}, line 3: duplicate key 'run_name' (first given on line 1)" in out
    assert "Traceback" not in out
