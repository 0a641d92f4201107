"""The command line: options generated from the settings, one error path, light CPU stages."""

import subprocess
import sys

import pytest
from conftest import REPO, output

from spanaug.cli.main import main
from spanaug.cli.options import COMMANDS
from spanaug.core import artifacts


@pytest.mark.parametrize("path", sorted(" ".join(c.path) for c in COMMANDS))
def test_every_command_has_help(path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*path.split(), "--help"])
    assert exit_.value.code == 0
    assert "usage: spanaug " + path in capsys.readouterr().out


def test_options_carry_the_settings_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["paraphrase", "--help"])
    text = capsys.readouterr().out
    assert "--beam-size" in text and "(default: 20)" in text and "{auto,hf,ct2,static}" in text


def test_a_bad_setting_is_one_line_naming_the_option(tmp_path, capsys):
    assert main(["paraphrase", "--requests", "r", "--out", str(tmp_path / "o"), "--beam-size", "0"]) == 2
    assert capsys.readouterr().err.strip() == "spanaug: error: --beam-size: 0 is less than the minimum of 1"


def test_null_reads_as_unset_and_lists_take_several_values(tmp_path):
    chain = [output("s1", 1, ["He", "purchased", "it"], 1, 1, "Commerce_buy", "buy.v", "purchase")]
    artifacts.write_table(chain, tmp_path / "c.parquet", artifacts.CHAIN)
    assert (
        main(
            [
                "constraints",
                "--chain",
                str(tmp_path / "c.parquet"),
                "--out",
                str(tmp_path / "r.parquet"),
                "--iteration",
                "2",
                "--case-variants",
                "False",
                "--inflections",
                "false",
            ]
        )
        == 0
    )
    row = artifacts.read_table(tmp_path / "r.parquet", artifacts.REQUESTS).to_pylist()[0]
    assert row["constraints"] == ["purchased", "x"]


def test_cpu_stages_do_not_import_torch(tmp_path):
    """The CPU stages run in jobs that never need torch; importing it would cost each of them seconds."""
    chain = [output("s1", 1, ["He", "purchased", "it"], 1, 1, "Commerce_buy", "buy.v", "purchase")]
    artifacts.write_table(chain, tmp_path / "c.parquet", artifacts.CHAIN)
    script = (
        "import sys\n"
        "from spanaug.cli.main import main\n"
        f"assert main(['constraints', '--chain', {str(tmp_path / 'c.parquet')!r}, '--out', "
        f"{str(tmp_path / 'r.parquet')!r}, '--iteration', '2']) == 0\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# What the console script runs: a command, then the exit. The command is `config check`, which needs
# no model; the script first imports torch (or not) and registers an exit handler that says so.
CONSOLE = """
import atexit, sys
if {torch}:
    import torch
if {profiled}:
    sys.setprofile(lambda *args: None)
atexit.register(lambda: print("teardown ran", file=sys.stderr))
sys.argv = ["spanaug", "config", "check", "--configfile", {config!r}]
from spanaug.cli.main import console
console()
"""


def console(config="config/demo.yaml", torch=True, profiled=False) -> subprocess.CompletedProcess:
    script = CONSOLE.format(config=config, torch=torch, profiled=profiled)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)


def test_once_torch_is_loaded_a_command_exits_without_the_interpreters_teardown():
    """Its outputs and streams are flushed and its status kept; the teardown (exit handlers, the
    final collection over every object torch and a model hold) is skipped."""
    done = console()
    assert done.returncode == 0, done.stderr
    assert "every setting, file, model and dependency is in place" in done.stdout  # piped: block-buffered
    assert "teardown ran" not in done.stderr
    failed = console(config="config/no-such.yaml")
    assert failed.returncode == 2 and "spanaug: error:" in failed.stderr and "teardown ran" not in failed.stderr


@pytest.mark.parametrize("setting", [{"torch": False}, {"profiled": True}])
def test_without_torch_or_under_a_profiler_the_exit_is_pythons(setting):
    """A light command has little to tear down, and a profiler (cProfile, coverage) writes its
    results in the teardown."""
    done = console(**setting)
    assert done.returncode == 0, done.stderr
    assert "every setting, file, model and dependency is in place" in done.stdout
    assert "teardown ran" in done.stderr


def test_a_percent_sign_in_a_settings_help_reaches_the_help_as_written():
    from spanaug.cli.options import _parser_class
    from spanaug.core.settings import setting, settings

    @settings
    class Shares:
        share: float = setting(0.5, "keeps 95% of the pairs")

    assert "keeps 95% of the pairs" in " ".join(_parser_class()([Shares]).format_help().split())
