"""The workflow used as a Snakemake module, as `snakedeploy deploy-workflow` sets it up in another folder."""

import os
import re
import subprocess

import pytest
import yaml
from conftest import REPO, SNAKEMAKE

pytestmark = pytest.mark.workflow

# What snakedeploy writes (workflow/Snakefile of the deploying project), with this checkout's workflow.
DEPLOYED = """\
configfile: "config/config.yaml"


module spanaug:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from spanaug
"""

# Snakemake runs a module's onstart/onsuccess/onerror only when the main Snakefile calls them.
HANDLERS = """

onstart:
    spanaug.onstart()


onsuccess:
    spanaug.onsuccess()


onerror:
    spanaug.onerror()
"""


def _absolute(value):
    """The demo config with its paths into this checkout (resources/demo/...) made absolute."""
    if isinstance(value, dict):
        return {k: _absolute(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v) for v in value]
    if isinstance(value, str) and "/" in value and (REPO / value).exists():
        return str(REPO / value)
    return value


def _snakemake(cwd, *args):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([SNAKEMAKE, *args], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc.stdout + proc.stderr


def _job_counts(output):
    """Rule -> job count from a dry run's 'Job stats' table."""
    table = output.split("Job stats:")[1].split("total")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


@pytest.fixture
def deployed(tmp_path):
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    config = _absolute(yaml.safe_load((REPO / "config/demo.yaml").read_text()))
    config["run_name"] = f"module-test-{os.getpid()}"  # a run the checkout has no results of
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "Snakefile").write_text(DEPLOYED.format(snakefile=REPO / "workflow" / "Snakefile"))
    return tmp_path, config["run_name"]


def test_the_module_plans_the_demos_jobs(deployed):
    work, run_name = deployed
    planned = _job_counts(_snakemake(work, "-n"))
    # The demo's dry run in the checkout, under the same run_name (so that no results of it exist).
    reference = _job_counts(
        _snakemake(REPO, "-n", "--configfile", "config/demo.yaml", "--config", f"run_name={run_name}")
    )
    assert planned == reference and planned["all"] == 1 and planned["paraphrase"] > 0
    assert not (REPO / "results" / run_name).exists()


def test_the_modules_handlers_record_the_runs_config(deployed):
    """Called from the main Snakefile, the module's onstart records the config where its results go."""
    work, run_name = deployed
    (work / "Snakefile").write_text((work / "Snakefile").read_text() + HANDLERS)
    res = work / "results" / run_name
    _snakemake(work, "--cores", "1", f"results/{run_name}/data/import_stats.json")
    recorded = yaml.safe_load((res / "config.effective.yaml").read_text())
    assert recorded["run_name"] == run_name and recorded["data"]["inputs"] == [str(REPO / "resources/demo/fndata-demo")]
    assert not list((work / ".snakemake" / "spanaug-owners").iterdir())  # onsuccess unregistered the run
