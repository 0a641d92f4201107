"""Text files written atomically (a temporary file renamed into place) and JSON lines read with line numbers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core.errors import InputError


def apply_umask(path: Path, directory: bool = False) -> None:
    """Give ``path`` the permissions a plain ``open`` or ``mkdir`` would have (the process umask).

    Temporary files and folders are created private (0600/0700); an artifact renamed into place
    must be readable as any other file would be (0644 and 0755 with the usual umask 022).
    """
    umask = os.umask(0)
    os.umask(umask)
    path.chmod((0o777 if directory else 0o666) & ~umask)


#: Temporaries of atomic writes live in this hidden folder beside their target: no listing or glob of
#: the target's folder shows them, and a rename from there stays on one file system. Each is named
#: after its writer (``HOST+PID+...``), so a later run can tell whether the writer is gone.
TMP_DIR = ".spanaug-tmp"
_TMP_NAME = re.compile(r"^(?P<host>[^+]+)\+(?P<pid>\d+)\+")


@contextlib.contextmanager
def temporary_beside(path: Path | str, suffix: str = "", directory: bool = False) -> Iterator[Path]:
    """A temporary file (or folder) for ``path`` in the ``.spanaug-tmp`` folder beside it, removed
    afterwards unless the block renamed it; stale temporaries of dead writers there go first."""
    path = Path(path)
    tmpdir = path.parent / TMP_DIR
    remove_stale_temporaries(tmpdir, recurse=False)
    prefix, end = f"{socket.gethostname()}+{os.getpid()}+", f".{path.name}{suffix}.tmp"
    for _ in range(5):
        tmpdir.mkdir(parents=True, exist_ok=True)
        try:  # another writer may remove the folder, empty, between mkdir and here
            if directory:
                tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=end, dir=tmpdir))
            else:
                fd, name = tempfile.mkstemp(prefix=prefix, suffix=end, dir=tmpdir)
                os.close(fd)
                tmp = Path(name)
            break
        except FileNotFoundError:
            continue
    else:
        raise OSError(f"cannot create a temporary file in {tmpdir}")
    try:
        yield tmp
    finally:
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()
        with contextlib.suppress(OSError):
            tmpdir.rmdir()  # only when empty: other writers' temporaries stay


@contextlib.contextmanager
def atomic_path(path: Path | str, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path (see :func:`temporary_beside`); rename it onto ``path`` only on success."""
    path = Path(path)
    with temporary_beside(path, suffix) as tmp:
        yield tmp
        apply_umask(tmp)
        os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def stale_temporary(entry: Path, max_age_s: float | None = None) -> bool:
    """Whether a temporary's writer is gone: a process of this host that no longer runs, or (another
    host's, whose processes cannot be seen from here) one older than ``max_age_s``, e.g. the job
    runtime limit. Names not made by :func:`temporary_beside` are left alone."""
    match = _TMP_NAME.match(entry.name)
    if not match:
        return False
    if match["host"] == socket.gethostname():
        return not _alive(int(match["pid"]))
    if max_age_s is None:
        return False
    try:
        return time.time() - entry.lstat().st_mtime > max_age_s
    except FileNotFoundError:
        return False


def remove_stale_temporaries(root: Path | str, max_age_s: float | None = None, recurse: bool = True) -> list[Path]:
    """Remove the stale temporaries (:func:`stale_temporary`) of every ``.spanaug-tmp`` folder under
    ``root`` (or of ``root`` itself, a ``.spanaug-tmp`` folder, when not ``recurse``); returns them."""
    root = Path(root)
    if recurse:
        folders = [Path(d) / TMP_DIR for d, subdirs, _ in os.walk(root) if TMP_DIR in subdirs]
    else:
        folders = [root]
    removed = []
    for folder in folders:
        try:
            entries = list(folder.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if stale_temporary(entry, max_age_s):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
                removed.append(entry)
        with contextlib.suppress(OSError):
            folder.rmdir()
    return removed


def write_csv(rows: Sequence[Mapping[str, Any]], path: Path | str, fields: Sequence[str] | None = None) -> None:
    """A report table as CSV, atomically; columns are the union of the rows' keys unless given."""
    import csv

    fields = list(fields) if fields is not None else list(dict.fromkeys(k for r in rows for k in r))
    with atomic_path(path, ".csv") as tmp, open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_json(obj: Any, path: Path | str) -> None:
    """A JSON document (a summary, a report's figures), indented, atomically."""
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")


def write_jsonl(records: Iterable[dict[str, Any]], path: Path | str) -> int:
    """Write JSON lines atomically; returns the count."""
    n = 0
    with atomic_path(path, ".jsonl") as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for rec in records:
            handle.write(json.dumps(rec) + "\n")
            n += 1
    return n


def iter_jsonl(path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error naming it."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, lineno, f"invalid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise InputError(path, lineno, "each line must be a JSON object")
            yield lineno, rec
