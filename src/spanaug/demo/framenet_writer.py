"""Write a FrameNet release directory (the ``fndata-1.7`` layout) from a compact YAML spec.

The demo corpus under ``resources/demo/`` and the importer's tests are built with this, so the
real importer (NLTK's FrameNet reader) is exercised on them. Spec format::

    frames:
      Commerce_buy:
        definition: A Buyer acquires Goods from a Seller.
        lexical_units:
          buy.v:
            - Abby [bought] a car from Robin .
    fulltext:
      - corpus: Demo
        document: shopping
        sentences:
          - She [bought|buy.v|Commerce_buy] bread and [walked|walk.v|Self_motion] home .

Square brackets mark a target; in full text they also carry ``lu|frame``. Angle brackets mark a
frame element of the sentence's one target: ``<Buyer Abby> [bought] <Goods a car>``; an FE may hold
the target (``<Degree [strongest]>``), and ``<Seller:INI>`` marks a null instantiation (CNI, DNI, INI).
A frame may list its FEs with their coreness, ``frame_elements: {Buyer: Core, Time: Peripheral}``.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import yaml

from spanaug.core.errors import InputError
from spanaug.core.files import read_text
from spanaug.core.validation import CORENESS

NS = "http://framenet.icsi.berkeley.edu"
_TARGET_RE = re.compile(r"\[([^\[\]|]+)(?:\|([^\[\]|]+)\|([^\[\]|]+))?\]")
_POS = {"v": "V", "n": "N", "a": "A", "adv": "ADV", "prep": "PREP", "num": "NUM", "c": "C", "idio": "IDIO"}
_EPOCH = datetime(2001, 2, 8, 9, 0, 0)


def _fn_date(n: int) -> str:
    """A FrameNet-style ``cDate``; ``n`` orders the annotations in time."""
    return (_EPOCH + timedelta(hours=n)).strftime("%m/%d/%Y %H:%M:%S PST %a")


# Angle brackets, not braces: a YAML line may not begin with "{" unquoted.
_FE_OPEN_RE = re.compile(r"<([A-Za-z][\w-]*) ")
_FE_NULL_RE = re.compile(r"<([A-Za-z][\w-]*):(CNI|DNI|INI)> ?")

#: An FE mark: (char start, char end, name, None), or (None, None, name, CNI|DNI|INI).
FEMark = tuple[int | None, int | None, str, str | None]


def parse_marked(sentence: str) -> tuple[str, list[tuple[int, int, str | None, str | None]]]:
    """Remove ``[...]`` and ``<FE ...>`` marks; return the text and (char start, char end, lu, frame)
    per target."""
    text, targets, _ = parse_annotated(sentence)
    return text, targets


def parse_annotated(sentence: str) -> tuple[str, list[tuple[int, int, str | None, str | None]], list[FEMark]]:
    """:func:`parse_marked`, with the FE marks too; an FE left open is a ValueError."""
    text, targets, fes, open_fes, i = "", [], [], [], 0
    while i < len(sentence):
        if m := _TARGET_RE.match(sentence, i):
            targets.append((len(text), len(text) + len(m.group(1)), m.group(2), m.group(3)))
            text += m.group(1)
        elif m := _FE_NULL_RE.match(sentence, i):
            fes.append((None, None, m.group(1), m.group(2)))
        elif m := _FE_OPEN_RE.match(sentence, i):
            open_fes.append((m.group(1), len(text)))
        elif sentence[i] == ">" and open_fes:
            name, start = open_fes.pop()
            fes.append((start, len(text), name, None))
        else:
            text += sentence[i]
        i = m.end() if m else i + 1
    if open_fes:
        raise ValueError(f"frame element {open_fes[-1][0]!r} is never closed with '>'")
    return text, targets, fes


def _write(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n", encoding="utf-8")


def _label(start: int, end: int, name: str) -> str:
    # FrameNet's label ends are inclusive character offsets.
    return f'<label start="{start}" end="{end - 1}" name={quoteattr(name)}/>'


def _annotated_sentence(sent_id: int, text: str, asets: list[str], counter: list[int]) -> str:
    counter[0] += 1
    pos = (
        f'<annotationSet cDate="{_fn_date(counter[0])}" status="UNANN" ID="{sent_id * 10}">'
        '<layer rank="1" name="PENN"/></annotationSet>'
    )
    return f'<sentence ID="{sent_id}" sentNo="1" aPos="0"><text>{escape(text)}</text>{pos}{"".join(asets)}</sentence>'


def _fe_label(start: int | None, end: int | None, name: str, null_type: str | None) -> str:
    if null_type is not None:
        return f"<label itype={quoteattr(null_type)} name={quoteattr(name)}/>"
    return _label(start, end, name)


def _frame_aset(
    aset_id: int,
    start: int,
    end: int,
    lu_id: int,
    lu: str,
    frame_id: int,
    frame: str,
    date: str,
    fes: list[FEMark] = (),
) -> str:
    return (
        f'<annotationSet cDate="{date}" luID="{lu_id}" luName={quoteattr(lu)} frameID="{frame_id}" '
        f'frameName={quoteattr(frame)} status="MANUAL" ID="{aset_id}">'
        f'<layer rank="1" name="Target">{_label(start, end, "Target")}</layer>'
        + (
            f'<layer rank="1" name="FE">{"".join(_fe_label(*fe) for fe in fes)}</layer>'
            if fes
            else '<layer rank="1" name="FE"/>'
        )
        + "</annotationSet>"
    )


def _frame_fes(fspec: dict[str, Any], frame_id: int) -> str:
    """The frame file's FE definitions (name and coreness) from the spec's ``frame_elements``."""
    return "".join(
        f'<FE ID="{frame_id * 100 + k}" name={quoteattr(name)} abbrev={quoteattr(name)} '
        f"coreType={quoteattr(core)}><definition/></FE>"
        for k, (name, core) in enumerate((fspec.get("frame_elements") or {}).items())
    )


def write_release(spec: dict[str, Any], root: Path | str) -> Path:
    """Write the release directory for ``spec`` under ``root``; returns ``root``."""
    root = Path(root)
    frame_ids, lu_ids = _ids(spec)
    _write_indexes(root, frame_ids, lu_ids)
    counter = [0]  # annotation sets written so far (their dates follow it)
    sent_id = _write_frames(root, spec.get("frames", {}), frame_ids, lu_ids, counter, 5000)
    _write_fulltext(root, spec.get("fulltext", []), frame_ids, lu_ids, counter, sent_id)
    return root


def _ids(spec: dict[str, Any]) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Frame ids by name, and lexical-unit ids by (frame, lexical unit), exemplar units first."""
    frames: dict[str, Any] = spec.get("frames", {})
    frame_ids = {name: 100 + i for i, name in enumerate(sorted(frames))}
    lu_ids: dict[tuple[str, str], int] = {}
    for fname in sorted(frames):
        for lu in frames[fname].get("lexical_units", {}):
            lu_ids[(fname, lu)] = 1000 + len(lu_ids)
    for doc in spec.get("fulltext", []):  # full-text LUs may have no exemplars
        for line in doc["sentences"]:
            for _, _, lu, frame in parse_marked(line)[1]:
                if frame not in frame_ids:
                    raise ValueError(f"full-text target names unknown frame {frame!r}")
                lu_ids.setdefault((frame, lu), 1000 + len(lu_ids))
    return frame_ids, lu_ids


def _write_indexes(root: Path, frame_ids: dict[str, int], lu_ids: dict[tuple[str, str], int]) -> None:
    """The release's index files (semantic types, frame relations, frames and lexical units)."""
    header = f'xmlns="{NS}"'
    _write(root / "semTypes.xml", f"<semTypes {header}/>")
    _write(
        root / "frRelation.xml",
        f"<frameRelations {header}>"
        '<frameRelationType name="Inheritance" ID="1" superFrameName="Parent" subFrameName="Child"/>'
        "</frameRelations>",
    )
    _write(
        root / "frameIndex.xml",
        f"<frameIndex {header}>"
        + "".join(f'<frame cDate="{_fn_date(0)}" name={quoteattr(n)} ID="{i}"/>' for n, i in frame_ids.items())
        + "</frameIndex>",
    )
    _write(
        root / "luIndex.xml",
        f"<luIndex {header}>"
        + "".join(
            f'<lu status="Finished_Initial" frameName={quoteattr(f)} frameID="{frame_ids[f]}" '
            f'name={quoteattr(lu)} ID="{i}"/>'
            for (f, lu), i in lu_ids.items()
        )
        + "</luIndex>",
    )


def _write_frames(
    root: Path,
    frames: dict[str, Any],
    frame_ids: dict[str, int],
    lu_ids: dict[tuple[str, str], int],
    counter: list[int],
    sent_id: int,
) -> int:
    """Each frame's file and its lexical units' exemplar files; returns the last sentence id used."""
    header = f'xmlns="{NS}"'
    for fname, fid in frame_ids.items():
        fspec = frames[fname]
        lus_xml = []
        for (f, lu), lu_id in lu_ids.items():
            if f != fname:
                continue
            lemma, _, pos = lu.rpartition(".")
            lus_xml.append(
                f'<lexUnit status="Finished_Initial" POS="{_POS.get(pos, pos.upper())}" '
                f'name={quoteattr(lu)} ID="{lu_id}">'
                f"<definition>{escape(lemma)}</definition>"
                + "".join(
                    f'<lexeme order="{k + 1}" POS="{_POS.get(pos, pos.upper())}" name={quoteattr(w)}/>'
                    for k, w in enumerate(lemma.split())
                )
                + "</lexUnit>"
            )
            sents = []
            for line in fspec.get("lexical_units", {}).get(lu, []):
                text, targets, fes = parse_annotated(line)
                if len(targets) != 1:
                    raise ValueError(f"exemplar of {lu} must mark exactly one target: {line!r}")
                s, e, _, _ = targets[0]
                sent_id += 1
                aset = _frame_aset(sent_id * 10 + 1, s, e, lu_id, lu, fid, fname, _fn_date(counter[0] + 1), fes)
                sents.append(_annotated_sentence(sent_id, text, [aset], counter))
            if sents:
                _write(
                    root / "lu" / f"lu{lu_id}.xml",
                    f'<lexUnit {header} status="Finished_Initial" POS="{_POS.get(pos, pos.upper())}" '
                    f'name={quoteattr(lu)} ID="{lu_id}" frame={quoteattr(fname)} frameID="{fid}" '
                    f'totalAnnotated="{len(sents)}"><header/><definition>{escape(lemma)}</definition>'
                    f'<subCorpus name="manual">{"".join(sents)}</subCorpus></lexUnit>',
                )
        _write(
            root / "frame" / f"{fname}.xml",
            f'<frame {header} cDate="{_fn_date(0)}" name={quoteattr(fname)} ID="{fid}">'
            f"<definition>{escape(fspec.get('definition', ''))}</definition>{_frame_fes(fspec, fid)}"
            f"{''.join(lus_xml)}</frame>",
        )
    return sent_id


def _write_fulltext(
    root: Path,
    documents: list[dict[str, Any]],
    frame_ids: dict[str, int],
    lu_ids: dict[tuple[str, str], int],
    counter: list[int],
    sent_id: int,
) -> None:
    """The full-text documents and their index (sentence ids go on from ``sent_id``)."""
    header = f'xmlns="{NS}"'
    corpora: dict[str, list[tuple[int, str]]] = {}
    for d, doc in enumerate(documents):
        doc_id = 300 + d
        corpora.setdefault(doc["corpus"], []).append((doc_id, doc["document"]))
        sents = []
        for line in doc["sentences"]:
            text, targets, fes = parse_annotated(line)
            if fes and len(targets) != 1:
                raise ValueError(f"frame elements are marked in sentences with one target only: {line!r}")
            sent_id += 1
            asets = [
                _frame_aset(
                    sent_id * 10 + 1 + k,
                    s,
                    e,
                    lu_ids[(frame, lu)],
                    lu,
                    frame_ids[frame],
                    frame,
                    _fn_date(counter[0] + 1),
                    fes,
                )
                for k, (s, e, lu, frame) in enumerate(targets)
            ]
            sents.append(_annotated_sentence(sent_id, text, asets, counter))
        _write(
            root / "fulltext" / f"{doc['corpus']}__{doc['document']}.xml",
            f"<fullTextAnnotation {header}><header/>{''.join(sents)}</fullTextAnnotation>",
        )
    _write(
        root / "fulltextIndex.xml",
        f"<fulltextIndex {header}>"
        + "".join(
            f'<corpus name={quoteattr(c)} ID="{200 + k}">'
            + "".join(f'<document name={quoteattr(n)} ID="{i}" description={quoteattr(n)}/>' for i, n in docs)
            + "</corpus>"
            for k, (c, docs) in enumerate(corpora.items())
        )
        + "</fulltextIndex>",
    )


#: Characters XML 1.0 cannot hold: a release written with them could not be read back.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any, path: Path | str, where: str, what: str, file_name: bool = False) -> str:
    """A non-blank string that XML (and, for ``file_name``, a file name) can hold."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, where, f"{what} is {value!r} (expected a non-blank string)")
    bad = _NOT_XML.search(value)
    if bad:
        raise InputError(path, where, f"{what} holds {bad.group()!r}, which XML cannot hold")
    if file_name and ("/" in value or "\\" in value or value in (".", "..")):
        raise InputError(path, where, f"{what} {value!r} names a file: no '/', '\\', '.' or '..'")
    return value


def check_spec(spec: Any, path: Path | str) -> dict[str, Any]:
    """The corpus spec checked for shape and values; errors name the spec file and the entry."""
    if not isinstance(spec, dict):
        raise InputError(path, None, "expected a mapping with 'frames' and optionally 'fulltext'")
    frames = spec.get("frames") or {}
    if not isinstance(frames, dict) or not frames:
        raise InputError(path, "frames", "expected a mapping of frame name -> {definition, lexical_units}")
    for name, frame in frames.items():
        where = f"frame {name!r}"
        _text(name, path, where, "the frame name", file_name=True)
        if not isinstance(frame, dict):
            raise InputError(path, where, "expected a mapping with 'definition' and 'lexical_units'")
        if frame.get("definition") is not None:
            _text(frame["definition"], path, where, "the definition")
        fe_defs = frame.get("frame_elements") or {}
        if not isinstance(fe_defs, dict) or not all(
            isinstance(k, str) and _FE_OPEN_RE.fullmatch("<" + k + " ") and v in CORENESS for k, v in fe_defs.items()
        ):
            raise InputError(
                path, where, f"'frame_elements' maps FE names (letters, digits, _, -) to one of {', '.join(CORENESS)}"
            )
        lus = frame.get("lexical_units") or {}
        if not isinstance(lus, dict):
            raise InputError(path, where, "'lexical_units' must map 'lemma.pos' names to lists of sentences")
        for lu, sentences in lus.items():
            lu_where = f"{where}, lexical unit {lu!r}"
            lemma, dot, pos = _text(lu, path, lu_where, "the LU name").rpartition(".")
            if not dot or not lemma.strip() or not pos.strip():
                raise InputError(path, lu_where, "an LU name is 'lemma.pos', e.g. 'buy.v'")
            if not isinstance(sentences, list):
                raise InputError(path, lu_where, "expected a list of sentences, each with one [target]")
            for n, line in enumerate(sentences):
                text, targets, fes = _parsed(line, path, f"{lu_where}, sentence {n + 1}")
                if len(targets) != 1 or not text[targets[0][0] : targets[0][1]].strip():
                    raise InputError(
                        path,
                        f"{lu_where}, sentence {n + 1}",
                        f"an exemplar marks exactly one non-blank [target]: {line!r}",
                    )
                _check_fes(text, fes, frame, path, f"{lu_where}, sentence {n + 1}")
    docs = spec.get("fulltext") or []
    if not isinstance(docs, list):
        raise InputError(path, "fulltext", "expected a list of documents")
    for d, doc in enumerate(docs):
        where = f"fulltext document {d + 1}"
        if not isinstance(doc, dict) or not isinstance(doc.get("sentences"), list):
            raise InputError(path, where, "expected a mapping with 'corpus', 'document' and a list of 'sentences'")
        _text(doc.get("corpus"), path, where, "the corpus name", file_name=True)
        _text(doc.get("document"), path, where, "the document name", file_name=True)
        for n, line in enumerate(doc["sentences"]):
            text, targets, fes = _parsed(line, path, f"{where}, sentence {n + 1}")
            if fes and len(targets) != 1:
                raise InputError(path, f"{where}, sentence {n + 1}", "<FE ...> marks need exactly one [target]")
            for start, end, lu, frame in targets:
                if lu is None or frame not in frames or not text[start:end].strip():
                    raise InputError(
                        path,
                        f"{where}, sentence {n + 1}",
                        f"a full-text target is [words|lu|frame] with a frame of the spec: {line!r}",
                    )
                lemma, dot, pos = lu.rpartition(".")
                if not dot or not lemma.strip() or not pos.strip():
                    raise InputError(path, f"{where}, sentence {n + 1}", f"LU {lu!r} is not 'lemma.pos'")
                _check_fes(text, fes, frames[frame], path, f"{where}, sentence {n + 1}")
    return spec


def _parsed(line: Any, path: Path | str, where: str) -> tuple[str, list, list[FEMark]]:
    try:
        return parse_annotated(_text(line, path, where, "the sentence"))
    except ValueError as exc:
        raise InputError(path, where, f"{exc}: {line!r}") from None


def _check_fes(text: str, fes: list[FEMark], frame: dict[str, Any], path: Path | str, where: str) -> None:
    """FE marks hold words, name FEs the frame lists (when it lists any) and do not overlap."""
    known = frame.get("frame_elements") or {}
    overt = sorted((s, e, name) for s, e, name, null_type in fes if null_type is None)
    for s, e, name in overt:
        if not text[s:e].strip():
            raise InputError(path, where, f"frame element {name!r} marks no words")
    for _, _, name, _ in fes:
        if known and name not in known:
            raise InputError(path, where, f"frame element {name!r} is not in the frame's frame_elements")
    for (_, e1, a), (s2, _, b) in itertools.pairwise(overt):
        if s2 < e1:
            raise InputError(path, where, f"frame elements {a!r} and {b!r} overlap")


def write_release_from_yaml(spec_path: Path | str, root: Path | str) -> Path:
    """Write the release directory of a YAML spec; a malformed spec is an error naming its entry."""
    try:
        spec = yaml.safe_load(read_text(spec_path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(spec_path, mark.line + 1 if mark else None, f"malformed YAML ({problem})") from None
    return write_release(check_spec(spec, spec_path), root)
