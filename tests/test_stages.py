"""Each stage of one iteration on its own: shards in, shard out, checked row by row."""

import importlib.util
import json

import pytest
from conftest import CORPUS, output, save_copy_aligner, seed

from spanaug.core import artifacts
from spanaug.core.config import ConstraintSettings, DecodeSettings
from spanaug.pipeline.constraints import expand_stage
from spanaug.pipeline.iterations import assemble, init_shards, select_stage
from spanaug.pipeline.seeds import shard_of

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def seeds_table(n):
    return [seed(f"s{i}", ["They", "bought", "it", str(i)], 1, 1, "Commerce_buy", "buy.v") for i in range(n)]


def test_init_shards_partitions_the_seeds_stably(tmp_path):
    artifacts.write_table(seeds_table(40), tmp_path / "seeds.parquet", artifacts.SENTENCES)
    paths = [tmp_path / f"shard{j}.parquet" for j in range(3)]
    counts = init_shards(tmp_path / "seeds.parquet", paths)
    shards = [artifacts.read_table(p, artifacts.CHAIN).to_pylist() for p in paths]
    assert counts == [len(s) for s in shards] and sum(counts) == 40
    assert sorted(r["seed_id"] for s in shards for r in s) == sorted(f"s{i}" for i in range(40))
    for j, shard in enumerate(shards):
        assert all(shard_of(r["seed_id"], 3) == j for r in shard)
        # Iteration 0 is the seed itself, its gold span standing as the aligned span.
        assert all((r["iteration"], r["aligned_text"], r["constraints"]) == (0, "bought", []) for r in shard)


def test_expand_stage_turns_outputs_into_requests(tmp_path):
    chain = [
        output("s1", 1, ["He", "purchased", "it"], 1, 1, "Commerce_buy", "buy.v", "purchase"),
        output("s2", 1, ["He", "it"], None, None, "Commerce_buy", "buy.v", None),
    ]
    chain[0]["constraints"] = ["bought"]
    artifacts.write_table(chain, tmp_path / "chain.parquet", artifacts.CHAIN)
    n = expand_stage(tmp_path / "chain.parquet", tmp_path / "req.parquet", 2, ConstraintSettings(case_variants=False))
    rows = artifacts.read_table(tmp_path / "req.parquet", artifacts.REQUESTS).to_pylist()
    assert n == len(rows) == 1  # the unaligned output ends its chain
    row = rows[0]
    assert (row["seed_id"], row["iteration"], row["source_span_start"], row["source_span_end"]) == ("s1", 2, 1, 1)
    assert {"bought", "purchased", "purchase", "purchases"} <= set(row["constraints"])
    assert "Purchased" not in row["constraints"]  # case variants off


def aligned_rows(beams):
    """ALIGNED rows: (seed id, beam rank, aligner score, aligned span) per beam."""
    rows = []
    for sid, rank, score, span in beams:
        tokens = ["They", "acquired", "it", sid]
        rows.append(
            {
                "seed_id": sid,
                "frame": "Commerce_buy",
                "lexical_unit": "buy.v",
                "seed_trigger": "bought",
                "iteration": 1,
                "source_tokens": ["They", "bought", "it"],
                "source_text": "They bought it",
                "source_span_start": 1,
                "source_span_end": 1,
                "constraints": ["bought"],
                "beam_rank": rank,
                "paraphrase_tokens": tokens,
                "paraphrase_text": " ".join(tokens),
                "paraphrase_score": 0.1 * rank,
                "aligned_start": span[0] if span else None,
                "aligned_end": span[1] if span else None,
                "aligner_score": score,
            }
        )
    return rows


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, 100])
def test_select_stage_keeps_the_best_aligned_beam_across_chunks(tmp_path, chunk_rows):
    beams = [
        ("a", 0, 0.2, (1, 1)),
        ("a", 1, 0.9, (1, 2)),
        ("a", 2, 0.9, (0, 0)),  # tie: the better-ranked beam
        ("b", 0, 0.7, None),
        ("b", 1, 0.1, (1, 1)),
        ("c", 0, 0.5, (1, 1)),
    ]
    artifacts.write_table(aligned_rows(beams), tmp_path / "aligned.parquet", artifacts.ALIGNED)
    assert select_stage(tmp_path / "aligned.parquet", tmp_path / "chain.parquet", chunk_rows=chunk_rows) == 3
    rows = {r["seed_id"]: r for r in artifacts.read_table(tmp_path / "chain.parquet", artifacts.CHAIN).to_pylist()}
    assert (rows["a"]["beam_rank"], rows["a"]["aligned_text"], rows["a"]["aligned_lemma"]) == (
        1,
        "acquired it",
        "acquire it",
    )
    assert (rows["b"]["beam_rank"], rows["b"]["aligned_start"], rows["b"]["aligned_text"]) == (0, None, None)
    assert rows["c"]["aligner_score"] == pytest.approx(0.5)


def test_assemble_numbers_the_outputs_and_leaves_the_seeds_out(tmp_path):
    it0 = [output("s1", 0, ["They", "bought", "it"], 1, 1, "F", "buy.v", "buy")]
    it1 = [
        output("s1", 1, ["They", "got", "it"], 1, 1, "F", "buy.v", "get"),
        output("s2", 1, ["x", "y"], None, None, "F", "buy.v", None),
    ]
    artifacts.write_table(it0, tmp_path / "i0.parquet", artifacts.CHAIN)
    artifacts.write_table(it1, tmp_path / "i1.parquet", artifacts.CHAIN)
    assert assemble([tmp_path / "i0.parquet", tmp_path / "i1.parquet"], tmp_path / "aug.parquet") == 2
    rows = artifacts.read_table(tmp_path / "aug.parquet", artifacts.AUGMENTED).to_pylist()
    assert [r["output_id"] for r in rows] == ["s1#1", "s2#1"]


def requests_table(texts, constraints):
    return [
        {
            "seed_id": f"s{i}",
            "frame": "F",
            "lexical_unit": "x.v",
            "seed_trigger": "x",
            "iteration": 1,
            "source_tokens": text.split(),
            "source_text": text,
            "source_span_start": 0,
            "source_span_end": 0,
            "constraints": constraints,
        }
        for i, text in enumerate(texts)
    ]


def test_paraphrase_stage_writes_ranked_beams_and_its_counts(tiny_paraphraser, tmp_path):
    from spanaug.pipeline.constraints import violations
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    artifacts.write_table(requests_table(CORPUS[:4], ["the", "The"]), tmp_path / "req.parquet", artifacts.REQUESTS)
    cfg = DecodeSettings(model=tiny_paraphraser, beam_size=4, return_top=2, max_new_tokens=10, dtype="float32")
    paraphrase_stage(
        tmp_path / "req.parquet",
        tmp_path / "para.parquet",
        cfg,
        "cpu",
        stats_path=tmp_path / "stats.json",
        chunk_rows=3,
    )  # two chunks
    rows = artifacts.read_table(tmp_path / "para.parquet", artifacts.PARAPHRASES).to_pylist()
    counts = json.loads((tmp_path / "stats.json").read_text())
    assert counts["requests"] == 4 and counts["outputs"] == len(rows) > 0
    by_seed = {}
    for row in rows:
        by_seed.setdefault(row["seed_id"], []).append(row)
        assert violations(row["paraphrase_text"], row["constraints"]) == []
        assert row["source_text"] in CORPUS[:4] and row["paraphrase_tokens"]
    assert counts["requests_without_output"] == 4 - len(by_seed)
    for beams in by_seed.values():
        assert [b["beam_rank"] for b in beams] == list(range(len(beams))) and len(beams) <= 2
        assert [b["paraphrase_score"] for b in beams] == sorted(b["paraphrase_score"] for b in beams)


def write_paraphrases(beams, path):
    """A PARAPHRASES file of ``beams`` (as :func:`aligned_rows` takes them), not aligned yet."""
    rows = aligned_rows(beams)
    for row in rows:
        for key in ("aligned_start", "aligned_end", "aligner_score"):
            del row[key]
    artifacts.write_table(rows, path, artifacts.PARAPHRASES)


@pytest.mark.parametrize(
    ("backend", "dtype", "path"),
    [
        ("hf", "float32", "eager"),
        ("ct2", "float32", "eager"),
        ("static", "float32", "eager"),
        ("auto", "auto", "eager"),
    ],
)
def test_a_paraphrase_shard_records_what_decoded_it(tiny_paraphraser, tmp_path, backend, dtype, path):
    """The stats JSON names the backend, the device, the dtype and the decode path (with the CUDA
    graphs' counts), and the Parquet file's metadata holds the same record (on the CPU: no graphs)."""
    if backend == "ct2":
        pytest.importorskip("ctranslate2")
    from spanaug.core.engine import EngineRecord
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    artifacts.write_table(requests_table(CORPUS[:3], ["the"]), tmp_path / "req.parquet", artifacts.REQUESTS)
    cfg = DecodeSettings(
        model=tiny_paraphraser, backend=backend, beam_size=3, return_top=2, max_new_tokens=6, dtype=dtype
    )
    paraphrase_stage(tmp_path / "req.parquet", tmp_path / "para.parquet", cfg, "cpu", stats_path=tmp_path / "s.json")
    stats = json.loads((tmp_path / "s.json").read_text())
    resolved = {"auto": "ct2" if importlib.util.find_spec("ctranslate2") else "hf"}.get(backend, backend)
    assert stats["backend"] == resolved and stats["device"].startswith("CPU, ")
    assert (stats["dtype"], stats["decode_path"]) == ("float32", path)
    assert (stats["cuda_graph_captures"], stats["cuda_graph_fallbacks"]) == (0, 0)
    assert stats["requests"] == 3
    record = EngineRecord.read(stats, tmp_path / "s.json")
    assert EngineRecord.read(artifacts.read_engine(tmp_path / "para.parquet"), "para") == record
    assert artifacts.read_table(tmp_path / "para.parquet", artifacts.PARAPHRASES).num_rows == stats["outputs"]


def test_an_engine_record_is_checked_when_written_and_read():
    from spanaug.core.engine import EngineRecord
    from spanaug.core.errors import InputError

    good = EngineRecord("static", "NVIDIA H200", "bfloat16", "graphs", 12, 0)
    assert EngineRecord.read(good.as_dict(), "s.json") == good
    assert EngineRecord.read({"requests": 3}, "s.json") is None  # written before the record existed
    assert good.describe() == "static on NVIDIA H200, bfloat16, graphs (12 captures, 0 fallbacks)"
    for bad in ({"decode_path": "warp"}, {"cuda_graph_captures": -1}, {"device": ""}, {"decode_path": "fallback"}):
        with pytest.raises(InputError, match=r"^s\.json: its engine record is malformed: "):
            EngineRecord.read({**good.as_dict(), **bad}, "s.json")
        with pytest.raises(ValueError):
            EngineRecord(**{**good.as_dict(), **bad})


def test_align_stage_predicts_a_span_inside_every_beam(tiny_encoder, tmp_path):
    from spanaug.pipeline.aligner.stage import align_stage

    save_copy_aligner(tiny_encoder, tmp_path / "aligner", pairs=60, epochs=2)
    write_paraphrases([("a", 0, 0.0, None), ("a", 1, 0.0, None), ("b", 0, 0.0, None)], tmp_path / "para.parquet")
    assert align_stage(tmp_path / "aligner", tmp_path / "para.parquet", tmp_path / "aligned.parquet", device="cpu") == 3
    out = artifacts.read_table(tmp_path / "aligned.parquet", artifacts.ALIGNED).to_pylist()
    assert [(r["seed_id"], r["beam_rank"]) for r in out] == [("a", 0), ("a", 1), ("b", 0)]
    for r in out:
        assert 0.0 <= r["aligner_score"] <= 1.0
        if r["aligned_start"] is not None:
            assert 0 <= r["aligned_start"] <= r["aligned_end"] < len(r["paraphrase_tokens"])
            # k = 2 around a one-token source span: at most three tokens.
            assert r["aligned_end"] - r["aligned_start"] <= 2
    assert json.dumps(out)  # plain values, no numpy scalars
    engine = artifacts.read_engine(tmp_path / "aligned.parquet")
    assert engine["backend"].endswith(" aligner") and engine["device"].startswith("CPU, ")
    assert (engine["dtype"], engine["decode_path"]) == ("float32", "eager")
    # The paper kind scores on the paper's raw scale; the paraphrases record no engine here.
    assert artifacts.read_scorers(tmp_path / "aligned.parquet") == {
        "aligner_kind": "paper",
        "aligner_scale": "raw",
        "paraphraser": None,
    }


def test_seed_frame_elements_reach_iteration_0_the_requests_and_the_outputs(tmp_path):
    """The seeds' FEs go into iteration 0 and, as the source's, into iteration 1's requests; select
    carries each beam's placed FEs into the outputs (here: the beams hold none, null, never [])."""
    fes = [
        {"name": "Buyer", "start": 0, "end": 0, "null_type": None, "coreness": "Core", "score": None},
        {"name": "Seller", "start": None, "end": None, "null_type": "INI", "coreness": "Core", "score": None},
    ]
    seeds = seeds_table(2)
    seeds[0]["frame_elements"] = fes
    artifacts.write_table(seeds, tmp_path / "seeds.parquet", artifacts.SENTENCES)
    init_shards(tmp_path / "seeds.parquet", [tmp_path / "chain0.parquet"])
    chain = {r["seed_id"]: r for r in artifacts.read_table(tmp_path / "chain0.parquet", artifacts.CHAIN).to_pylist()}
    assert chain["s0"]["frame_elements"] == fes and chain["s1"]["frame_elements"] is None
    expand_stage(tmp_path / "chain0.parquet", tmp_path / "req.parquet", 1, ConstraintSettings())
    requests = artifacts.read_table(tmp_path / "req.parquet", artifacts.REQUESTS).to_pylist()
    assert {r["seed_id"]: r["source_frame_elements"] for r in requests} == {"s0": fes, "s1": None}
    aligned = [
        {
            **r,
            "beam_rank": 0,
            "paraphrase_tokens": ["They", "purchased", "it"],
            "paraphrase_text": "They purchased it",
            "paraphrase_score": 0.5,
            "aligned_start": 1,
            "aligned_end": 1,
            "aligner_score": 0.9,
        }
        for r in requests
    ]
    artifacts.write_table(aligned, tmp_path / "aligned.parquet", artifacts.ALIGNED)
    select_stage(tmp_path / "aligned.parquet", tmp_path / "chain1.parquet")
    outputs = artifacts.read_table(tmp_path / "chain1.parquet", artifacts.CHAIN).to_pylist()
    assert len(outputs) == 2 and all(r["frame_elements"] is None for r in outputs)
    carried = [{**fes[0], "score": 0.5}, fes[1]]  # exact in float32
    aligned[0]["frame_elements"] = carried
    artifacts.write_table(aligned, tmp_path / "aligned.parquet", artifacts.ALIGNED)
    select_stage(tmp_path / "aligned.parquet", tmp_path / "chain1.parquet")
    outputs = artifacts.read_table(tmp_path / "chain1.parquet", artifacts.CHAIN).to_pylist()
    assert {r["seed_id"]: r["frame_elements"] for r in outputs} == {"s0": carried, "s1": None}
