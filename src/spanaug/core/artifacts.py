"""Parquet artifacts: one pyarrow schema per artifact, checked on write and read.

Every stage of the pipeline exchanges data through these tables. A writer never leaves a
half-written file behind: it writes to a temporary file beside the target and renames it.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from spanaug.core.errors import ArtifactError
from spanaug.core.files import atomic_path
from spanaug.core.validation import validate

_STR = pa.string()
_I32 = pa.int32()
_F32 = pa.float32()
_TOKENS = pa.list_(pa.string())


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


#: One frame element of an annotation: its name, and either an inclusive token span (an overt FE)
#: or why it has none (``null_type``): FrameNet's null instantiations, or ``LOST`` where a paraphrase
#: lost an FE its source had (``validation.LOST``, only in outputs). ``coreness`` is null where the
#: input does not say (CoNLL, JSONL without it); the values allowed are ``validation.NULL_INSTANTIATIONS``
#: and ``validation.CORENESS``. ``score`` is how sure the carrying was (the aligner's score, 1.0 for a
#: verbatim match); null in the seeds. A discontiguous FE is several items of the same name.
#: Every child is nullable in the type, so files of other writers read; the checks of
#: :mod:`spanaug.core.validation` say what must be set.
FRAME_ELEMENT = pa.struct(
    [
        pa.field("name", _STR),
        pa.field("start", _I32),  # inclusive token index; null without a span
        pa.field("end", _I32),  # inclusive token index
        pa.field("null_type", _STR),  # CNI | DNI | INI | LOST, or null for an overt FE
        pa.field("coreness", _STR),  # one of CORENESS, or null when unknown
        pa.field("score", _F32),  # the carrying's score in [0, 1]; null in the seeds
    ]
)

#: A row's frame elements: null = not annotated, an empty list = annotated, none expressed.
FRAME_ELEMENTS = pa.list_(FRAME_ELEMENT)


#: Span-labelled sentences: the canonical imported corpus and the seed set.
SENTENCES = pa.schema(
    [
        _f("sentence_id", _STR),
        _f("tokens", _TOKENS),
        _f("text", _STR),
        _f("span_start", _I32),  # inclusive token index
        _f("span_end", _I32),  # inclusive token index
        _f("frame", _STR),
        _f("lexical_unit", _STR),  # lemma.pos, e.g. "buy.v"
        _f("pos_tags", _TOKENS, nullable=True),
        _f("source", _STR),  # provenance: importer, file and record
        _f("corpus_part", _STR),  # exemplar | fulltext | conll | jsonl
        _f("document", _STR, nullable=True),
        _f("annotation_date", _STR, nullable=True),  # ISO 8601 when known
        _f("order", pa.int64()),  # position in the input, the stand-in for dates
        _f("frame_elements", FRAME_ELEMENTS, nullable=True),  # spans over ``tokens``
    ]
)


#: One output of the iterative process (iteration 0 holds the seeds themselves). This is
#: both the state carried from one iteration to the next and the released dataset's row.
CHAIN = pa.schema(
    [
        _f("seed_id", _STR),
        _f("frame", _STR),
        _f("lexical_unit", _STR),
        _f("seed_trigger", _STR),
        _f("iteration", _I32),
        _f("paraphrase_tokens", _TOKENS),
        _f("paraphrase_text", _STR),
        _f("aligned_start", _I32, nullable=True),
        _f("aligned_end", _I32, nullable=True),
        _f("aligned_text", _STR, nullable=True),
        _f("aligned_lemma", _STR, nullable=True),
        _f("paraphrase_score", _F32, nullable=True),
        _f("aligner_score", _F32, nullable=True),
        _f("beam_rank", _I32, nullable=True),
        _f("constraints", _TOKENS),
        # Spans over ``paraphrase_tokens``: the seed's at iteration 0, carried after (frame_elements.mode;
        # null when it is off or the seed has none).
        _f("frame_elements", FRAME_ELEMENTS, nullable=True),
    ]
)


#: The released dataset: every output of iterations >= 1, each with a stable id
#: (``seed_id#iteration``) that human judgments and filters refer to.
AUGMENTED = pa.schema([_f("output_id", _STR)] + list(CHAIN))


#: The released dataset with the neural filter's scores (null when no judgments trained it).
SCORED = pa.schema(
    list(AUGMENTED)
    + [
        _f("p_classifier", _F32, nullable=True),  # precision-oriented: positives down-weighted
        _f("r_classifier", _F32, nullable=True),  # recall-oriented: negatives down-weighted
    ]
)


#: A sentence to paraphrase in one iteration, with the negative constraints it must obey.
REQUESTS = pa.schema(
    [
        _f("seed_id", _STR),
        _f("frame", _STR),
        _f("lexical_unit", _STR),
        _f("seed_trigger", _STR),
        _f("iteration", _I32),  # the iteration this request produces
        _f("source_tokens", _TOKENS),
        _f("source_text", _STR),
        _f("source_span_start", _I32),
        _f("source_span_end", _I32),
        _f("constraints", _TOKENS),
        _f("source_frame_elements", FRAME_ELEMENTS, nullable=True),  # the source's, over ``source_tokens``
    ]
)


#: Decoded paraphrases: each request's top beams (or samples).
PARAPHRASES = pa.schema(
    list(REQUESTS)
    + [
        _f("beam_rank", _I32),
        _f("paraphrase_tokens", _TOKENS),
        _f("paraphrase_text", _STR),
        _f("paraphrase_score", _F32),  # length-normalised NLL, lower is better
    ]
)


#: Paraphrases with the aligner's span prediction in each.
ALIGNED = pa.schema(
    list(PARAPHRASES)
    + [
        _f("aligned_start", _I32, nullable=True),
        _f("aligned_end", _I32, nullable=True),
        _f("aligner_score", _F32),
        # Carried, over ``paraphrase_tokens``; null: FEs off, none in the source, or not placed on a
        # beam that selection will not choose (aligner.stage.align_rows).
        _f("frame_elements", FRAME_ELEMENTS, nullable=True),
    ]
)


#: Training examples made by an augmenter (paraphrastic, lexsub, geca) for the Frame ID
#: comparison: one labelled trigger per row. ``seed_key`` names the training sentence the
#: example derives from (``sentence_key``), so an experiment keeps only a sample's examples.
EXAMPLES = pa.schema(
    [
        _f("example_id", _STR),
        _f("augmenter", _STR),
        _f("seed_key", _STR),
        _f("tokens", _TOKENS),
        _f("text", _STR),
        _f("span_start", _I32),  # inclusive token index
        _f("span_end", _I32),  # inclusive token index
        _f("trigger", _STR),
        _f("frame", _STR),
        _f("source_trigger", _STR),  # the trigger it replaces (paraphrastic: the seed's)
        # Over ``tokens``, where the augmenter carries them (paraphrastic: the output's; lexsub: the
        # seed's, moved with the new trigger); null where it does not (GECA) or the seed has none.
        _f("frame_elements", FRAME_ELEMENTS, nullable=True),
    ]
)


SCHEMAS: dict[str, pa.Schema] = {
    "sentences": SENTENCES,
    "chain": CHAIN,
    "augmented": AUGMENTED,
    "scored": SCORED,
    "requests": REQUESTS,
    "paraphrases": PARAPHRASES,
    "aligned": ALIGNED,
    "examples": EXAMPLES,
}


def _check(schema: pa.Schema, actual: pa.Schema, path: Path | str) -> None:
    """Raise unless every field of ``schema`` is in ``actual`` with the same type."""
    for field in schema:
        idx = actual.get_field_index(field.name)
        if idx < 0:
            raise ArtifactError(f"{path}: missing column {field.name!r} ({field.type})")
        got = actual.field(idx).type
        if not got.equals(field.type):
            raise ArtifactError(f"{path}: column {field.name!r} has type {got}, expected {field.type}")


def conform(
    data: pa.Table | pa.RecordBatch, schema: pa.Schema, path: Path | str, offset: int = 0, writing: bool = False
) -> pa.Table:
    """Return ``data`` as a table with exactly ``schema``'s columns, checked for types, nulls and
    meaning (:mod:`spanaug.core.validation`); ``offset`` is its first row's number in the file."""
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    _check(schema, table.schema, path)
    table = table.select(schema.names)
    for field in schema:
        if not field.nullable and table.column(field.name).null_count:
            raise ArtifactError(f"{path}: column {field.name!r} holds nulls but is required")
    table = table.cast(schema)
    validate(table, path, offset, writing)
    return table


def records_to_table(records: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table of ``schema`` from dict rows (missing nullable keys become null)."""
    columns = {f.name: [r.get(f.name) for r in records] for f in schema}
    return pa.Table.from_pydict(columns, schema=schema)


class ArtifactWriter:
    """Streaming, schema-checked Parquet writer; see :func:`open_writer`."""

    def __init__(self, writer: pq.ParquetWriter, schema: pa.Schema, path: Path):
        self._writer = writer
        self.schema = schema
        self.path = path
        self.rows = 0
        #: Metadata known only once the rows are written (:data:`ENGINE_KEY`), added as the file closes.
        self.closing_metadata: dict[str, Mapping[str, Any]] = {}

    def write(self, data: pa.Table | pa.RecordBatch | Sequence[Mapping[str, Any]]) -> None:
        if not isinstance(data, (pa.Table, pa.RecordBatch)):
            if not data:
                return
            data = records_to_table(data, self.schema)
        table = conform(data, self.schema, self.path, self.rows, writing=True)
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows


#: The Parquet metadata key of an artifact's provenance: a JSON object with its ``run`` (the
#: fingerprint of the run's seeds), ``stage``, ``iteration``, ``shard`` and ``n_shards``, where known.
PROVENANCE_KEY = "spanaug.provenance"


def run_id(seed_ids: Iterable[str]) -> str:
    """A run's fingerprint: its seeds' ids (every artifact of the run derives from them)."""
    digest = hashlib.sha256("\n".join(sorted(seed_ids)).encode("utf-8"))
    return digest.hexdigest()[:16]


def read_provenance(path: Path | str) -> dict[str, Any] | None:
    """Where an artifact comes from (:data:`PROVENANCE_KEY`); None for a file without it (written by
    an older spanaug, or by another tool)."""
    return json_metadata(path, read_schema(path).metadata, PROVENANCE_KEY, "provenance")


def json_metadata(
    path: Path | str, metadata: dict[bytes, bytes] | None, key: str, what: str | None = None
) -> dict[str, Any] | None:
    """The JSON object a file's ``metadata`` holds under ``key``; None when it holds none. A value that
    is not a JSON object is an :class:`ArtifactError` naming the file and ``what`` (default: the key)."""
    raw = (metadata or {}).get(key.encode())
    if raw is None:
        return None
    what = what or key
    try:
        value = json.loads(raw)
    except ValueError:
        raise ArtifactError(f"{path}: its {what} metadata is not JSON") from None
    if not isinstance(value, dict):
        raise ArtifactError(f"{path}: its {what} metadata is not a JSON object")
    return value


def derived(
    path: Path | str, stage: str, source: dict[str, Any] | None = None, **changes: Any
) -> dict[str, Any] | None:
    """The provenance of what a stage writes from ``path``: the input's (``source`` when already
    read), with its own stage."""
    source = read_provenance(path) if source is None else source
    return None if source is None else {**source, "stage": stage, **changes}


#: The Parquet metadata key of what scored a file's outputs: a JSON object of
#: :class:`spanaug.core.score_scale.Scorers`'s fields (the aligner's kind and score scale, the
#: paraphraser's backend), on the files that hold aligner scores (aligned, chain, augmented, scored).
#: The named filters read it to bound the aligner score on its own scale.
SCORERS_KEY = "spanaug.scorers"


def read_scorers(path: Path | str) -> dict[str, Any] | None:
    """What scored the file's outputs (:data:`SCORERS_KEY`) as written; None for a file without it."""
    return json_metadata(path, read_schema(path).metadata, SCORERS_KEY)


#: The Parquet metadata key of what decoded or aligned a shard: a JSON object of
#: :class:`spanaug.core.engine.EngineRecord`'s fields (backend, device, dtype, decode path and
#: CUDA-graph counts). Written as the file closes (the counts are known only then), so it is in the
#: file's key-value metadata but not in its Arrow schema's: :func:`read_engine` reads it.
ENGINE_KEY = "spanaug.engine"


def read_engine(path: Path | str) -> dict[str, Any] | None:
    """A shard's engine record (:data:`ENGINE_KEY`) as written; None for a file without it."""
    try:
        metadata = pq.read_metadata(path).metadata
    except _UNREADABLE as exc:
        raise _unreadable(path, exc) from None
    return json_metadata(path, metadata, ENGINE_KEY)


#: The Parquet metadata key of what a file holds, written into every artifact: a JSON object with
#: its ``artifact`` (a key of :data:`SCHEMAS`) and the ``stage`` (the ``spanaug`` command) that wrote
#: it, null outside a command. Columns alone cannot tell an aligned shard from the paraphrases it
#: extends, or the augmented dataset from a chain, so readers check this record.
ARTIFACT_KEY = "spanaug.artifact"

#: Artifacts that serve where another is expected: the scored dataset is the augmented one with
#: the classifiers' columns added, and every reader of the augmented dataset takes it.
SERVES_AS = {"scored": "augmented"}

_stage: contextvars.ContextVar[str | None] = contextvars.ContextVar("spanaug_stage", default=None)


@contextlib.contextmanager
def writing_stage(stage: str) -> Iterator[None]:
    """Within the block, artifacts written record ``stage`` as their writer (the CLI names its command)."""
    token = _stage.set(stage)
    try:
        yield
    finally:
        _stage.reset(token)


def artifact_name(schema: pa.Schema) -> str | None:
    """The :data:`SCHEMAS` key of ``schema`` (fields compared, metadata ignored); None for another."""
    return next((name for name, known in SCHEMAS.items() if schema.equals(known)), None)


def _file_metadata(
    schema: pa.Schema, provenance: Mapping[str, Any] | None, scorers: Mapping[str, Any] | None = None
) -> dict[str, str]:
    metadata = {PROVENANCE_KEY: json.dumps(dict(provenance))} if provenance else {}
    if scorers:
        metadata[SCORERS_KEY] = json.dumps(dict(scorers))
    name = artifact_name(schema)
    if name is not None:
        metadata[ARTIFACT_KEY] = json.dumps({"artifact": name, "stage": _stage.get()})
    return metadata


@contextlib.contextmanager
def open_writer(
    path: Path | str,
    schema: pa.Schema,
    provenance: Mapping[str, Any] | None = None,
    scorers: Mapping[str, Any] | None = None,
) -> Iterator[ArtifactWriter]:
    """Stream batches into ``path``; the file appears (whole) only when the block succeeds. The
    ``provenance`` (see :data:`PROVENANCE_KEY`), what scored its outputs (:data:`SCORERS_KEY`) and
    what the file holds (:data:`ARTIFACT_KEY`) go into the file's metadata."""
    metadata = _file_metadata(schema, provenance, scorers)
    file_schema = schema.with_metadata(metadata) if metadata else schema
    with atomic_path(path, ".parquet") as tmp:
        # Page checksums let a reader tell a file corrupted mid-way from one that holds odd values.
        writer = pq.ParquetWriter(tmp, file_schema, compression="zstd", write_page_checksum=True)
        try:
            out = ArtifactWriter(writer, schema, Path(path))
            yield out
            if out.closing_metadata:
                writer.add_key_value_metadata({k: json.dumps(dict(v)) for k, v in out.closing_metadata.items()})
        finally:
            writer.close()


def write_table(
    data: pa.Table | Sequence[Mapping[str, Any]],
    path: Path | str,
    schema: pa.Schema,
    provenance: Mapping[str, Any] | None = None,
    scorers: Mapping[str, Any] | None = None,
) -> int:
    """Write a whole table atomically; returns the number of rows."""
    with open_writer(path, schema, provenance, scorers) as writer:
        if isinstance(data, pa.Table) or data:
            writer.write(data)
    return writer.rows


#: What pyarrow raises on a file that is not Parquet, or is damaged anywhere in it (a footer, a page
#: that fails to decompress or whose checksum differs); the message never names the file.
_UNREADABLE = (pa.ArrowException, OSError, ValueError)


def _unreadable(path: Path | str, exc: Exception) -> ArtifactError:
    if isinstance(exc, FileNotFoundError):
        return ArtifactError(f"{path}: no such artifact")
    return ArtifactError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})")


def read_schema(path: Path | str) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except _UNREADABLE as exc:
        raise _unreadable(path, exc) from None


def read_artifact_record(path: Path | str, schema: pa.Schema | None = None) -> dict[str, Any] | None:
    """What the file says it holds (:data:`ARTIFACT_KEY`); None for a file without the record
    (written before spanaug kept it, or by another tool). ``schema`` is the file's, when already read."""
    value = json_metadata(path, (read_schema(path) if schema is None else schema).metadata, ARTIFACT_KEY)
    if value is not None and not isinstance(value.get("artifact"), str):
        raise ArtifactError(f"{path}: its {ARTIFACT_KEY} metadata does not name an artifact")
    return value


def _has_fields(actual: pa.Schema, schema: pa.Schema) -> bool:
    return all(actual.get_field_index(f.name) >= 0 and actual.field(f.name).type.equals(f.type) for f in schema)


def columns_kind(actual: pa.Schema) -> str | None:
    """The widest artifact whose every column ``actual`` has: what a file without the record holds."""
    fits = [name for name, known in SCHEMAS.items() if _has_fields(actual, known)]
    return max(fits, key=lambda name: len(SCHEMAS[name]), default=None)


def _serves(held: str | None, expected: str) -> bool:
    return held == expected or SERVES_AS.get(held or "") == expected


def check_artifact(path: Path | str, schema: pa.Schema, actual: pa.Schema) -> None:
    """Raise unless the file ``path`` (its schema ``actual``) holds the artifact ``schema`` is, or
    one that serves as it (:data:`SERVES_AS`). A file without the record is judged by its columns:
    one with every column of a later artifact (an aligned shard given as paraphrases) is refused,
    anything else reads as before."""
    expected = artifact_name(schema)
    if expected is None:  # a reader's own projection: the column checks are all there is
        return
    record = read_artifact_record(path, actual)
    if record is not None:
        if not _serves(record["artifact"], expected):
            stage = f" (stage {record['stage']})" if record.get("stage") else ""
            raise ArtifactError(f"{path}: holds the {record['artifact']!r} artifact{stage}, expected {expected!r}")
        return
    held = columns_kind(actual)
    if held is not None and not _serves(held, expected) and len(SCHEMAS[held]) > len(schema):
        raise ArtifactError(
            f"{path}: has the columns of the {held!r} artifact, expected {expected!r} "
            "(the file does not record its stage: written by another tool or an older spanaug)"
        )


def _checked_schema(path: Path | str, schema: pa.Schema) -> pa.Schema:
    """The file's schema, checked to hold ``schema``'s columns and its artifact. A file that records
    being this artifact but lacks a column was written before the column was added: the error says
    to make it again."""
    actual = read_schema(path)
    try:
        _check(schema, actual, path)
    except ArtifactError as exc:
        record = read_artifact_record(path, actual)
        expected = artifact_name(schema)
        if record is None or expected is None or not _serves(record["artifact"], expected):
            raise
        stage = (
            f" (spanaug {record['stage']}, or Snakemake -R with the rule that writes it)" if record.get("stage") else ""
        )
        raise ArtifactError(f"{exc}: written by an older spanaug; make it again{stage}") from None
    check_artifact(path, schema, actual)
    return actual


def read_table(path: Path | str, schema: pa.Schema) -> pa.Table:
    """Read a whole artifact, checked against ``schema`` and to be that artifact (:func:`check_artifact`)."""
    _checked_schema(path, schema)
    try:
        table = pq.read_table(path, columns=schema.names, page_checksum_verification=True)
    except _UNREADABLE as exc:
        raise _unreadable(path, exc) from None
    return conform(table, schema, path)


def iter_batches(path: Path | str, schema: pa.Schema, batch_size: int = 8192) -> Iterator[pa.Table]:
    """Stream an artifact in checked chunks, so large inputs are never held whole. The file's
    schema and artifact are checked at the call, not at the first chunk."""
    _checked_schema(path, schema)
    return _batches(path, schema, batch_size)


def _batches(path: Path | str, schema: pa.Schema, batch_size: int) -> Iterator[pa.Table]:
    offset = 0
    try:
        batches = pq.ParquetFile(path, page_checksum_verification=True).iter_batches(
            batch_size=batch_size, columns=schema.names
        )
    except _UNREADABLE as exc:
        raise _unreadable(path, exc) from None
    while True:
        try:
            batch = next(batches, None)
        except _UNREADABLE as exc:  # a damaged page deep in the file fails only when it is reached
            raise _unreadable(path, exc) from None
        if batch is None:
            return
        table = conform(batch, schema, path, offset)
        offset += table.num_rows
        yield table


def read_columns(path: Path | str, schema: pa.Schema, columns: Sequence[str]) -> pa.Table:
    """Some columns of an artifact (its schema checked for them, and its artifact), for checks that
    need no more."""
    actual = read_schema(path)
    _check(pa.schema([schema.field(c) for c in columns]), actual, path)
    check_artifact(path, schema, actual)
    try:
        return pq.read_table(path, columns=list(columns), page_checksum_verification=True)
    except _UNREADABLE as exc:
        raise _unreadable(path, exc) from None


def concat_artifacts(
    paths: Iterable[Path | str],
    out: Path | str,
    schema: pa.Schema,
    batch_size: int = 65536,
    provenance: Mapping[str, Any] | None = None,
    scorers: Mapping[str, Any] | None = None,
) -> int:
    """Merge artifacts of one schema into ``out`` chunk by chunk; returns the row count."""
    with open_writer(out, schema, provenance, scorers) as writer:
        for path in paths:
            for table in iter_batches(path, schema, batch_size):
                writer.write(table)
    return writer.rows
