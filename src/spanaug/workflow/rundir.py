"""A run's bookkeeping around Snakemake: the config its results were made with, stale locks of
killed runs, and temporaries of killed jobs.

- ``results/<run>/config.effective.yaml`` records the filled config the run's results come from.
  A run whose config differs stops before any job starts, naming the changed settings (Snakemake
  would rerun the jobs whose settings changed and replace their outputs), unless the user asked for
  reruns (``-R``/``-F``).
- ``kill -9`` of Snakemake leaves its locks in ``.snakemake/locks``, and the next run stops with a
  LockException. :func:`remove_stale_locks` removes them when no live Snakemake (of this host)
  works in the directory and no other host's Snakemake registered itself there.
- A killed job leaves its temporaries in ``.spanaug-tmp`` folders
  (:func:`spanaug.core.files.remove_stale_temporaries` removes those whose writer is gone).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from spanaug.core.errors import ConfigError

log = logging.getLogger(__name__)

#: The recorded config, in the run's results folder.
RECORD = "config.effective.yaml"
#: Settings that do not change results and are not recorded: what a job asks the scheduler for, and
#: whether a shard's iterations run as a job per stage or one job (the same rows either way).
UNRECORDED = ("resources", "shard_jobs")
#: Where a running Snakemake of this workflow registers itself (host, pid), under ``.snakemake``.
OWNERS = "spanaug-owners"


# ---------------------------------------------------------------- the recorded config


def recorded_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run's results depend on (the filled config without :data:`UNRECORDED`)."""
    return {k: v for k, v in config.items() if k not in UNRECORDED}


def config_changes(old: Any, new: Any, path: str = "") -> Iterator[str]:
    """``key: old -> new`` for every setting that differs, nested keys dotted.

    Settings that exist on one side only are not changes: the filled config records every setting,
    so they are settings an upgrade of spanaug added or removed, not the user's edits (an upgrade
    must not make ``make demo`` refuse its own results).
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) & set(new), key=str):
            yield from config_changes(old[key], new[key], f"{path}.{key}" if path else str(key))
    elif old != new:
        yield f"{path}: {json.dumps(old)} -> {json.dumps(new)}"


def read_record(results: Path | str) -> dict[str, Any] | None:
    import yaml

    path = Path(results) / RECORD
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None


def check_record(config: Mapping[str, Any], results: Path | str) -> list[str]:
    """How this config differs from the one ``results`` was made with (nothing when none is recorded)."""
    old = read_record(results)
    return [] if old is None else list(config_changes(old, recorded_settings(config)))


def changed_config_message(results: Path | str, changes: list[str]) -> str:
    shown = "\n".join(f"  {c}" for c in changes[:20]) + (
        f"\n  ... {len(changes) - 20} more" if len(changes) > 20 else ""
    )
    return (
        f"{results} was made with another config ({Path(results) / RECORD}); changed:\n{shown}\n"
        f"Snakemake would rerun the jobs whose settings changed and replace their results. To keep both, "
        f"give this config its own run_name (--config run_name=NAME; it can reuse this run's trained models, "
        f"e.g. aligner.model: {Path(results) / 'models/aligner'}: see docs/running.md, Ablations). To replace "
        f"them, rerun with -R and the rules you changed (or delete {Path(results) / RECORD})."
    )


def guard_record(config: Mapping[str, Any], results: Path | str, forced: bool) -> None:
    """Before jobs run: stop when the config changed (unless reruns were asked for), else record it."""
    changes = check_record(config, results)
    if changes and not forced:
        raise ConfigError(changed_config_message(results, changes))
    if changes:
        log.warning(
            "%s: the config changed and reruns were asked for (-R/-F); recording the new one:\n  %s",
            results,
            "\n  ".join(changes),
        )
    write_record(config, results)


def write_record(config: Mapping[str, Any], results: Path | str) -> None:
    import yaml

    from spanaug.core.files import atomic_path

    header = (
        "# The settings this run's results were made with (written by the workflow when jobs start;\n"
        "# a later run under the same run_name with other settings stops and says what changed).\n"
    )
    with atomic_path(Path(results) / RECORD, ".yaml") as tmp:
        tmp.write_text(header + yaml.safe_dump(recorded_settings(config), sort_keys=False), encoding="utf-8")


# ---------------------------------------------------------------- stale locks of killed runs


def _is_main_snakemake(argv: list[str]) -> bool:
    """A Snakemake main process: not a job's inner Snakemake (``--mode remote|subprocess``), which locks nothing."""
    if not any(Path(a).name.startswith("snakemake") or a == "snakemake" for a in argv[:3]):
        return False
    return not any(a == "--mode" and argv[i + 1 : i + 2] and argv[i + 1] != "default" for i, a in enumerate(argv))


def live_snakemakes(workdir: Path | str) -> list[int]:
    """Pids of this host's Snakemake main processes (other than this one and its parents) working in ``workdir``."""
    import psutil

    workdir = Path(workdir).resolve()
    me = psutil.Process()
    # This process and its parents (a wrapper that exec'd Snakemake, make) are not other Snakemakes.
    mine = {me.pid, *(p.pid for p in me.parents())}
    found = []
    for proc in psutil.process_iter(["pid", "cwd", "cmdline"]):
        # A process that ended or that this user may not inspect has None for what it could not read.
        cwd, argv = proc.info["cwd"], proc.info["cmdline"]
        if proc.pid in mine or not cwd or not argv:
            continue
        if Path(cwd).resolve() == workdir and _is_main_snakemake(argv):
            found.append(proc.pid)
    return found


def _owners(workdir: Path) -> Path:
    return workdir / ".snakemake" / OWNERS


def _mark_name() -> str:
    # The name of temporaries (spanaug.core.files), so that the same test tells a dead writer.
    return f"{socket.gethostname()}+{os.getpid()}+snakemake"


def register_owner(workdir: Path | str) -> Path:
    """Note that this Snakemake (host, pid) runs in ``workdir``, for Snakemakes of other hosts."""
    folder = _owners(Path(workdir))
    folder.mkdir(parents=True, exist_ok=True)
    mark = folder / _mark_name()
    mark.touch()
    return mark


def unregister_owner(workdir: Path | str) -> None:
    with contextlib.suppress(OSError):
        (_owners(Path(workdir)) / _mark_name()).unlink()


def remove_stale_locks(workdir: Path | str = ".") -> str | None:
    """Remove Snakemake's locks in ``workdir`` when no live Snakemake can hold them; says what it did.

    Live holders: this host's Snakemake main processes working there, and the registered Snakemakes
    of other hosts (whose processes cannot be seen from here: their locks are left for the user to
    remove with ``snakemake --unlock`` once they are sure). Registrations of this host's dead
    processes are removed with the locks.
    """
    from spanaug.core.files import stale_temporary

    workdir = Path(workdir)
    locks = workdir / ".snakemake" / "locks"
    if not locks.is_dir() or not any(locks.iterdir()):
        return None
    owners = sorted(_owners(workdir).glob("*+*+snakemake")) if _owners(workdir).is_dir() else []
    dead = [mark for mark in owners if stale_temporary(mark)]
    elsewhere = [
        mark.name for mark in owners if mark not in dead and not mark.name.startswith(socket.gethostname() + "+")
    ]
    live = live_snakemakes(workdir)
    if live or elsewhere:
        holders = [f"pid {p} on this host" for p in live] + [" pid ".join(m.split("+")[:2]) for m in elsewhere]
        return f"{locks} is held by a running Snakemake ({', '.join(holders)}): left alone"
    for mark in dead:
        mark.unlink(missing_ok=True)
    for lock in locks.iterdir():
        lock.unlink(missing_ok=True)
    return f"removed the locks a killed Snakemake left in {locks} (no Snakemake runs in {workdir.resolve()})"
