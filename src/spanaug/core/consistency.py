"""Checks that a stage's inputs belong together: one run's seeds, the expected iteration, each
iteration and shard once, no output twice.

Each input may be well-formed and still wrong for the place it is given: another run's seeds, the
outputs of the wrong iteration, the same shard twice. Nothing would fail; the result would be
silently wrong (duplicated outputs, a report saying "no seed has an output"). These checks read
what the artifacts hold (their ``seed_id`` and ``iteration`` columns), so they hold for files of
any origin, and the error names the file that breaks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core.errors import ArtifactError
from spanaug.core.validation import output_ids


def iterations_in(table: pa.Table) -> list[int]:
    """The distinct values of the ``iteration`` column, sorted."""
    return sorted(v for v in pc.unique(table.column("iteration")).to_pylist() if v is not None)


def check_iteration(path: Path | str, table: pa.Table, expected: int, what: str) -> None:
    """Every row of ``table`` (read from ``path``) is of iteration ``expected``."""
    found = iterations_in(table)
    if found and found != [expected]:
        shown = ", ".join(map(str, found))
        raise ArtifactError(f"{path}: holds iteration {shown} where {what} needs iteration {expected}")


def check_unique_outputs(
    paths: Sequence[Path | str], seed_ids: Sequence[pa.ChunkedArray], iterations: Sequence[pa.ChunkedArray]
) -> None:
    """No (seed, iteration) output in two rows of ``paths``: the same chain (or shard) given twice
    would release every one of its outputs twice under one ``output_id``."""
    keys = [output_ids(s, i) for s, i in zip(seed_ids, iterations, strict=True)]
    counts = pc.value_counts(pa.chunked_array([c for k in keys for c in k.chunks], pa.string()))
    twice = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
    if len(twice):
        key = twice[0].as_py()
        holders = [str(p) for p, k in zip(paths, keys) for _ in range(pc.sum(pc.equal(k, key)).as_py() or 0)]
        raise ArtifactError(
            f"{holders[-1]}: output {key!r} is also in {holders[0]} ({len(twice)} output(s) given twice: "
            "the same chain or shard given twice)"
        )


def check_contiguous(paths: Sequence[Path | str], iterations: Sequence[int], first: int, what: str) -> None:
    """The iterations run ``first``, ``first + 1``, ... with none missing."""
    present = sorted(iterations)
    missing = sorted(set(range(first, present[-1] + 1)) - set(present)) if present else []
    if missing:
        raise ArtifactError(
            f"{paths[0]} ... {paths[-1]}: iteration {', '.join(map(str, missing))} is missing ({what} needs every "
            f"iteration from {first} to {present[-1]})"
        )


def check_same_iteration(paths: Sequence[Path | str], iterations: Sequence[list[int]], what: str) -> None:
    """Shards of one iteration: no file holds another iteration than the first file's."""
    reference: tuple[Path | str, int] | None = None
    for path, found in zip(paths, iterations):
        for value in found:
            if reference is None:
                reference = (path, value)
            elif value != reference[1]:
                raise ArtifactError(
                    f"{path}: holds iteration {value} where {reference[0]} holds iteration {reference[1]} "
                    f"({what} takes shards of one iteration)"
                )


def check_no_shared_seeds(paths: Sequence[Path | str], seed_ids: Sequence[pa.Array], what: str) -> None:
    """Shards hold disjoint seeds (a seed is hashed to one shard): a seed in two files is the same
    shard given twice, or shards of two runs."""
    seen: pa.Array | None = None
    owner: list[tuple[Path | str, pa.Array]] = []
    for path, ids in zip(paths, seed_ids):
        unique = pc.unique(ids)
        if seen is not None and len(unique):
            shared = pc.filter(unique, pc.is_in(unique, value_set=seen))
            if len(shared):
                first = shared[0].as_py()
                before = next(p for p, o in owner if pc.any(pc.equal(o, first)).as_py())
                raise ArtifactError(
                    f"{path}: seed {first!r} is also in {before} (a shard given twice, or shards of another run; "
                    f"{what})"
                )
        owner.append((path, unique))
        seen = unique if seen is None else pa.concat_arrays([seen, unique])


def check_seeds_cover(seeds_path: Path | str, seeds: pa.Table, path: Path | str, seed_ids: pa.Array) -> None:
    """Every output of ``path`` is of a seed in ``seeds``: else the seeds are another run's."""
    known = seeds.column("sentence_id")
    unknown = pc.filter(seed_ids, pc.invert(pc.is_in(seed_ids, value_set=known)))
    if len(unknown):
        raise ArtifactError(
            f"{path}: {len(unknown)} output(s) of seeds not in {seeds_path} (first: {unknown[0].as_py()!r}); "
            "the seeds are another run's"
        )


# ---------------------------------------------------------------- provenance (the files' metadata)


def check_provenance_iteration(path: Path | str, provenance: dict[str, Any] | None, expected: int, what: str) -> None:
    """The iteration ``path``'s metadata records (``provenance``, when it has one) is ``expected``."""
    recorded = (provenance or {}).get("iteration")
    if recorded is not None and recorded != expected:
        raise ArtifactError(f"{path}: is an output of iteration {recorded} where {what} needs iteration {expected}")


def check_one_run(paths: Sequence[Path | str], provenances: Sequence[dict[str, Any] | None]) -> str | None:
    """The files that record a run all record the same one; returns it (None when none records it)."""
    first: tuple[Path | str, str] | None = None
    for path, prov in zip(paths, provenances):
        run = (prov or {}).get("run")
        if run is None:
            continue
        if first is None:
            first = (path, run)
        elif run != first[1]:
            raise ArtifactError(f"{path}: is from another run than {first[0]} (their seeds differ)")
    return first[1] if first else None


def check_shards(paths: Sequence[Path | str], provenances: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Shards of one stage, run and iteration, each of ``n_shards`` exactly once; returns the merged
    file's provenance. Files without provenance are not checked (and the merge records none)."""
    if not paths or any(p is None for p in provenances):
        return None
    run = check_one_run(paths, provenances)
    first = provenances[0]
    for path, prov in zip(paths, provenances):
        for key in ("stage", "iteration", "n_shards"):
            if prov.get(key) != first.get(key):
                raise ArtifactError(
                    f"{path}: {key} {prov.get(key)!r} where {paths[0]} has {first.get(key)!r} (gather takes the "
                    "shards of one stage and iteration)"
                )
    seen: dict[int, Path | str] = {}
    for path, prov in zip(paths, provenances):
        shard = prov.get("shard")
        if shard in seen:
            raise ArtifactError(f"{path}: shard {shard} was given already by {seen[shard]}")
        seen[shard] = path
    n_shards = first.get("n_shards")
    missing = sorted(set(range(n_shards)) - set(seen)) if isinstance(n_shards, int) else []
    if missing:
        raise ArtifactError(
            f"{paths[-1]}: shard(s) {', '.join(map(str, missing))} of {n_shards} missing (iteration "
            f"{first.get('iteration')}'s {first.get('stage')})"
        )
    return {"run": run, "stage": first.get("stage"), "iteration": first.get("iteration")}
