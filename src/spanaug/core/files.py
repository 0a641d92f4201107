"""Text files written atomically (a temporary file renamed into place) and JSON lines read with line numbers.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
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


@contextlib.contextmanager
def atomic_path(path: Path | str, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        apply_umask(tmp_path)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


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
