"""The sentence and span each output of an augmented dataset was paraphrased from.

The statistics, the meaning check and the span task join outputs to their sources; this module
needs only pyarrow, so CPU stages that join (the span task) do not import what the statistics
import (the meaning check's encoder).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from spanaug.core.errors import ArtifactError


def with_sources(augmented: pa.Table, seeds: pa.Table) -> pa.Table:
    """``augmented`` plus the sentence and span each output was paraphrased from.

    The source of iteration i's output is the same seed's output of iteration i - 1 (the seed
    sentence itself for i = 1): ``source_tokens``, ``source_start``, ``source_end``.
    """
    previous = pa.table(
        {
            "seed_id": augmented.column("seed_id"),
            "iteration": pc.cast(pc.add(augmented.column("iteration"), 1), pa.int32()),
            "source_tokens": augmented.column("paraphrase_tokens"),
            "source_start": augmented.column("aligned_start"),
            "source_end": augmented.column("aligned_end"),
        }
    )
    from_seeds = pa.table(
        {
            "seed_id": seeds.column("sentence_id"),
            "iteration": pa.array([1] * seeds.num_rows, pa.int32()),
            "source_tokens": seeds.column("tokens"),
            "source_start": seeds.column("span_start"),
            "source_end": seeds.column("span_end"),
        }
    ).cast(previous.schema)
    sources = pa.concat_tables([previous, from_seeds])
    # Arrow joins cannot carry list columns: join on row numbers, then take.
    index = sources.select(["seed_id", "iteration"]).append_column("source_row", pa.array(range(sources.num_rows)))
    keyed = augmented.append_column("output_row", pa.array(range(augmented.num_rows)))
    joined = keyed.select(["seed_id", "iteration", "output_row"]).join(
        index, ["seed_id", "iteration"], join_type="left outer"
    )
    joined = joined.sort_by("output_row")
    rows = joined.column("source_row")
    if rows.null_count:
        row = pc.index(rows.is_null(), True).as_py()
        raise ArtifactError(
            f"row {row}: the output of seed {augmented.column('seed_id')[row].as_py()!r} at iteration "
            f"{augmented.column('iteration')[row].as_py()} has no source (the seed, or its output of the "
            f"iteration before); {rows.null_count} output(s) have none (are the seeds this run's?)"
        )
    taken = sources.take(rows)
    out = augmented
    for name in ("source_tokens", "source_start", "source_end"):
        out = out.append_column(name, taken.column(name))
    return out
