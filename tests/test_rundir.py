"""A run's bookkeeping: the recorded config, stale locks of killed runs, temporaries of killed jobs."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from spanaug.core import files
from spanaug.core.errors import ConfigError
from spanaug.workflow import rundir


def _dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# ---------------------------------------------------------------- the recorded config


def test_a_changed_config_stops_the_run_naming_what_changed(tmp_path):
    config = {
        "run_name": "r",
        "iterations": 3,
        "paraphraser": {"beam_size": 20, "prefix": ""},
        "resources": {"gpu": {"mem_mb": 1}},
    }
    rundir.guard_record(config, tmp_path, forced=False)  # nothing recorded yet: recorded now
    assert (tmp_path / rundir.RECORD).is_file()
    rundir.guard_record(config, tmp_path, forced=False)  # same config: fine
    # What a job asks the scheduler for changes no result.
    rundir.guard_record({**config, "resources": {"gpu": {"mem_mb": 2}}}, tmp_path, forced=False)
    changed = {**config, "paraphraser": {"beam_size": 4, "prefix": ""}}
    with pytest.raises(ConfigError) as err:
        rundir.guard_record(changed, tmp_path, forced=False)
    assert "paraphraser.beam_size: 20 -> 4" in str(err.value) and "run_name" in str(err.value)
    assert "-R" in str(err.value)
    rundir.guard_record(changed, tmp_path, forced=True)  # -R/-F: the user asked for reruns
    assert rundir.check_record(changed, tmp_path) == []


def test_settings_an_upgrade_adds_or_removes_are_no_change(tmp_path):
    """A newer spanaug fills in settings the record lacks; that alone must not refuse the run."""
    old = {"run_name": "r", "paraphraser": {"beam_size": 20, "retired": 1}}
    rundir.guard_record(old, tmp_path, forced=False)
    upgraded = {"run_name": "r", "paraphraser": {"beam_size": 20, "max_batch_tokens": None}}
    assert rundir.check_record(upgraded, tmp_path) == []
    edited = {"run_name": "r", "paraphraser": {"beam_size": 5, "max_batch_tokens": None}}
    assert rundir.check_record(edited, tmp_path) == ["paraphraser.beam_size: 20 -> 5"]


def test_the_record_is_written_with_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        rundir.write_record({"run_name": "r"}, tmp_path)
    finally:
        os.umask(old)
    assert (tmp_path / rundir.RECORD).stat().st_mode & 0o777 == 0o644


# ---------------------------------------------------------------- stale locks


def _locked(workdir):
    locks = workdir / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text("results/x/augmented.parquet\n")
    return locks


def test_locks_no_live_snakemake_holds_are_removed(tmp_path):
    locks = _locked(tmp_path)
    dead = tmp_path / ".snakemake" / rundir.OWNERS / f"{socket.gethostname()}+{_dead_pid()}+snakemake"
    dead.parent.mkdir()
    dead.touch()
    assert "removed the locks a killed Snakemake left" in rundir.remove_stale_locks(tmp_path)
    assert list(locks.iterdir()) == [] and not dead.exists()
    assert rundir.remove_stale_locks(tmp_path) is None  # nothing locked


def test_a_live_snakemake_keeps_its_locks(tmp_path):
    locks = _locked(tmp_path)
    # A process whose argv[0] is snakemake, working in the directory.
    live = subprocess.Popen(["bash", "-c", "exec -a snakemake sleep 60"], cwd=tmp_path)
    try:
        for _ in range(50):
            if rundir.live_snakemakes(tmp_path):
                break
            time.sleep(0.1)
        assert rundir.live_snakemakes(tmp_path) == [live.pid]
        assert f"held by a running Snakemake (pid {live.pid} on this host)" in rundir.remove_stale_locks(tmp_path)
        assert list(locks.iterdir())
    finally:
        live.kill()
        live.wait()
    # A job's inner Snakemake (--mode remote) holds no lock.
    assert not rundir._is_main_snakemake(["/x/python", "-m", "snakemake", "--mode", "remote", "--nolock"])
    assert rundir._is_main_snakemake(["/x/python", "/x/.venv/bin/snakemake", "--profile", "profiles/local"])


def test_only_a_snakemake_working_in_the_directory_keeps_its_locks(tmp_path):
    """Live processes that are no Snakemake, or a Snakemake working elsewhere, leave the locks to go."""
    locks = _locked(tmp_path)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    children = [
        subprocess.Popen(["sleep", "60"], cwd=tmp_path),  # not a Snakemake, in the directory
        subprocess.Popen(["bash", "-c", "exec -a snakemake sleep 60"], cwd=elsewhere),  # a Snakemake elsewhere
        # A job's inner Snakemake in the directory: it holds no lock.
        subprocess.Popen(
            ["bash", "-c", f"exec -a snakemake {sys.executable} -c 'import time; time.sleep(60)' --mode remote"],
            cwd=tmp_path,
        ),
    ]
    try:
        for _ in range(50):  # until the exec'd names show
            if rundir.live_snakemakes(elsewhere):
                break
            time.sleep(0.1)
        assert rundir.live_snakemakes(elsewhere) == [children[1].pid]
        assert all(child.poll() is None for child in children)
        assert rundir.live_snakemakes(tmp_path) == []
        assert "removed the locks" in rundir.remove_stale_locks(tmp_path)
        assert list(locks.iterdir()) == []
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_another_hosts_registered_snakemake_keeps_its_locks(tmp_path):
    locks = _locked(tmp_path)
    mark = tmp_path / ".snakemake" / rundir.OWNERS / "login2+4242+snakemake"
    mark.parent.mkdir()
    mark.touch()
    assert "login2 pid 4242" in rundir.remove_stale_locks(tmp_path)
    assert list(locks.iterdir())


# ---------------------------------------------------------------- temporaries


def test_temporaries_live_in_a_hidden_folder_named_after_their_writer(tmp_path):
    target = tmp_path / "shard000.chain.parquet"
    with files.atomic_path(target, ".parquet") as tmp:
        assert tmp.parent.name == files.TMP_DIR and tmp.name.startswith(f"{socket.gethostname()}+{os.getpid()}+")
        assert tmp.name.endswith(".shard000.chain.parquet.parquet.tmp")
        tmp.write_text("x")
        assert sorted(p.name for p in tmp_path.glob("*.parquet")) == []  # no glob of outputs sees it
    assert [p.name for p in tmp_path.iterdir()] == ["shard000.chain.parquet"]


def test_stale_temporaries_are_removed_and_live_ones_kept(tmp_path):
    folder = tmp_path / "iter1" / files.TMP_DIR
    folder.mkdir(parents=True)
    host = socket.gethostname()
    dead = folder / f"{host}+{_dead_pid()}+abc.shard000.aligned.parquet.tmp"
    mine = folder / f"{host}+{os.getpid()}+def.shard001.aligned.parquet.tmp"
    model = folder / f"{host}+{_dead_pid()}+ghi.aligner.tmp"  # a model folder
    remote_old = folder / "node7+99+jkl.x.tmp"
    remote_new = folder / "node7+98+mno.y.tmp"
    for path in (dead, mine, remote_old, remote_new):
        path.write_text("partial")
    (model / "encoder").mkdir(parents=True)
    hour_ago = time.time() - 3600
    os.utime(remote_old, (hour_ago, hour_ago))
    removed = files.remove_stale_temporaries(tmp_path, max_age_s=1800)
    assert sorted(removed) == sorted([dead, model, remote_old])
    assert sorted(folder.iterdir()) == sorted([mine, remote_new])
    # The next writer in that folder removes dead writers' temporaries too (a command's own start).
    dead2 = folder / f"{host}+{_dead_pid()}+pqr.z.tmp"
    dead2.write_text("partial")
    files.write_json({"a": 1}, tmp_path / "iter1" / "summary.json")
    assert not dead2.exists() and mine.exists()


def test_a_killed_writer_leaves_a_temporary_the_next_run_removes(tmp_path):
    """kill -9 during a write: the target is untouched, the temporary is stale and goes."""
    target = tmp_path / "out.json"
    code = (
        "import time, sys; from spanaug.core.files import atomic_path\n"
        "with atomic_path(sys.argv[1]) as tmp:\n    tmp.write_text('half'); print('writing', flush=True); "
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not target.exists() and len(list((tmp_path / files.TMP_DIR).iterdir())) == 1
    assert len(files.remove_stale_temporaries(tmp_path)) == 1
    assert list(tmp_path.iterdir()) == []
