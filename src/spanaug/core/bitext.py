"""Paraphrase bitexts on disk: TSV files of ``source<TAB>paraphrase`` lines, which the paraphraser
trains on and the aligner makes span instances from."""

from __future__ import annotations

from pathlib import Path

from spanaug.core import files
from spanaug.core.errors import InputError


def read_bitext(path: Path | str) -> list[tuple[str, str]]:
    """``source<TAB>paraphrase`` lines; a malformed line is an error naming its number."""
    pairs = []
    for lineno, line in files.iter_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2 or not cols[0].strip() or not cols[1].strip():
            raise InputError(path, lineno, "expected 'source<TAB>paraphrase' with both sides non-empty")
        pairs.append((cols[0].strip(), cols[1].strip()))
    if not pairs:
        raise InputError(path, None, "bitext holds no pairs")
    return pairs
