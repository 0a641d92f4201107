"""Argument identification data: one annotation per (sentence, trigger, frame) with its overt frame
elements (FEs), read from open-SESAME CoNLL (column 15) or Parquet (imported sentences or augmented
outputs with ``frame_elements``), and the frames' FE inventories."""

from __future__ import annotations

import dataclasses
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import artifacts
from spanaug.core.argid_settings import LostFes
from spanaug.core.errors import InputError
from spanaug.core.validation import LOST

log = logging.getLogger(__name__)

NULL = "NULL"
Span = tuple[int, int]


@dataclasses.dataclass
class Annotation:
    """A sentence with one trigger and its frame, and the overt FEs of that frame annotation.

    ``fes`` lists (span, role) pairs; a discontiguous FE is several pieces of one role.
    ``coreness`` maps roles to their coreness where the input knows it (FrameNet imports)."""

    tokens: list[str]
    trigger: Span
    frame: str
    fes: list[tuple[Span, str]]
    pos: list[str] | None = None
    coreness: dict[str, str] = dataclasses.field(default_factory=dict)
    sentence: str | None = None  # groups the annotations of one sentence (held-out shares stay whole)
    lexical_unit: str | None = None


def annotation_from_row(
    row: Mapping[str, Any],
    tokens_key: str,
    start_key: str,
    end_key: str,
    path: Path,
    where: str,
    lost_fes: LostFes = "drop_example",
) -> Annotation | None:
    """An annotation from a SENTENCES, AUGMENTED or EXAMPLES row; None when it annotates no FE (null),
    has no trigger, or lost an FE with ``drop_example``: the lost FE's words are somewhere in the
    output, unmarked, and would be learnt as no FE (``keep_example`` trains on the FEs it kept).
    Null-instantiated and lost FEs are no overt span and are left out of the annotation."""
    fes = row.get("frame_elements")
    if fes is None or row.get(start_key) is None:
        return None
    if lost_fes == "drop_example" and any(fe.get("null_type") == LOST for fe in fes):
        return None
    tokens = list(row[tokens_key])
    overt, coreness = [], {}
    for fe in fes:
        if fe.get("coreness"):
            coreness[fe["name"]] = fe["coreness"]
        if fe.get("null_type") is not None or fe.get("start") is None:
            continue
        if not (0 <= fe["start"] <= fe["end"] < len(tokens)):
            raise InputError(
                path,
                where,
                f"FE {fe['name']!r} span [{fe['start']}, {fe['end']}] out of range for {len(tokens)} tokens",
            )
        overt.append(((fe["start"], fe["end"]), fe["name"]))
    sentence = row.get("document") or row.get("seed_id") or " ".join(tokens)
    trigger = (row[start_key], row[end_key])
    return Annotation(
        tokens, trigger, row["frame"], overt, row.get("pos_tags"), coreness, sentence, row.get("lexical_unit")
    )


def read_annotations(path: Path | str) -> list[Annotation]:
    """Open-SESAME CoNLL (blocks whose column 15 is all ``_`` annotate no FE and are left out), or
    Parquet: imported sentences (SENTENCES) or augmented outputs (AUGMENTED, their aligned trigger
    and carried FEs). A file without one FE-annotated trigger is an error naming it."""
    from spanaug.pipeline.importers import read_conll

    path = Path(path)
    if path.suffix != ".parquet":
        rows: Iterable[tuple[str, dict[str, Any]]] = (
            (f"line {r['sentence_id'].rsplit(':', 1)[-1]}", r) for r in read_conll(path)
        )
        keys = ("tokens", "span_start", "span_end")
    else:
        names = set(artifacts.read_schema(path).names)
        if "output_id" in names:
            table = artifacts.read_table(path, artifacts.AUGMENTED)
            keys = ("paraphrase_tokens", "aligned_start", "aligned_end")
        elif "sentence_id" in names:
            table = artifacts.read_table(path, artifacts.SENTENCES)
            keys = ("tokens", "span_start", "span_end")
        else:
            raise InputError(
                path, None, "not imported sentences or augmented outputs (no sentence_id/output_id column)"
            )
        rows = ((f"row {i + 1}", r) for i, r in enumerate(table.to_pylist()))
    read = 0
    out = []
    for where, row in rows:
        read += 1
        annotation = annotation_from_row(row, *keys, path, where)
        if annotation is not None:
            out.append(annotation)
    if len(out) < read:
        log.info(
            "%s: %d of %d rows have no FE annotation, no trigger or a lost FE: left out", path, read - len(out), read
        )
    if not out:
        raise InputError(
            path, None, "holds no trigger annotated with frame elements (CoNLL column 15 or frame_elements)"
        )
    return out


def read_all(paths: Sequence[Path | str]) -> list[Annotation]:
    return [a for path in paths for a in read_annotations(path)]


def hold_out(annotations: Sequence[Annotation], share: float, seed: int) -> tuple[list[Annotation], list[Annotation]]:
    """(train, dev): ``share`` of the sentences, drawn by ``seed``, with all their annotations become
    dev (a sentence split across the two would leak its FEs). Empty when the share rounds to none."""
    sentences = sorted({str(a.sentence) for a in annotations})
    n_dev = round(share * len(sentences))
    if n_dev == 0 or n_dev >= len(sentences):
        return list(annotations), []
    chosen = set(random.Random(seed).sample(sentences, n_dev))
    return (
        [a for a in annotations if str(a.sentence) not in chosen],
        [a for a in annotations if str(a.sentence) in chosen],
    )


@dataclasses.dataclass
class Inventory:
    """Roles and frames the model knows, each frame's FEs and their coreness, and the roles that
    may fill more than one span of one annotation (a discontiguous FE, or a role repeated)."""

    roles: list[str]  # index 0 is NULL
    frames: list[str]  # index 0 stands for a frame never seen
    frame_roles: dict[str, list[str]]
    repeatable: list[str]
    coreness: dict[str, dict[str, str]]

    @classmethod
    def build(
        cls, annotations: Sequence[Annotation], release: Mapping[str, Mapping[str, str]] | None = None
    ) -> Inventory:
        """From the training annotations, plus a FrameNet release's frames (frame -> FE -> coreness):
        each frame's FEs are those seen with it in training and those the release lists."""
        frame_roles: dict[str, set[str]] = defaultdict(set)
        coreness: dict[str, dict[str, str]] = defaultdict(dict)
        repeatable: set[str] = set()
        for a in annotations:
            frame_roles[a.frame].update(role for _, role in a.fes)
            coreness[a.frame].update(a.coreness)
            repeatable.update(role for role, n in Counter(role for _, role in a.fes).items() if n > 1)
        for frame, fes in (release or {}).items():
            frame_roles[frame].update(fes)
            coreness[frame].update(fes)
        roles = sorted({r for rs in frame_roles.values() for r in rs})
        return cls(
            roles=[NULL, *roles],
            frames=["<unseen>", *sorted({a.frame for a in annotations})],
            frame_roles={f: sorted(rs) for f, rs in sorted(frame_roles.items())},
            repeatable=sorted(repeatable),
            coreness={f: dict(sorted(c.items())) for f, c in sorted(coreness.items()) if c},
        )

    def allowed(self, frame: str) -> list[str]:
        """The roles a frame's annotation may use: its FEs that the model knows; every role for a frame
        it has no FE list of."""
        known = [r for r in self.frame_roles.get(frame, ()) if r in self._role_set]
        return known or self.roles[1:]

    @property
    def _role_set(self) -> set[str]:
        return set(self.roles)


def release_frames(root: Path | str) -> dict[str, dict[str, str]]:
    """Frame -> FE -> coreness from a FrameNet release directory (frame/*.xml via NLTK)."""
    from spanaug.pipeline.framenet import framenet_reader, guarded

    root = Path(root)
    if not root.is_dir():
        raise InputError(root, None, "not a FrameNet release directory (frame/*.xml with frameIndex.xml)")
    reader = framenet_reader(root)
    frames = guarded(root / "frameIndex.xml", lambda: list(reader.frames()), reader)
    return {f.name: {name: fe.coreType for name, fe in f.FE.items()} for f in frames}


def prediction_record(annotation: Annotation, fes: Sequence[tuple[Span, str]]) -> dict[str, Any]:
    """An annotation with predicted FEs, as a JSON line (spans inclusive, over ``tokens``)."""
    return {
        "tokens": annotation.tokens,
        "trigger": list(annotation.trigger),
        "frame": annotation.frame,
        "lexical_unit": annotation.lexical_unit,
        "frame_elements": [{"name": role, "start": s, "end": e} for (s, e), role in fes],
    }


def conll_lines(annotation: Annotation, fes: Sequence[tuple[Span, str]], sentence: int) -> list[str]:
    """An annotation with predicted FEs as one open-SESAME CoNLL block (column 15 in BIO; no
    trailing blank line), which ``read_annotations`` and open-SESAME's reader read back."""
    tags = ["O"] * len(annotation.tokens)
    for (s, e), role in fes:
        tags[s : e + 1] = [f"B-{role}"] + [f"I-{role}"] * (e - s)
    lu = annotation.lexical_unit or f"{annotation.tokens[annotation.trigger[0]].lower()}.v"
    pos = annotation.pos or ["_"] * len(annotation.tokens)
    lines = []
    for i, token in enumerate(annotation.tokens):
        on = annotation.trigger[0] <= i <= annotation.trigger[1]
        cols = [str(i + 1), token, "_", "_", pos[i], pos[i], str(sentence), *["_"] * 5]
        cols += [lu if on else "_", annotation.frame if on else "_", tags[i]]
        lines.append("\t".join(cols))
    return lines
