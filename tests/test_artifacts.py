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


def _fe(name, start=None, end=None, null_type=None, coreness=None, score=None):
    return {"name": name, "start": start, "end": end, "null_type": null_type, "coreness": coreness, "score": score}


def test_frame_elements_round_trip_with_null_and_empty_kept_apart(tmp_path):
    path = tmp_path / "s.parquet"
    fes = [_fe("Degree", 0, 0, coreness="Extra-Thematic"), _fe("Exerter", 1, 1), _fe("Place", null_type="INI")]
    rows = [_row(frame_elements=fes), _row(sentence_id="s2", frame_elements=[]), _row(sentence_id="s3")]
    artifacts.write_table(rows, path, artifacts.SENTENCES)
    back = artifacts.read_table(path, artifacts.SENTENCES).column("frame_elements").to_pylist()
    assert back == [fes, [], None]  # an FE may cover the trigger (span [0, 1] here)


@pytest.mark.parametrize(
    "fes, message",
    [
        ([_fe("A", 0, 2)], r"FE 'A' at \[0, 2\] is not inside the 2 tokens of 'tokens'"),
        ([_fe("A", -1, 0)], r"FE 'A' at \[-1, 0\] is not inside"),
        ([_fe("A", 1, 0)], r"FE 'A' at \[1, 0\] is not inside"),
        ([_fe("A", None, 1)], r"FE 'A' at \[None, 1\] is not inside"),
        ([_fe("A", 0, 1), _fe("B", 1, 1)], r"FE 'A' at \[0, 1\] overlaps FE 'B' at \[1, 1\]"),
        ([_fe("B", 1, 1), _fe("C", null_type="CNI"), _fe("A", 0, 1)], r"FE 'A' at \[0, 1\] overlaps FE 'B'"),
        ([_fe(" ", 0, 0)], r"an FE's name is ' ' \(expected a non-blank name\)"),
        ([_fe("\u200b", 0, 0)], r"an FE's name is '\\u200b'"),
        ([_fe(None, 0, 0)], r"an FE's name is None"),
        ([_fe("A", 0, 0, null_type="DNI")], r"FE 'A' is marked DNI but has a span \[0, 0\]"),
        ([_fe("A", null_type="LOST")], r"FE 'A' has null_type 'LOST' \(expected one of CNI, DNI, INI, or null"),
        ([_fe("A", 0, 0, score=1.5)], r"FE 'A' has score 1.5 \(expected 0 <= score <= 1"),
        ([_fe("A", 0, 0, score=float("nan"))], r"FE 'A' has score nan \(expected 0 <= score <= 1"),
        ([_fe("A", null_type="XNI")], r"FE 'A' has null_type 'XNI' \(expected one of CNI, DNI, INI"),
        ([_fe("A", 0, 0, coreness="core")], r"FE 'A' has coreness 'core' \(expected one of Core"),
        ([None], r"an item is null"),
    ],
)
def test_frame_elements_are_checked_naming_file_and_row(tmp_path, fes, message):
    rows = [_row(), _row(sentence_id="s2", frame_elements=fes)]
    with pytest.raises(ArtifactError, match=rf"s\.parquet, row 1: frame_elements: {message}"):
        artifacts.write_table(rows, tmp_path / "s.parquet", artifacts.SENTENCES)


def test_frame_elements_of_requests_index_the_source_tokens(tmp_path):
    request = {
        "seed_id": "s",
        "frame": "F",
        "lexical_unit": "a.v",
        "seed_trigger": "a",
        "iteration": 1,
        "source_tokens": ["a", "b", "c"],
        "source_text": "a b c",
        "source_span_start": 0,
        "source_span_end": 0,
        "constraints": ["a"],
        "source_frame_elements": [_fe("A", 2, 2)],
    }
    artifacts.write_table([request], tmp_path / "r.parquet", artifacts.REQUESTS)
    request["source_frame_elements"] = [_fe("A", 3, 3)]
    with pytest.raises(ArtifactError, match=r"row 0: source_frame_elements: .*3 tokens of 'source_tokens'"):
        artifacts.write_table([request], tmp_path / "r.parquet", artifacts.REQUESTS)


def test_an_artifact_written_before_a_column_was_added_says_to_make_it_again(tmp_path):
    """A file that records being the artifact but lacks a newer column (EXAMPLES before its
    frame_elements) gets an error naming the column and the command that makes it again."""
    import pyarrow.parquet as pq

    row = {"example_id": "lexsub:s1", "augmenter": "lexsub", "seed_key": "ab", "tokens": ["a", "c"], "text": "a c"}
    row |= {"span_start": 1, "span_end": 1, "trigger": "c", "frame": "F", "source_trigger": "b"}
    path = tmp_path / "lexsub.parquet"
    with artifacts.writing_stage("augment lexsub"):
        artifacts.write_table([row], path, artifacts.EXAMPLES)
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["frame_elements"]), path)  # keeps the schema's metadata
    with pytest.raises(
        ArtifactError, match=r"missing column 'frame_elements'.*older spanaug; make it again \(spanaug augment lexsub"
    ):
        artifacts.read_table(path, artifacts.EXAMPLES)
    other = tmp_path / "other.parquet"
    pq.write_table(table.drop_columns(["frame_elements"]).replace_schema_metadata(None), other)
    with pytest.raises(ArtifactError, match="missing column 'frame_elements'") as info:
        artifacts.read_table(other, artifacts.EXAMPLES)
    assert "older spanaug" not in str(info.value)
