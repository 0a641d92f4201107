"""FrameNet release directories read with NLTK's reader (nothing is downloaded): the reader, the lexicon,
frame definitions."""

from __future__ import annotations

import os
import re
import traceback
from datetime import datetime
from pathlib import Path

from spanaug.core.errors import InputError


def parse_fn_date(value: str | None) -> str | None:
    """FrameNet's ``cDate`` ("02/08/2001 01:27:50 PST Thu") as ISO 8601, or None."""
    if not value:
        return None
    try:
        return datetime.strptime(value[:19], "%m/%d/%Y %H:%M:%S").isoformat()
    except ValueError:
        return None


def framenet_reader(root: Path):
    """NLTK's FrameNet reader on a release directory (nothing is downloaded).

    The reader remembers the last file it opened (``last_file``, under ``root`` as given): NLTK
    loads frames, indexes and relations lazily, so a corrupt ``frame/*.xml`` or ``frRelation.xml``
    fails while an intact LU file is being read, and :func:`guarded` must name the right one.
    """
    import nltk.data
    from nltk.corpus.reader.framenet import FramenetCorpusReader

    for index in ("frameIndex.xml", "luIndex.xml", "frRelation.xml"):
        if not (root / index).is_file():
            raise InputError(root / index, None, "missing: not a FrameNet release directory")
    # NLTK's path sandbox reads only under nltk.data.path; the user named this root explicitly.
    resolved = str(root.resolve())
    if resolved not in nltk.data.path:
        nltk.data.path.append(resolved)

    class TrackingReader(FramenetCorpusReader):
        last_file: Path | None = None

        def abspath(self, fileid):
            path = super().abspath(fileid)
            try:
                self.last_file = root / Path(str(path)).relative_to(resolved)
            except ValueError:
                self.last_file = Path(str(path))
            return path

    return TrackingReader(resolved, [])


def framenet_lexicon(root: Path | str) -> dict[str, set[str]]:
    """Frame name -> its lexical units (``lemma.pos``, lower-cased) from a release's LU index."""
    root = Path(root)
    reader = framenet_reader(root)
    lexicon: dict[str, set[str]] = {}
    for lu in guarded(root / "luIndex.xml", lambda: list(reader.lus()), reader):
        lexicon.setdefault(lu.frame.name, set()).add(lu.name.lower())
    return lexicon


def framenet_definitions(root: Path | str) -> dict[str, str]:
    """Frame name -> its definition text (markup stripped), for annotation tasks."""
    root = Path(root)
    reader = framenet_reader(root)
    out = {}
    for frame in guarded(root / "frameIndex.xml", lambda: list(reader.frames()), reader):
        out[frame.name] = re.sub(r"<[^>]+>", "", frame.definition or "").strip()
    return out


def guarded(path: Path, load, reader=None):
    """Run an NLTK load, turning any failure into an error naming the file at fault.

    NLTK loads lazily: reading ``path`` may open a frame file or an index. When parsing such a file
    fails, that file is at fault and named. When NLTK fails after parsing (a reference one file makes
    and another does not define, such as an LU's frame id), either may be wrong: ``path`` is named,
    with the file NLTK had opened last.
    """
    if reader is not None:
        reader.last_file = None
    try:
        return load()
    except InputError:
        raise
    except Exception as exc:  # NLTK raises assorted errors on malformed XML
        opened = reader.last_file if reader is not None else None
        what = f"{type(exc).__name__}: {exc}"
        if opened is not None and opened != path:
            if _raised_in(exc, _XML_PARSING):
                raise InputError(opened, None, f"malformed FrameNet XML: {what}") from exc
            if _raised_in(exc, (f"{os.sep}nltk{os.sep}",)):
                raise InputError(path, None, f"malformed FrameNet XML (NLTK was reading {opened}): {what}") from exc
        raise InputError(path, None, f"malformed FrameNet XML: {what}") from exc


#: Where in a traceback an XML file's own parsing failed (NLTK's XML views, ElementTree, expat).
_XML_PARSING = ("xmldocs.py", f"{os.sep}xml{os.sep}etree{os.sep}", "expat")


def _raised_in(exc: BaseException, markers: tuple[str, ...]) -> bool:
    return any(m in frame.f_code.co_filename for frame, _ in traceback.walk_tb(exc.__traceback__) for m in markers)


def read_lexicon(path: Path | str) -> dict[str, set[str]]:
    """Frame -> its LUs (``lemma.pos``), from a lexicon JSON or a FrameNet release directory."""
    from spanaug.core.files import read_json

    path = Path(path)
    if not path.exists():
        raise InputError(path, None, "lexicon not found (a lexicon JSON or a FrameNet release directory)")
    if path.is_dir():
        return framenet_lexicon(path)
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise InputError(path, None, "expected a JSON object: frame name -> list of 'lemma.pos' LUs")
    for frame, lus in raw.items():
        if not frame.strip() or not isinstance(lus, list) or not all(isinstance(lu, str) and lu.strip() for lu in lus):
            raise InputError(
                path,
                f"frame {frame!r}",
                "expected a non-blank frame name with a list of 'lemma.pos' LU names (non-blank strings)",
            )
    return {frame: {lu.lower() for lu in lus} for frame, lus in raw.items()}
