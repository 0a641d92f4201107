"""FrameNet release directories read with NLTK's reader (nothing is downloaded): the reader, the lexicon, frame definitions.
"""

from __future__ import annotations

import json
import re
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


def framenet_reader(root: Path):  # noqa: ANN201
    """NLTK's FrameNet reader on a release directory (nothing is downloaded)."""
    import nltk.data
    from nltk.corpus.reader.framenet import FramenetCorpusReader

    for index in ("frameIndex.xml", "luIndex.xml", "frRelation.xml"):
        if not (root / index).is_file():
            raise InputError(root / index, None, "missing: not a FrameNet release directory")
    # NLTK's path sandbox reads only under nltk.data.path; the user named this root explicitly.
    resolved = str(root.resolve())
    if resolved not in nltk.data.path:
        nltk.data.path.append(resolved)
    return FramenetCorpusReader(resolved, [])


def framenet_lexicon(root: Path | str) -> dict[str, set[str]]:
    """Frame name -> its lexical units (``lemma.pos``, lower-cased) from a release's LU index."""
    root = Path(root)
    reader = framenet_reader(root)
    lexicon: dict[str, set[str]] = {}
    for lu in _guarded(root / "luIndex.xml", lambda: list(reader.lus())):
        lexicon.setdefault(lu.frame.name, set()).add(lu.name.lower())
    return lexicon


def framenet_definitions(root: Path | str) -> dict[str, str]:
    """Frame name -> its definition text (markup stripped), for annotation tasks."""
    root = Path(root)
    reader = framenet_reader(root)
    out = {}
    for frame in _guarded(root / "frameIndex.xml", lambda: list(reader.frames())):
        out[frame.name] = re.sub(r"<[^>]+>", "", frame.definition or "").strip()
    return out


def _guarded(path: Path, load):  # noqa: ANN001, ANN202
    """Run an NLTK load, turning any parse failure into an error naming the file."""
    try:
        return load()
    except InputError:
        raise
    except Exception as exc:  # NLTK raises assorted errors on malformed XML
        raise InputError(path, None, f"malformed FrameNet XML: {type(exc).__name__}: {exc}") from exc


def read_lexicon(path: Path | str) -> dict[str, set[str]]:
    """Frame -> its LUs (``lemma.pos``), from a lexicon JSON or a FrameNet release directory."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, "lexicon not found (a lexicon JSON or a FrameNet release directory)")
    if path.is_dir():
        from spanaug.pipeline.framenet import framenet_lexicon

        return framenet_lexicon(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"malformed JSON: {exc.msg}") from None
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise InputError(path, None, "expected a JSON object: frame name -> list of 'lemma.pos' LUs")
    return {frame: {lu.lower() for lu in lus} for frame, lus in raw.items()}
