"""Frame elements across a paraphrase: the placement rules, the align stage's two modes and selection."""

import itertools
import json

import pytest
from conftest import copy_task

from spanaug.core import artifacts
from spanaug.core.aligner_settings import AlignerConfig, AlignerTrainSettings
from spanaug.core.config import FrameElementSettings
from spanaug.core.validation import LOST
from spanaug.pipeline import frame_elements as fer

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def fe(name, start=None, end=None, null_type=None, coreness=None, score=None):
    return {"name": name, "start": start, "end": end, "null_type": null_type, "coreness": coreness, "score": score}


# ---------------------------------------------------------------- the rules


def test_substituting_the_trigger_moves_and_stretches_fes_and_loses_those_inside_it():
    """Trigger [2, 3] ("gave up") replaced by one word: FEs before stay, after move left by one, one
    covering the trigger shrinks with it, one that is the trigger follows it, a piece of it is lost."""
    fes = [
        fe("Agent", 0, 1, coreness="Core"),
        fe("Activity", 4, 5, coreness="Core"),
        fe("Time", null_type="INI"),
        fe("Whole", 2, 5),
        fe("Self", 2, 3),
        fe("Piece", 3, 3),
        fe("Edge", 3, 4),
    ]
    out = {f["name"]: f for f in fer.substituted(fes, (2, 3), 1)}
    spans = {name: (f["start"], f["end"]) for name, f in out.items()}
    assert spans == {
        "Agent": (0, 1),
        "Activity": (3, 4),
        "Time": (None, None),
        "Whole": (2, 4),
        "Self": (2, 2),
        "Piece": (None, None),
        "Edge": (None, None),
    }
    assert out["Piece"]["null_type"] == out["Edge"]["null_type"] == LOST
    assert out["Time"]["null_type"] == "INI" and out["Agent"]["coreness"] == "Core"
    longer = {f["name"]: (f["start"], f["end"]) for f in fer.substituted(fes[:2], (2, 3), 3)}
    assert longer == {"Agent": (0, 1), "Activity": (5, 6)}
    assert fer.substituted(None, (2, 3), 1) is None


@pytest.mark.parametrize(
    "span, trigger, expected",
    [
        ((0, 1), (3, 3), "disjoint"),
        ((4, 6), (3, 3), "disjoint"),
        ((3, 3), (3, 3), "equal"),
        ((3, 3), (2, 4), "inside"),
        ((1, 5), (3, 3), "contains"),
        ((2, 3), (3, 4), "partial"),
    ],
)
def test_relation_to_the_trigger(span, trigger, expected):
    assert fer.relation(span, trigger) == expected


def test_the_best_consistent_placement_wins_not_the_first_come():
    """Greedy would give A its best span (0.9) and leave B nothing; the search finds A's second and
    B's first, 0.8 + 0.85 > 0.9."""
    fes = [fe("A", 0, 1), fe("B", 5, 6)]
    candidates = {0: [((0, 2), 0.9), ((0, 1), 0.8)], 1: [((2, 3), 0.85)]}
    out = fer.place(fes, (3, 3), (4, 4), 0.7, candidates)
    assert [(f["name"], f["start"], f["end"], f["score"]) for f in out] == [
        ("A", 0, 1, pytest.approx(0.8)),
        ("B", 2, 3, pytest.approx(0.85)),
    ]


def test_placement_keeps_each_fe_on_its_side_of_the_trigger():
    """A disjoint FE may not take a span over the aligned trigger, however well it scores; an FE
    inside a multi-word trigger stays inside it; with no candidate left it is LOST."""
    fes = [fe("Apart", 0, 0, coreness="Core"), fe("In", 3, 3), fe("Gone", 6, 6)]
    candidates = {0: [((4, 5), 0.99), ((1, 1), 0.5)], 1: [((0, 0), 0.9), ((5, 5), 0.6)], 2: [((4, 4), 0.95)]}
    out = fer.place(fes, (2, 4), (4, 5), 0.8, candidates)
    assert [(f["name"], f["start"], f["end"], f["null_type"]) for f in out] == [
        ("Apart", 1, 1, None),
        ("In", 5, 5, None),
        ("Gone", None, None, LOST),
    ]
    assert out[0]["coreness"] == "Core" and out[2]["score"] is None


def test_an_fe_that_is_the_trigger_follows_it_and_null_instantiations_pass():
    fes = [fe("Degree", 2, 2, coreness="Extra-Thematic"), fe("Place", null_type="INI"), fe("Old", null_type=LOST)]
    out = fer.place(fes, (2, 2), (5, 6), 0.75, {})
    assert out[0] == fe("Degree", 5, 6, coreness="Extra-Thematic", score=0.75)
    assert out[1] == fes[1] and out[2] == fes[2]
    # No aligned trigger: nothing to anchor the FEs, every overt one is lost.
    lost = fer.place([fe("A", 0, 0), fe("B", 2, 2)], (2, 2), None, 0.1, {0: [((0, 0), 0.9)]})
    assert [f["null_type"] for f in lost] == [LOST, LOST]
    assert fer.place(None, (2, 2), (2, 2), 0.5, {}) is None


def test_placed_fes_never_overlap_whatever_the_candidates():
    """Every FE's candidates piled on the same few tokens: the result is still a valid annotation."""
    fes = [fe(f"F{n}", n, n) for n in range(6)]
    candidates = {n: [((a, b), 0.9 - 0.01 * a) for a in range(3) for b in range(a, 3)] for n in range(6)}
    out = fer.place(fes, (8, 8), (8, 8), 0.9, candidates)
    spans = sorted((f["start"], f["end"]) for f in out if f["null_type"] is None)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    assert len(spans) == 3  # three tokens, at most three FEs
    assert sum(f["null_type"] == LOST for f in out) == 3


def test_a_search_cut_short_still_returns_a_consistent_placement(monkeypatch):
    monkeypatch.setattr(fer, "MAX_NODES", 5)
    fes = [fe(f"F{n}", n, n) for n in range(8)]
    candidates = {n: [((a, a), 0.5 + 0.01 * n) for a in range(10, 20)] for n in range(8)}
    out = fer.place(fes, (9, 9), (9, 9), 0.9, candidates)
    spans = [(f["start"], f["end"]) for f in out if f["null_type"] is None]
    assert len(set(spans)) == len(spans) == 8  # the greedy path, found first, places every FE apart


def test_verbatim_candidates_match_words_and_a_first_letter_case():
    source = ["The", "old", "man", "bought", "a", "car"]
    assert fer.verbatim_candidates(source, (4, 5), ["A", "car", "was", "purchased", "by", "him"]) == [((0, 1), 1.0)]
    # Two places: the one at the same relative position first.
    assert fer.verbatim_candidates(source, (5, 5), ["car", "and", "the", "car"]) == [((3, 3), 1.0), ((0, 0), 1.0)]
    assert fer.verbatim_candidates(source, (1, 2), ["an", "old", "men"]) == []


def test_joint_score_requirements_and_lowest_score():
    kept = [fe("A", 0, 0, coreness="Core", score=0.5), fe("B", null_type="INI")]
    lost_core = [fe("A", null_type=LOST, coreness="Core"), fe("T", 1, 1, coreness="Peripheral", score=0.9)]
    lost_peripheral = [fe("A", 0, 0, score=0.8, coreness="Core"), fe("T", null_type=LOST, coreness="Peripheral")]
    assert fer.joint_score(0.9, kept) == pytest.approx(0.7)
    assert fer.joint_score(0.9, lost_core) == pytest.approx(0.6)
    assert fer.joint_score(0.9, None) == pytest.approx(0.9)
    assert [fer.meets(f, "core") for f in (kept, lost_core, lost_peripheral)] == [True, False, True]
    assert [fer.meets(f, "all") for f in (kept, lost_core, lost_peripheral)] == [True, False, False]
    assert fer.meets(lost_core, "none") and fer.meets(None, "all")
    # Unknown coreness (CoNLL input) counts as core.
    assert not fer.meets([fe("X", null_type=LOST)], "core")
    assert fer.lowest_score(lost_core) == 0.0 and fer.lowest_score(kept) == 0.5
    assert fer.lowest_score([fe("B", null_type="INI")]) is None


# ---------------------------------------------------------------- the stages


SOURCE = ["Abby", "bought", "a", "car", "from", "Robin"]
SOURCE_FES = [
    fe("Buyer", 0, 0, coreness="Core"),
    fe("Goods", 2, 3, coreness="Core"),
    fe("Seller", 4, 5, coreness="Core"),
    fe("Time", null_type="INI", coreness="Peripheral"),
]


def paraphrase_rows(beams):
    """PARAPHRASES rows of one request (the sentence above, trigger 'bought'), one per beam's tokens."""
    return [
        {
            "seed_id": "s1",
            "frame": "Commerce_buy",
            "lexical_unit": "buy.v",
            "seed_trigger": "bought",
            "iteration": 1,
            "source_tokens": SOURCE,
            "source_text": " ".join(SOURCE),
            "source_span_start": 1,
            "source_span_end": 1,
            "constraints": ["bought"],
            "source_frame_elements": SOURCE_FES,
            "beam_rank": rank,
            "paraphrase_tokens": tokens,
            "paraphrase_text": " ".join(tokens),
            "paraphrase_score": 0.1 * rank,
        }
        for rank, tokens in enumerate(beams)
    ]


@pytest.fixture(scope="module")
def copy_aligner(tiny_encoder, tmp_path_factory):
    """A paper-kind aligner trained to copy spans (identity pairs), saved."""
    from spanaug.pipeline.aligner.training import train_aligner

    aligner, _ = train_aligner(
        copy_task(80, 0),
        AlignerConfig(encoder=tiny_encoder, k=2, hidden=16),
        AlignerTrainSettings(epochs=3),
        device="cpu",
        progress=False,
    )
    out = tmp_path_factory.mktemp("fe_aligner") / "aligner"
    aligner.save_pretrained(out)
    return out


def run_align(aligner_dir, tmp_path, beams, settings):
    from spanaug.pipeline.aligner.stage import align_stage

    artifacts.write_table(paraphrase_rows(beams), tmp_path / "p.parquet", artifacts.PARAPHRASES)
    align_stage(
        aligner_dir,
        tmp_path / "p.parquet",
        tmp_path / "a.parquet",
        settings,
        device="cpu",
        stats_path=tmp_path / "s.json",
    )
    rows = artifacts.read_table(tmp_path / "a.parquet", artifacts.ALIGNED).to_pylist()
    return rows, json.loads((tmp_path / "s.json").read_text())


def test_align_mode_places_every_fe_of_every_beam_validly(copy_aligner, tmp_path):
    beams = [SOURCE, ["Robin", "sold", "a", "car", "to", "Abby"], ["Abby", "got", "it"]]
    rows, stats = run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="align"))
    assert len(rows) == 3 and stats["beams_with_frame_elements"] == 3
    assert stats["frame_elements_to_carry"] == 9
    assert stats["frame_elements_carried"] + stats["frame_elements_lost"] == 9
    for row in rows:
        fes = row["frame_elements"]
        assert [f["name"] for f in fes] == ["Buyer", "Goods", "Seller", "Time"]
        assert fes[3] == SOURCE_FES[3] and all(f["coreness"] == "Core" for f in fes[:3])
        for f in fes[:3]:
            assert (f["null_type"] is None) == (f["start"] is not None) and f["null_type"] in (None, LOST)
            if f["start"] is not None:
                assert 0 <= f["score"] <= 1
                if row["aligned_start"] is not None:  # apart from the trigger, as in the source
                    assert (
                        fer.relation((f["start"], f["end"]), (row["aligned_start"], row["aligned_end"])) == "disjoint"
                    )
    # The stage writes valid artifacts: its own read-back checked every span and overlap.


def test_align_mode_costs_one_aligner_call_and_off_mode_carries_nothing(copy_aligner, tmp_path, monkeypatch):
    from spanaug.pipeline.aligner import model

    calls = []
    original = model.SpanAligner.predict_candidates

    def counted(self, instances, *args, **kwargs):
        calls.append(len(instances))
        return original(self, instances, *args, **kwargs)

    monkeypatch.setattr(model.SpanAligner, "predict_candidates", counted)
    encoded = []
    original_encode = model.SpanAligner.encode_pairs
    monkeypatch.setattr(
        model.SpanAligner,
        "encode_pairs",
        lambda self, pairs, *a, **k: encoded.extend(pairs) or original_encode(self, pairs, *a, **k),
    )
    beams = [SOURCE, ["Robin", "sold", "a", "car", "to", "Abby"]]
    run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="align"))
    assert calls == [2 * 4]  # per beam: the trigger and three overt FEs, in one call
    assert len(encoded) == 2  # each sentence pair encoded once for its trigger and FEs
    rows, stats = run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="off"))
    assert all(r["frame_elements"] is None for r in rows) and "frame_elements_to_carry" not in stats


def test_the_trigger_is_aligned_alike_with_fes_on_and_off(copy_aligner, tmp_path):
    beams = [SOURCE, ["Robin", "sold", "a", "car", "to", "Abby"], ["Abby", "got", "it"]]
    on, _ = run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="align"))
    off, _ = run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="off"))
    assert [(r["aligned_start"], r["aligned_end"]) for r in on] == [(r["aligned_start"], r["aligned_end"]) for r in off]
    # The FEs' instances share the trigger's scoring batches, whose shapes change the float sums' order.
    assert [r["aligner_score"] for r in on] == pytest.approx([r["aligner_score"] for r in off], abs=1e-5)


@pytest.fixture(scope="module")
def cross_copy_aligner(tiny_encoder, tmp_path_factory):
    """A cross-kind aligner (one encoder pass per span) trained to copy spans, saved."""
    import torch

    from spanaug.core.aligner_settings import CrossAlignerConfig, CrossTrainSettings
    from spanaug.pipeline.aligner.cross_training import train_cross_aligner

    torch.manual_seed(0)
    aligner, _ = train_cross_aligner(
        copy_task(200, 0),
        CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=32),
        CrossTrainSettings(epochs=4, learning_rate=1e-3),
        device="cpu",
        progress=False,
    )
    out = tmp_path_factory.mktemp("fe_cross_aligner") / "aligner"
    aligner.save_pretrained(out)
    return out


TWO_REQUESTS = [SOURCE, ["Robin", "sold", "a", "car", "to", "Abby"], ["Abby", "got", "it"]]


def two_requests():
    """PARAPHRASES rows of two requests of three beams each (s1 and a copy of it, s2, beams reordered)."""
    first = paraphrase_rows(TWO_REQUESTS)
    second = [{**row, "seed_id": "s2"} for row in paraphrase_rows(TWO_REQUESTS[::-1])]
    return first + second


def aligned_and_chosen(aligner_dir, folder, settings, chunk_rows=4096):
    """The align stage over :func:`two_requests` and the select stage after it: (ALIGNED rows, the
    align stage's statistics, CHAIN rows)."""
    from spanaug.pipeline.aligner.stage import align_stage
    from spanaug.pipeline.iterations import select_stage

    folder.mkdir()
    artifacts.write_table(two_requests(), folder / "p.parquet", artifacts.PARAPHRASES)
    align_stage(
        aligner_dir,
        folder / "p.parquet",
        folder / "a.parquet",
        settings,
        device="cpu",
        chunk_rows=chunk_rows,
        stats_path=folder / "s.json",
    )
    select_stage(folder / "a.parquet", folder / "c.parquet", settings)
    aligned = artifacts.read_table(folder / "a.parquet", artifacts.ALIGNED).to_pylist()
    chain = artifacts.read_table(folder / "c.parquet", artifacts.CHAIN).to_pylist()
    return aligned, json.loads((folder / "s.json").read_text()), chain


def same_chain(a, b):
    """Two CHAIN tables alike: the same beams, spans and FE placements, scores within float noise
    (the instances of one aligner call share batches, whose shapes change the sums' order)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for key in ("seed_id", "beam_rank", "aligned_start", "aligned_end", "paraphrase_tokens"):
            assert x[key] == y[key], key
        assert x["aligner_score"] == pytest.approx(y["aligner_score"], abs=1e-5)
        drop = lambda fes: [{k: v for k, v in f.items() if k != "score"} for f in fes]  # noqa: E731
        assert drop(x["frame_elements"]) == drop(y["frame_elements"])


def count_cross_instances(monkeypatch):
    """The number of instances in each call of the cross aligner's ``predict_candidates``."""
    from spanaug.pipeline.aligner.cross_model import CrossAligner

    calls = []
    original = CrossAligner.predict_candidates

    def counted(self, instances, *args, **kwargs):
        calls.append(len(instances))
        return original(self, instances, *args, **kwargs)

    monkeypatch.setattr(CrossAligner, "predict_candidates", counted)
    return calls


def test_a_cross_aligner_places_the_fes_of_the_chosen_beams_alone(cross_copy_aligner, tmp_path, monkeypatch):
    """Selection by the trigger's score reads no other beam's FEs: the cross kind, which encodes
    every span, aligns the triggers, then places the chosen beams' FEs alone; the chain is the one
    placing every beam's FEs makes, for 6 + 6 instances instead of 6 x 4."""
    from spanaug.pipeline.aligner.cross_model import CrossAligner
    from spanaug.pipeline.iterations import best_beams

    calls = count_cross_instances(monkeypatch)
    settings = FrameElementSettings(mode="align")
    aligned, stats, chain = aligned_and_chosen(cross_copy_aligner, tmp_path / "chosen", settings)
    assert calls == [6, 2 * 3]  # the six beams' triggers; the two chosen beams' three overt FEs each
    chosen = {(r["seed_id"], r["beam_rank"]) for r in best_beams(aligned, settings)}
    assert len(chosen) == 2
    assert [r["frame_elements"] is not None for r in aligned] == [
        (r["seed_id"], r["beam_rank"]) in chosen for r in aligned
    ]
    assert stats["frame_elements_placed_on"] == "chosen beams"
    assert stats["beams_with_frame_elements"] == 2 and stats["frame_elements_to_carry"] == 6
    assert all(r["frame_elements"] for r in chain)

    calls.clear()
    monkeypatch.setattr(CrossAligner, "encodes_each_span", False)  # as if a pair's encoding served its spans
    every, every_stats, every_chain = aligned_and_chosen(cross_copy_aligner, tmp_path / "every", settings)
    assert calls == [6 * 4]
    assert all(r["frame_elements"] is not None for r in every)
    assert every_stats["frame_elements_placed_on"] == "every beam" and every_stats["beams_with_frame_elements"] == 6
    same_chain(chain, every_chain)


def test_a_request_split_between_chunks_keeps_its_chosen_beam(cross_copy_aligner, tmp_path):
    """The stage aligns a chunk of rows at a time; a request whose beams straddle two chunks has a
    chosen beam placed in each, and select takes the better one: the chain is unchanged."""
    settings = FrameElementSettings(mode="align")
    _, _, whole = aligned_and_chosen(cross_copy_aligner, tmp_path / "whole", settings)
    for chunk_rows in (1, 2, 4):
        _, _, split = aligned_and_chosen(cross_copy_aligner, tmp_path / f"chunks{chunk_rows}", settings, chunk_rows)
        same_chain(whole, split)


@pytest.mark.parametrize("settings", [{"select": "joint"}, {"require": "core"}, {"require": "all"}])
def test_selection_that_reads_fes_has_every_beams_fes_placed(cross_copy_aligner, tmp_path, monkeypatch, settings):
    calls = count_cross_instances(monkeypatch)
    aligned, stats, _ = aligned_and_chosen(
        cross_copy_aligner, tmp_path / "a", FrameElementSettings(mode="align", **settings)
    )
    assert calls == [6 * 4] and all(r["frame_elements"] is not None for r in aligned)
    assert stats["frame_elements_placed_on"] == "every beam"


def test_keep_mode_finds_fes_by_their_words():
    from spanaug.pipeline.aligner.stage import carry

    moved = ["From", "Robin", ",", "Abby", "got", "a", "car"]
    row = {**paraphrase_rows([moved])[0], "aligned_start": 4, "aligned_end": 4, "aligner_score": 0.6}
    out = {f["name"]: (f["start"], f["end"], f["null_type"], f["score"]) for f in carry(row, None)}
    # "from Robin" became "From Robin" (a first letter's case) and "a car" moved: both found.
    assert out == {
        "Buyer": (3, 3, None, 1.0),
        "Goods": (5, 6, None, 1.0),
        "Seller": (0, 1, None, 1.0),
        "Time": (None, None, "INI", None),
    }
    # Words rewritten: lost. Words over the aligned trigger: lost too (Buyer stood apart from it).
    row = {
        **paraphrase_rows([["Abby", "got", "one", "car"]])[0],
        "aligned_start": 0,
        "aligned_end": 1,
        "aligner_score": 0.6,
    }
    assert [f["null_type"] for f in carry(row, None)] == [LOST, LOST, LOST, "INI"]


def test_keep_mode_stage_counts_what_it_found(copy_aligner, tmp_path):
    beams = [["Abby", "purchased", "a", "car", "from", "Robin"], ["Abby", "got", "one", "vehicle"]]
    rows, stats = run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="keep"))
    found = [sum(f["null_type"] is None for f in r["frame_elements"]) for r in rows]
    assert stats["frame_elements_carried"] == sum(found) and stats["frame_elements_lost"] == 6 - sum(found)
    assert found[1] <= 1  # only "Abby" occurs in the second beam
    assert all(f["score"] == 1.0 for r in rows for f in r["frame_elements"] if f["null_type"] is None)


def aligned_beam(rank, trigger_score, fes):
    row = paraphrase_rows([SOURCE])[0]
    return {
        **row,
        "beam_rank": rank,
        "aligned_start": 1,
        "aligned_end": 1,
        "aligner_score": trigger_score,
        "frame_elements": fes,
    }


def test_select_weighs_and_requires_fes(tmp_path):
    from spanaug.pipeline.iterations import select_stage

    all_kept = [fe("Buyer", 0, 0, coreness="Core", score=0.9), fe("Goods", 2, 3, coreness="Core", score=0.8)]
    core_lost = [fe("Buyer", 0, 0, coreness="Core", score=0.9), fe("Goods", null_type=LOST, coreness="Core")]
    beams = [aligned_beam(0, 0.95, core_lost), aligned_beam(1, 0.7, all_kept)]
    artifacts.write_table(beams, tmp_path / "a.parquet", artifacts.ALIGNED)

    def chosen(**settings):
        select_stage(
            tmp_path / "a.parquet", tmp_path / "c.parquet", FrameElementSettings(**settings), tmp_path / "s.json"
        )
        rows = artifacts.read_table(tmp_path / "c.parquet", artifacts.CHAIN).to_pylist()
        return [r["beam_rank"] for r in rows], json.loads((tmp_path / "s.json").read_text())

    assert chosen()[0] == [0]  # the trigger's score alone
    assert chosen(select="joint")[0] == [1]  # (0.95 + 0.9 + 0) / 3 < (0.7 + 0.9 + 0.8) / 3
    ranks, stats = chosen(require="core")
    assert ranks == [1] and stats["outputs_keeping_every_frame_element"] == 1
    # Only the beam losing a core FE: require ends the chain, and says so.
    artifacts.write_table(beams[:1], tmp_path / "a.parquet", artifacts.ALIGNED)
    ranks, stats = chosen(require="core")
    assert ranks == [] and stats == {
        "requests": 1,
        "outputs": 0,
        "ended_by_require": 1,
        "outputs_with_frame_elements": 0,
        "outputs_keeping_every_frame_element": 0,
    }
    out = artifacts.read_table(tmp_path / "c.parquet", artifacts.CHAIN)
    assert out.num_rows == 0


def test_a_lost_fe_is_refused_in_an_import_but_carried_in_outputs(tmp_path):
    from conftest import seed

    from spanaug.core.errors import ArtifactError

    row = seed("s1", ["a", "b"], 0, 0, "F", "a.v")
    row["frame_elements"] = [fe("X", null_type=LOST)]
    with pytest.raises(ArtifactError, match="null_type 'LOST'"):
        artifacts.write_table([row], tmp_path / "s.parquet", artifacts.SENTENCES)
    artifacts.write_table([aligned_beam(0, 0.5, [fe("X", null_type=LOST)])], tmp_path / "a.parquet", artifacts.ALIGNED)


@pytest.mark.parametrize("kind", ["paper", "cross"])
def test_a_span_longer_than_the_output_by_more_than_k_has_no_candidate(tiny_encoder, kind):
    """A long FE in a short paraphrase: no candidate length fits the window (it once crashed the stage)."""
    from spanaug.core.aligner_settings import CrossAlignerConfig
    from spanaug.pipeline.aligner.cross_model import CrossAligner
    from spanaug.pipeline.aligner.instances import Instance
    from spanaug.pipeline.aligner.model import SpanAligner

    aligner = (
        SpanAligner(AlignerConfig(encoder=tiny_encoder, k=2, hidden=8), device="cpu")
        if kind == "paper"
        else CrossAligner(CrossAlignerConfig(encoder=tiny_encoder, k=2), device="cpu")
    )
    long_fe = Instance(
        "a", ["The", "children", "walked", "to", "school", "in", "the", "rain"], ["Abby", "walked"], (3, 7)
    )
    short = Instance("b", ["Abby", "bought", "a", "car"], ["Abby", "purchased", "a", "car"], (1, 1))
    candidates = aligner.predict_candidates([long_fe, short], 3)
    assert candidates[0] == ([], 0.0) and len(candidates[1][0]) == 3
    assert aligner.predict([long_fe])[0] == (None, 0.0)


def _placed(*spans):
    """Output FEs in SOURCE_FES' order: a span per overt FE (None: lost), then Time's INI."""
    names = ["Buyer", "Goods", "Seller"]
    out = [fe(n, *s, coreness="Core") if s else fe(n, null_type=LOST, coreness="Core") for n, s in zip(names, spans)]
    return [*out, fe("Time", null_type="INI", coreness="Peripheral")]


def test_verbatim_agreement_counts_fes_repeated_once_and_placed_on_their_words():
    from spanaug.pipeline.frame_elements import verbatim_agreement

    output = ["From", "Robin", "Abby", "purchased", "a", "car", "."]  # Buyer, Goods, Seller verbatim, once
    trigger = (1, 1)
    assert verbatim_agreement(SOURCE, SOURCE_FES, trigger, output, _placed((2, 2), (4, 5), (1, 1))) == (3, 2)
    assert verbatim_agreement(SOURCE, SOURCE_FES, trigger, output, _placed((2, 2), (4, 5), None)) == (3, 2)
    assert verbatim_agreement(SOURCE, SOURCE_FES, trigger, output, _placed((0, 0), (5, 5), (6, 6))) == (3, 0)
    # "Abby" twice: not a verbatim check; "a car" rewritten: not counted either.
    twice = ["Abby", "and", "Abby", "got", "one", "from", "Robin"]
    assert verbatim_agreement(SOURCE, SOURCE_FES, trigger, twice, _placed((0, 0), None, (5, 6))) == (1, 1)
    # No FEs (mode off) or none in the output list: nothing to place is agreed.
    assert verbatim_agreement(SOURCE, None, trigger, output, None) == (0, 0)
    assert verbatim_agreement(SOURCE, SOURCE_FES, trigger, output, None) == (3, 0)


def test_align_stats_report_verbatim_agreement(copy_aligner, tmp_path):
    beams = [["Abby", "purchased", "a", "car", "from", "Robin"], ["From", "Robin", ",", "Abby", "got", "a", "car"]]
    where = [[(0, 0), (2, 3), (4, 5)], [(3, 3), (5, 6), (0, 1)]]  # Buyer, Goods, Seller: each once, verbatim
    rows, stats = run_align(copy_aligner, tmp_path, beams, FrameElementSettings(mode="align"))
    agreed = sum(
        (f["start"], f["end"]) == span
        for row, spans in zip(rows, where)
        for f, span in zip(row["frame_elements"], spans)
    )
    assert stats["frame_elements_verbatim"] == 6
    assert stats["frame_elements_verbatim_agreed"] == agreed
    assert stats["frame_elements_verbatim_agreement"] == pytest.approx(agreed / 6)
