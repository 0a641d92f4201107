"""Text files written atomically (a temporary file renamed into place) and JSON lines read with line numbers."""

from __future__ import annotations

import contextlib
import errno
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


def apply_umask_tree(root: Path | str) -> None:
    """:func:`apply_umask` on ``root`` and every folder and file under it (links left alone).

    What a model's save writes: safetensors writes its weights through a private temporary file
    (0600 under any umask), and a trainer's checkpoints likewise, so a group sharing ``results/``
    could not read them.
    """
    root = Path(root)
    if root.is_symlink():
        return
    apply_umask(root, directory=root.is_dir())
    if root.is_dir():
        for folder, dirs, names in os.walk(root):
            for name in [*dirs, *names]:
                path = Path(folder) / name
                if not path.is_symlink():
                    apply_umask(path, directory=name in dirs)


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
        _make_folder(tmpdir, path)
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


def _make_folder(folder: Path, target: Path) -> None:
    """``folder`` made with its parents; a file in the way (``--iterations-dir`` naming a file) is an
    error naming that file, not the temporary folder the OS would name."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.is_file()), None)
        if blocker is None:
            raise
        raise InputError(blocker, None, f"a file, where a folder is needed to write {target}") from None


@contextlib.contextmanager
def atomic_path(path: Path | str, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path (see :func:`temporary_beside`); rename it onto ``path`` only on success.

    A destination that is a folder, and a write that fails for want of room or rights, are errors
    naming the destination (the OS would name the temporary file, or nothing)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, None, "is a folder (expected the path of a file to write)")
    try:
        with temporary_beside(path, suffix) as tmp:
            yield tmp
            apply_umask(tmp)
            os.replace(tmp, path)
    except OSError as exc:
        if _about_writing(path, exc):
            raise write_error(path, exc) from None
        raise  # an input's fault inside the block: not the destination's


#: Errors that only a write raises.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG}


def _about_writing(path: Path, exc: OSError) -> bool:
    if exc.errno in _WRITE_ERRNOS:
        return True
    name = Path(exc.filename) if exc.filename else None
    return name is not None and (name == path or name.parent == path.parent / TMP_DIR or name == path.parent)


def write_error(path: Path | str, exc: OSError) -> InputError:
    """A destination that cannot be written, as an error naming it (and keeping what was there)."""
    reasons = {errno.ENOSPC: "no space left on the device", errno.EROFS: "the file system is read-only"}
    reason = reasons.get(exc.errno) or exc.strerror or str(exc)
    return InputError(path, None, f"cannot be written ({reason}); nothing there was changed")


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
    folders = [Path(d) / TMP_DIR for d, subdirs, _ in os.walk(root) if TMP_DIR in subdirs] if recurse else [root]
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


def read_csv(path: Path | str, required: Sequence[str] = ()) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a UTF-8 CSV with a header (a byte-order mark, as spreadsheets write,
    is dropped); the header must name ``required``, and every row must have the header's fields."""
    import csv
    import io

    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    try:
        header = reader.fieldnames
        if not header:
            raise InputError(path, None, f"empty file (expected a CSV header with {', '.join(required) or 'columns'})")
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(path, 1, f"the header lacks column(s) {missing} (found {header})")
        rows = []
        for row in reader:
            if None in row or None in row.values():
                raise InputError(
                    path, reader.line_num, f"the row's fields do not match the {len(header)} of the header"
                )
            rows.append((reader.line_num, row))
        return rows
    except csv.Error as exc:
        raise InputError(path, reader.line_num, f"malformed CSV ({exc})") from None


def os_error(path: Path | str, exc: OSError) -> InputError:
    """An input that cannot be opened, as an error naming it."""
    if isinstance(exc, FileNotFoundError):
        return InputError(path, None, "no such file")
    if isinstance(exc, IsADirectoryError):
        return InputError(path, None, "is a directory (expected a file)")
    if isinstance(exc, PermissionError):
        return InputError(path, None, "permission denied")
    return InputError(path, None, f"cannot be read ({exc.strerror or exc})")


def _decode(path: Path | str, data: bytes, lineno: int | None, start: int = 0) -> str:
    """``data`` as UTF-8; an error names the line (``lineno``, or counted in ``data``) and the byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lineno if lineno is not None else data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        raise InputError(
            path,
            line,
            f"not UTF-8 text (byte {data[exc.start]:#04x} at column {column + 1}); expected a UTF-8 text file",
        ) from None


def iter_lines(path: Path | str) -> Iterator[tuple[int, str]]:
    """(line number, line without its line break) of a UTF-8 text file, read as bytes and decoded line
    by line so that a file in another encoding (or a binary file) is an error naming the line. A
    byte-order mark at the start is dropped (spreadsheet tools write one)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 -- an open error and a read error are told apart
    except OSError as exc:
        raise os_error(path, exc) from None
    with handle:
        lineno = 0
        try:
            for lineno, raw in enumerate(handle, start=1):
                line = _decode(path, raw, lineno)
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                yield lineno, line.rstrip("\r\n")
        except OSError as exc:
            raise InputError(path, lineno + 1, f"cannot be read ({exc.strerror or exc})") from None


def read_text(path: Path | str) -> str:
    """A whole UTF-8 text file (a leading byte-order mark dropped); errors name the file and line."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise os_error(path, exc) from None
    return _decode(path, data, None).removeprefix("\ufeff")


def read_yaml(path: Path | str) -> Any:
    """A YAML file (a config) as plain values. A key given twice in one mapping is an error naming
    both lines: YAML loaders otherwise keep the last value, silently dropping the first setting."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise InputError(path, line, f"duplicate key {key!r} (first given on line {seen[key]})")
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    text = read_text(path)
    try:
        return yaml.load(text, Loader=StrictLoader)  # a SafeLoader: plain values only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or exc
        raise InputError(path, mark.line + 1 if mark else None, f"malformed YAML: {problem}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, path: Path | str, lineno: int | None = None) -> Any:
    """Strict JSON (no NaN or Infinity), its strings valid Unicode; errors name the file and line."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(path, exc.lineno if lineno is None else lineno, f"invalid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # NaN, an integer of thousands of digits, deep nesting
        raise InputError(path, lineno, f"invalid JSON ({type(exc).__name__}: {exc})") from None
    # json accepts escapes of lone UTF-16 surrogates ("\ud800"), which are no characters: Arrow and
    # every writer would fail on them later, far from this file.
    if "\\u" in text and _has_lone_surrogate(value):
        raise InputError(
            path,
            lineno,
            "a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is no "
            "character (expected valid Unicode text)",
        )
    return value


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_json(path: Path | str) -> Any:
    """A whole JSON document (a lexicon, a list of aligned pairs); errors name the file and line."""
    return parse_json(read_text(path), path)


def iter_jsonl(path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error naming it."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        rec = parse_json(line, path, lineno)
        if not isinstance(rec, dict):
            raise InputError(path, lineno, f"each line must be a JSON object, not {type(rec).__name__}")
        yield lineno, rec
