"""What an artifact's schema cannot say, checked on every read and write: spans inside their tokens,
tokens that are not blank, list columns of matching lengths, constraint sets never empty.

A Parquet file can hold every column with the right type and still be wrong: a span past the end of
its sentence, an end before its start, half an alignment (a start without an end), an empty or
blank token, POS tags that do not match the tokens one to one, a request with no constraints. Each
of these once flowed on silently (an unconstrained paraphrase, an empty aligned text). The checks
are column-wise Arrow compute kernels, so they cost little next to reading the file (the scale
benchmark prints how much), and an error names the file, the first offending row and the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core.errors import ArtifactError

#: List-of-token columns: at least one token each, none blank (whitespace only) or null.
TOKEN_COLUMNS = ("tokens", "source_tokens", "paraphrase_tokens")

#: (tokens, start, end, required): inclusive spans that must lie inside their tokens. An optional
#: span (an alignment) is either wholly null or wholly set.
SPANS = (
    ("tokens", "span_start", "span_end", True),
    ("source_tokens", "source_span_start", "source_span_end", True),
    ("paraphrase_tokens", "aligned_start", "aligned_end", False),
)

#: String columns that identify or label a row: never empty or blank.
LABEL_COLUMNS = (
    "sentence_id",
    "seed_id",
    "output_id",
    "example_id",
    "frame",
    "lexical_unit",
    "text",
    "source_text",
    "paraphrase_text",
    "seed_trigger",
    "trigger",
)

#: (tokens, frame elements, whether it may hold LOST FEs): FE lists whose spans index those tokens.
#: An imported sentence's FEs are annotations; a paraphrase's (and a request's source) are carried,
#: and so are an augmenter's example's (over ``tokens``; ``_problems`` tells it by its ``augmenter``).
FRAME_ELEMENT_COLUMNS = (
    ("tokens", "frame_elements", False),
    ("paraphrase_tokens", "frame_elements", True),
    ("source_tokens", "source_frame_elements", True),
)

#: The kinds of null instantiation FrameNet marks on an FE with no words in the sentence:
#: constructional, definite and indefinite.
NULL_INSTANTIATIONS = ("CNI", "DNI", "INI")

#: The ``null_type`` of an FE that a paraphrase lost: its source had it overt, and no span of the
#: output carries it (spanaug's own mark; it is no null instantiation, and never in an import).
LOST = "LOST"

#: An FE's coreness in its frame, as FrameNet's frame files give it (``coreType``).
CORENESS = ("Core", "Core-Unexpressed", "Peripheral", "Extra-Thematic")

#: Scores that are probabilities (null allowed where the schema allows it).
PROBABILITIES = ("aligner_score", "p_classifier", "r_classifier")


def _true(mask: Any) -> Any:
    """A boolean mask with null read as False."""
    return pc.fill_null(mask, False)


def _first(mask: Any) -> int:
    """Index of the first True of a mask (nulls are False), or -1."""
    if not pc.any(_true(mask)).as_py():
        return -1
    return pc.index(_true(mask), True).as_py()


def _value(table: pa.Table, column: str, row: int) -> Any:
    return table.column(column)[row].as_py()


Problem = tuple[int, str]


def _token_problems(table: pa.Table, column: str) -> list[Problem]:
    tokens = table.column(column)
    lengths = pc.fill_null(pc.list_value_length(tokens), 0)
    out = []
    row = _first(pc.equal(lengths, 0))
    if row >= 0:
        out.append((row, f"column {column!r} is empty (expected at least one token)"))
    flat = pc.list_flatten(tokens)
    if len(flat):
        k = _first(_visible_blank(flat))
        if k >= 0:
            ends = np.cumsum(lengths.to_numpy(zero_copy_only=False))
            row = int(np.searchsorted(ends, k, side="right"))
            position = k - (int(ends[row - 1]) if row else 0)
            out.append(
                (
                    row,
                    f"column {column!r}: token {position} is {flat[k].as_py()!r} "
                    "(expected a non-empty token that is not only whitespace or invisible characters)",
                )
            )
    return out


def _span_problems(table: pa.Table, tokens_col: str, start_col: str, end_col: str, required: bool) -> list[Problem]:
    start, end = table.column(start_col), table.column(end_col)
    out = []
    if not required:
        row = _first(pc.not_equal(pc.is_null(start), pc.is_null(end)))
        if row >= 0:
            out.append(
                (
                    row,
                    f"{start_col} is {_value(table, start_col, row)} but {end_col} is "
                    f"{_value(table, end_col, row)} (expected both set or both null)",
                )
            )
    lengths = pc.list_value_length(table.column(tokens_col))
    bad = pc.or_(pc.or_(pc.less(start, 0), pc.less(end, start)), pc.greater_equal(end, lengths))
    row = _first(bad)
    if row >= 0:
        s, e, n = _value(table, start_col, row), _value(table, end_col, row), lengths[row].as_py()
        out.append(
            (
                row,
                f"span [{start_col}, {end_col}] = [{s}, {e}] is not inside the {n} tokens of "
                f"{tokens_col!r} (expected 0 <= {start_col} <= {end_col} < {n})",
            )
        )
    return out


def _visible_blank(strings: Any) -> Any:
    """Per string: blank as :func:`spanaug.core.text.is_blank` (format characters removed, whitespace
    trimmed; Python's str.isspace and Arrow's utf8_trim_whitespace agree on whitespace); null is blank."""
    visible = pc.utf8_trim_whitespace(pc.replace_substring_regex(strings, r"\p{Cf}+", ""))
    return pc.fill_null(pc.equal(visible, ""), True)


def _fe_problems(table: pa.Table, tokens_col: str, fe_col: str, carried: bool) -> list[Problem]:
    """Every FE named, overt (a span inside the tokens) or null-instantiated (a kind, no span; LOST
    too where ``carried``), with a known coreness and a score in [0, 1]; no two overt FEs of a row
    overlapping (an FE may cover the trigger)."""
    lists = table.column(fe_col).combine_chunks()
    items = lists.flatten()
    if not len(items):
        return []
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    # StructArray.flatten: the children with a null item's nulls applied (its slots hold anything).
    name, start, end, null_type, coreness, score = items.flatten()
    lengths = pc.take(pc.list_value_length(table.column(tokens_col)), pa.array(parents))
    overt = pc.is_null(null_type)
    inside = pc.and_(pc.and_(pc.greater_equal(start, 0), pc.less_equal(start, end)), pc.less(end, lengths))
    kinds = NULL_INSTANTIATIONS + ((LOST,) if carried else ())
    checks = [
        (pc.is_null(items), lambda k: "an item is null (expected {name, start, end} or {name, null_type})"),
        (_visible_blank(name), lambda k: f"an FE's name is {name[k].as_py()!r} (expected a non-blank name)"),
        (
            pc.and_(overt, pc.invert(_true(inside))),
            lambda k: (
                f"FE {name[k].as_py()!r} at [{start[k].as_py()}, {end[k].as_py()}] "
                f"is not inside the {lengths[k].as_py()} tokens of {tokens_col!r} "
                f"(expected 0 <= start <= end < {lengths[k].as_py()})"
            ),
        ),
        (
            pc.and_(pc.invert(overt), pc.invert(pc.is_in(null_type, pa.array(kinds)))),
            lambda k: (
                f"FE {name[k].as_py()!r} has null_type {null_type[k].as_py()!r} (expected one of "
                f"{', '.join(kinds)}, or null for an overt FE)"
            ),
        ),
        (
            pc.and_(pc.invert(overt), pc.or_(pc.is_valid(start), pc.is_valid(end))),
            lambda k: (
                f"FE {name[k].as_py()!r} is marked {null_type[k].as_py()} but has a span "
                f"[{start[k].as_py()}, {end[k].as_py()}] (expected none)"
            ),
        ),
        (
            # NaN compares false with both bounds: it is named on its own.
            pc.or_(pc.or_(pc.less(score, 0), pc.greater(score, 1)), pc.is_nan(score)),
            lambda k: f"FE {name[k].as_py()!r} has score {score[k].as_py()} (expected 0 <= score <= 1, or null)",
        ),
        (
            pc.and_(pc.is_valid(coreness), pc.invert(pc.is_in(coreness, pa.array(CORENESS)))),
            lambda k: (
                f"FE {name[k].as_py()!r} has coreness {coreness[k].as_py()!r} (expected one of "
                f"{', '.join(CORENESS)}, or null when unknown)"
            ),
        ),
    ]
    out = []
    for mask, message in checks:
        k = _first(mask)
        if k >= 0:
            out.append((int(parents[k]), f"{fe_col}: {message(k)}"))
    out += _fe_overlaps(fe_col, parents, name, start, end, _true(pc.and_(overt, inside)))
    return out


def _fe_overlaps(fe_col: str, parents: np.ndarray, name: Any, start: Any, end: Any, overt: Any) -> list[Problem]:
    """Two overt FEs of one row sharing a token: sorted by (row, start), some pair overlaps exactly
    when a consecutive pair does."""
    keep = np.flatnonzero(overt.to_numpy(zero_copy_only=False))
    if len(keep) < 2:
        return []
    rows = parents[keep]
    starts = pc.fill_null(start, -1).to_numpy(zero_copy_only=False)[keep]
    ends = pc.fill_null(end, -1).to_numpy(zero_copy_only=False)[keep]
    order = np.lexsort((ends, starts, rows))
    rows, starts, ends, keep = rows[order], starts[order], ends[order], keep[order]
    clash = np.flatnonzero((rows[1:] == rows[:-1]) & (starts[1:] <= ends[:-1]))
    if not len(clash):
        return []
    i = int(clash[np.argmin(rows[clash])])
    a, b = int(keep[i]), int(keep[i + 1])
    return [
        (
            int(rows[i]),
            f"{fe_col}: FE {name[a].as_py()!r} at [{starts[i]}, {ends[i]}] overlaps FE {name[b].as_py()!r} at "
            f"[{starts[i + 1]}, {ends[i + 1]}] (expected the FEs of one annotation not to overlap)",
        )
    ]


def _problems(table: pa.Table) -> list[Problem]:
    names = set(table.column_names)
    out: list[Problem] = []
    for column in TOKEN_COLUMNS:
        if column in names:
            out += _token_problems(table, column)
    for tokens_col, start_col, end_col, required in SPANS:
        if {tokens_col, start_col, end_col} <= names:
            out += _span_problems(table, tokens_col, start_col, end_col, required)
    for tokens_col, fe_col, carried in FRAME_ELEMENT_COLUMNS:
        if {tokens_col, fe_col} <= names:
            # An augmenter's example (EXAMPLES) carries its FEs over ``tokens``, as a paraphrase does.
            out += _fe_problems(table, tokens_col, fe_col, carried or "augmenter" in names)
    for column in LABEL_COLUMNS:
        if column in names:
            row = _first(pc.equal(pc.utf8_trim_whitespace(table.column(column)), ""))
            if row >= 0:
                out.append((row, f"column {column!r} is {_value(table, column, row)!r} (expected a non-blank string)"))
    if {"tokens", "pos_tags"} <= names:
        tags = table.column("pos_tags")
        row = _first(pc.not_equal(pc.list_value_length(tags), pc.list_value_length(table.column("tokens"))))
        if row >= 0:
            out.append(
                (
                    row,
                    f"pos_tags holds {len(tags[row])} tags for {len(table.column('tokens')[row])} tokens "
                    "(expected one tag per token)",
                )
            )
        if pc.list_flatten(tags).null_count:
            row = _first(_has_null_item(tags))
            out.append((row, "pos_tags holds a null tag (expected a tag per token; '_' when unknown)"))
    if "aligned_text" in names and "aligned_start" in names:
        row = _first(pc.not_equal(pc.is_null(table.column("aligned_start")), pc.is_null(table.column("aligned_text"))))
        if row >= 0:
            out.append(
                (
                    row,
                    f"aligned_text is {_value(table, 'aligned_text', row)!r} while aligned_start is "
                    f"{_value(table, 'aligned_start', row)} (expected text exactly when a span is aligned)",
                )
            )
    out += _iteration_problems(table, names)
    out += _duplicate_problems(table, names)
    if {"output_id", "seed_id", "iteration"} <= names:
        # The released id is seed_id#iteration; judgments and filters refer to outputs by it.
        expected = output_ids(table.column("seed_id"), table.column("iteration"))
        row = _first(pc.not_equal(table.column("output_id"), expected))
        if row >= 0:
            out.append(
                (
                    row,
                    f"output_id is {_value(table, 'output_id', row)!r} (expected {expected[row].as_py()!r}, "
                    "seed_id#iteration)",
                )
            )
    if "constraints" in names:
        out += _constraint_problems(table, names)
    if "beam_rank" in names:
        row = _first(pc.less(table.column("beam_rank"), 0))
        if row >= 0:
            out.append((row, f"beam_rank is {_value(table, 'beam_rank', row)} (expected >= 0)"))
    for column in PROBABILITIES:
        if column in names:
            values = table.column(column)
            row = _first(pc.or_(pc.invert(pc.is_finite(values)), pc.or_(pc.less(values, 0), pc.greater(values, 1))))
            if row >= 0:
                out.append((row, f"{column} is {_value(table, column, row)} (expected a number in [0, 1])"))
    if "paraphrase_score" in names:
        row = _first(pc.is_nan(table.column("paraphrase_score")))
        if row >= 0:
            out.append((row, "paraphrase_score is NaN (expected a number)"))
    return out


def output_ids(seed_ids: Any, iterations: Any) -> Any:
    """The released id of each output, ``seed_id#iteration`` (Arrow arrays in, an Arrow array out)."""
    return pc.binary_join_element_wise(seed_ids, pc.cast(iterations, pa.string()), "#")


def _key_columns(names: set[str]) -> list[str]:
    """The columns that identify a row: an id, or a seed's request or output of one iteration (and beam)."""
    for column in ("output_id", "example_id", "sentence_id"):
        if column in names:
            return [column]
    if {"seed_id", "iteration"} <= names:
        return ["seed_id", "iteration"] + (["beam_rank"] if "source_tokens" in names and "beam_rank" in names else [])
    return []


def _duplicate_problems(table: pa.Table, names: set[str]) -> list[Problem]:
    keys = _key_columns(names)
    if not keys or table.select(keys).group_by(keys).aggregate([]).num_rows == table.num_rows:
        return []
    seen: dict[tuple, int] = {}  # only on the error path: which row repeats which
    for row, key in enumerate(zip(*(table.column(k).to_pylist() for k in keys))):
        if key in seen:
            shown = ", ".join(f"{k} {v!r}" for k, v in zip(keys, key))
            return [(row, f"{shown} repeats row {seen[key]} (expected each once)")]
        seen[key] = row
    return []


def _has_null_item(lists: Any) -> Any:
    """Per row: does the list hold a null item?"""
    flat_null = pc.is_null(pc.list_flatten(lists)).to_numpy(zero_copy_only=False)
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths)
    per_row = np.zeros(len(lengths), dtype=bool)
    hits = np.flatnonzero(flat_null)
    per_row[np.searchsorted(ends, hits, side="right")] = True
    return pa.array(per_row)


def _iteration_problems(table: pa.Table, names: set[str]) -> list[Problem]:
    if "iteration" not in names:
        return []
    # Requests, paraphrases and alignments belong to iterations >= 1; so does every released output.
    minimum = 1 if ("source_tokens" in names or "output_id" in names) else 0
    row = _first(pc.less(table.column("iteration"), minimum))
    if row >= 0:
        return [(row, f"iteration is {_value(table, 'iteration', row)} (expected >= {minimum})")]
    return []


def _constraint_problems(table: pa.Table, names: set[str]) -> list[Problem]:
    constraints = table.column("constraints")
    out = []
    flat = pc.list_flatten(constraints)
    if len(flat):
        blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(flat), ""), True)
        k = _first(blank)
        if k >= 0:
            lengths = pc.fill_null(pc.list_value_length(constraints), 0).to_numpy(zero_copy_only=False)
            row = int(np.searchsorted(np.cumsum(lengths), k, side="right"))
            out.append((row, f"constraints hold the blank phrase {flat[k].as_py()!r} (expected phrases to avoid)"))
    if "iteration" in names:
        # Every paraphrase from iteration 1 on is decoded under its span's forms: an empty set means
        # the paraphraser would run unconstrained.
        empty = pc.and_(pc.greater_equal(table.column("iteration"), 1), pc.equal(pc.list_value_length(constraints), 0))
        row = _first(empty)
        if row >= 0:
            out.append(
                (
                    row,
                    f"constraints are empty at iteration {_value(table, 'iteration', row)} "
                    "(expected the forms the paraphraser must avoid)",
                )
            )
    return out


def validate(table: pa.Table, path: Path | str, offset: int = 0, writing: bool = False) -> None:
    """Raise an ArtifactError naming ``path``, the first offending row (``offset`` + index) and the
    problem, unless ``table`` is semantically valid."""
    if not table.num_rows:
        return
    problems = _problems(table)
    if problems:
        row, message = min(problems, key=lambda p: p[0])
        suffix = " (in the rows being written)" if writing else ""
        raise ArtifactError(f"{path}, row {offset + row}: {message}{suffix}")
