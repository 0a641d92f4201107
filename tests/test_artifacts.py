import pyarrow as pa
import pytest

from spanaug.core import artifacts
from spanaug.core.errors import ArtifactError


def _row(**kw):
    row = {
        "sentence_id": "s1",
        "tokens": ["a", "b"],
        "text": "a b",
        "span_start": 0,
        "span_end": 1,
        "frame": "F",
        "lexical_unit": "a.v",
        "source": "test",
        "corpus_part": "jsonl",
        "order": 0,
    }
    row.update(kw)
    return row


def test_round_trip_keeps_schema(tmp_path):
    path = tmp_path / "s.parquet"
    assert artifacts.write_table([_row(), _row(sentence_id="s2")], path, artifacts.SENTENCES) == 2
    table = artifacts.read_table(path, artifacts.SENTENCES)
    assert table.schema.equals(artifacts.SENTENCES)
    assert table.column("sentence_id").to_pylist() == ["s1", "s2"]


def test_read_rejects_wrong_type_naming_file(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"sentence_id": [1]}), path)
    with pytest.raises(ArtifactError, match=r"bad\.parquet.*sentence_id"):
        artifacts.read_table(path, artifacts.SENTENCES)


def test_failed_write_leaves_previous_file_intact(tmp_path):
    path = tmp_path / "s.parquet"
    artifacts.write_table([_row()], path, artifacts.SENTENCES)
    with pytest.raises(ArtifactError):
        artifacts.write_table([_row(frame=None)], path, artifacts.SENTENCES)
    assert artifacts.read_table(path, artifacts.SENTENCES).num_rows == 1
    assert [p.name for p in tmp_path.iterdir()] == ["s.parquet"]  # no temporary left behind


def test_streaming_concat(tmp_path):
    paths = []
    for k in range(3):
        p = tmp_path / f"{k}.parquet"
        artifacts.write_table([_row(sentence_id=f"s{k}-{i}") for i in range(5)], p, artifacts.SENTENCES)
        paths.append(p)
    out = tmp_path / "all.parquet"
    assert artifacts.concat_artifacts(paths, out, artifacts.SENTENCES, batch_size=2) == 15
    merged = artifacts.read_table(out, artifacts.SENTENCES).column("sentence_id").to_pylist()
    assert merged == [f"s{k}-{i}" for k in range(3) for i in range(5)]
