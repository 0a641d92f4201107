"""The workflow reads its config files as strictly as `spanaug config check` does.

Snakemake loads every --configfile before any workflow code runs; the workflow profile
(workflow/profiles/default/config.yaml) reads them first (spanaug.workflow.command_line)."""

import subprocess

import pytest
from conftest import REPO
from test_workflow import SNAKEMAKE

from spanaug.workflow import command_line

BAD_FILES = [
    ("twice.yaml", b"run_name: first\niterations: 2\nrun_name: second\n",
     ", line 3: duplicate key 'run_name' (first given on line 1)"),
    ("latin1.yaml", "run_name: demo\n# caf\u00e9\n".encode("latin-1"),
     ", line 2: not UTF-8 text (byte 0xe9 at column 6)"),
    ("malformed.yaml", b"run_name: demo\ndata: [a\n  b: c\n", ", line 3: malformed YAML"),
    ("list.yaml", b"- a\n- b\n", ": a config file is a mapping of sections, not list"),
]  # fmt: skip


def snakemake(*args, cwd=REPO):
    if SNAKEMAKE is None:
        pytest.skip("snakemake is not installed")
    proc = subprocess.run([SNAKEMAKE, *args, "-n", "--cores", "1"], cwd=cwd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.workflow
@pytest.mark.parametrize(("name", "data", "message"), BAD_FILES)
def test_a_bad_configfile_on_the_command_line_stops_with_one_line(tmp_path, name, data, message):
    """Snakemake itself would print a UnicodeDecodeError traceback, or a message naming no file."""
    override = tmp_path / name
    override.write_bytes(data)
    rc, out = snakemake("-s", str(REPO / "workflow/Snakefile"), "--configfile", str(REPO / "config/demo.yaml"),
                        str(override))  # fmt: skip
    assert rc == 2, out
    errors = [line for line in out.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith(f"spanaug: error: config: {override}{message}"), out
    assert "Traceback" not in out


@pytest.mark.workflow
def test_the_profile_check_also_runs_with_a_profile(tmp_path):
    override = tmp_path / "latin1.yaml"
    override.write_bytes(b"run_name: caf\xe9\n")
    rc, out = snakemake("--profile", "profiles/local", f"--configfile={override}")
    assert rc == 2 and f"spanaug: error: config: {override}, line 1: not UTF-8 text" in out, out
    assert "Traceback" not in out


@pytest.mark.workflow
def test_a_default_config_that_is_not_utf8_stops_with_one_line(tmp_path):
    """Without --configfile the Snakefile's `configfile:` directive reads config/config.yaml."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_bytes(b"run_name: demo\n# caf\xe9\n")
    rc, out = snakemake("-s", str(REPO / "workflow/Snakefile"), cwd=tmp_path)
    assert rc == 2, out
    assert "spanaug: error: config: config/config.yaml, line 2: not UTF-8 text" in out
    assert "Traceback" not in out


def test_the_configfiles_are_those_snakemake_parses():
    argv = ["-n", "--config", "run_name=x", "--configfile", "a.yaml", "b.yaml", "--cores", "1"]
    assert [str(p) for p in command_line.configfiles(argv)] == ["a.yaml", "b.yaml"]
    assert [str(p) for p in command_line.configfiles(["--configfiles=c.yaml", "-n"])] == ["c.yaml"]
    assert command_line.configfiles(["-n", "--config", "a=1"]) == []


def test_only_the_snakemake_command_line_is_read():
    assert command_line._is_snakemake_program("/x/.venv/bin/snakemake")
    assert command_line._is_snakemake_program("/x/site-packages/snakemake/__main__.py")
    assert not command_line._is_snakemake_program("/x/.venv/bin/pytest")
    command_line.check_configfiles()  # this process is pytest: its arguments are not Snakemake's


@pytest.mark.parametrize(("name", "data", "message"), BAD_FILES)
def test_check_configfiles_stops_with_exit_2(tmp_path, capsys, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    good = tmp_path / "good.yaml"
    good.write_text("run_name: demo\n")
    with pytest.raises(SystemExit) as stop:
        command_line.check_configfiles(["-n", "--configfile", str(good), str(path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spanaug: error: config: {path}{message}") and len(err.splitlines()) == 1
    command_line.check_configfiles(["-n", "--configfile", str(good)])
