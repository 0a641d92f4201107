"""The cross-encoder span aligner (aligner kind 'cross'), on a tiny random encoder."""

import itertools
import json
import os

import pytest
import torch
from conftest import WORDS, assert_batches_predict_as_one_pair_at_a_time, assert_bf16_agrees, copy_task, mixed_pairs
from hypothesis import given, settings
from hypothesis import strategies as st

from spanaug.cli.main import main
from spanaug.core.aligner_settings import CrossAlignerConfig, CrossTrainSettings
from spanaug.core.calibration import platt
from spanaug.core.metrics import null_share, span_metrics
from spanaug.pipeline.aligner.cross_inputs import (
    Batch,
    Encoded,
    collate,
    padded_logits,
    split_scores,
    target_distribution,
)
from spanaug.pipeline.aligner.cross_model import CrossAligner, fit_temperature
from spanaug.pipeline.aligner.cross_training import _fit_calibration, train_cross_aligner
from spanaug.pipeline.aligner.instances import Instance
from spanaug.pipeline.aligner.loading import AutoAligner, aligner_kind
from spanaug.pipeline.aligner.model import candidate_spans, top_indices

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _aligner(tiny_encoder, **kw):
    torch.manual_seed(0)
    return CrossAligner(CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=32, **kw), device="cpu")


def test_learns_copy_alignment_and_round_trips(tiny_encoder, tmp_path):
    train, test = copy_task(200, 0), copy_task(40, 1)
    cfg = CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=32)
    aligner, summary = train_cross_aligner(
        train, cfg, CrossTrainSettings(epochs=8, learning_rate=1e-3), dev=copy_task(30, 2), device="cpu", progress=False
    )
    assert summary["loss_history"][-1]["loss"] < summary["loss_history"][0]["loss"]
    assert summary["threshold_source"] == "dev instances" and aligner.config.temperature > 0
    preds = aligner.predict(test)
    metrics = span_metrics([i.target_span for i in test], [p for p, _ in preds])
    assert metrics["exact_f1"] > 0.6, metrics
    assert all(0.0 <= s <= 1.0 for _, s in preds)
    aligner.save_pretrained(tmp_path / "al")
    saved = json.loads((tmp_path / "al" / "config.json").read_text())
    assert (
        saved["threshold_source"] == "dev instances"
        and saved["kind"] == "cross"
        and aligner_kind(tmp_path / "al") == "cross"
    )
    again = AutoAligner.from_pretrained(tmp_path / "al", device="cpu", encoder="ignored")
    assert isinstance(again, CrossAligner)
    reloaded = again.predict(test)
    assert [p for p, _ in reloaded] == [p for p, _ in preds]
    assert [s for _, s in reloaded] == pytest.approx([s for _, s in preds], abs=1e-5)
    aligner.save_pretrained(tmp_path / "al")  # overwriting an existing model directory works
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_markers_are_added_once(tiny_encoder, tmp_path):
    aligner = _aligner(tiny_encoder)
    n = len(aligner.tokenizer)
    assert aligner.encoder.get_input_embeddings().num_embeddings == n
    vocab = aligner.tokenizer.get_vocab()
    assert "[S]" in vocab and "[/S]" in vocab
    again = CrossAligner(
        aligner.config, encoder=aligner.encoder, tokenizer=aligner.tokenizer, head=aligner.head, device="cpu"
    )
    assert len(again.tokenizer) == n and again.encoder.get_input_embeddings().num_embeddings == n
    aligner.save_pretrained(tmp_path / "m")
    loaded = CrossAligner.from_pretrained(tmp_path / "m", device="cpu")
    assert len(loaded.tokenizer) == n and loaded.encoder.get_input_embeddings().num_embeddings == n
    ids = loaded.tokenizer(["[S]", "Abby", "[/S]"], add_special_tokens=False)["input_ids"]
    assert [len(i) for i in ids] == [1, 1, 1] and ids[0] != ids[2]


def test_marker_embeddings_start_from_init_tokens(tiny_encoder):
    aligner = _aligner(tiny_encoder, marker_init=(".", ","))
    emb = aligner.encoder.get_input_embeddings().weight
    tok = aligner.tokenizer
    for marker, init in (("[S]", "."), ("[/S]", ",")):
        src = tok(init, add_special_tokens=False)["input_ids"]
        assert torch.allclose(emb[tok.convert_tokens_to_ids(marker)], emb[src].mean(0))


def test_input_marks_the_span_and_candidates_obey_k(tiny_encoder):
    aligner = _aligner(tiny_encoder)
    src = WORDS[:9]
    tgt = WORDS[3:14]
    inst = Instance("x", src, tgt, (2, 3), (1, 1))
    enc = aligner.inputs.encode(inst)
    toks = aligner.tokenizer.convert_ids_to_tokens(enc.ids)
    assert toks[enc.marked[0]] == "[S]" and toks[enc.marked[1]] == "[/S]"
    assert enc.marked[1] - enc.marked[0] - 1 == sum(b - a for a, b in enc.source_words)
    assert len(enc.target_words) == len(tgt) and not enc.source_windowed
    batch = aligner.collate([enc])
    lengths = batch.cands[:, 1] - batch.cands[:, 0] + 1
    assert int(lengths.min()) >= 1 and int((lengths - 2).abs().max()) <= 2
    assert int(batch.cands.max()) < len(tgt) and len(batch.cands) == len({tuple(c) for c in batch.cands.tolist()})
    assert sorted(set(lengths.tolist())) == [1, 2, 3, 4]


def test_over_long_pairs_are_windowed_cut_and_counted(tiny_encoder):
    aligner = _aligner(tiny_encoder, max_length=24)
    src = (WORDS * 2)[:20]
    short_tgt, long_tgt = WORDS[:6], (WORDS * 3)[:30]
    insts = [
        Instance("a", src, short_tgt, (10, 10), (2, 2)),
        Instance("b", src, long_tgt, (10, 10), (2, 2)),
        Instance("c", WORDS[:3], WORDS[:3], (0, 0), (0, 0)),
    ]
    raw = aligner.raw_scores(insts)
    stats = aligner.stats
    assert stats["source_windowed"] == 2 and stats["target_truncated"] == 1 and stats["unscorable"] == 0
    enc = aligner.inputs.encode(insts[1])
    assert len(enc.ids) <= 24 and 0 < len(enc.target_words) < 30
    # the cut words are never candidates
    assert int(raw[1][0].max()) < len(enc.target_words)
    src_enc = aligner.inputs.encode(insts[0])
    assert src_enc.source_windowed and len(src_enc.ids) <= 24
    tiny = _aligner(tiny_encoder, max_length=8)
    tiny.raw_scores([Instance("d", src, long_tgt, (0, 3), (0, 0))])
    assert tiny.stats["unscorable"] == 1
    assert tiny.predict([Instance("d", src, long_tgt, (0, 3), (0, 0))]) == [(None, 0.0)]


def test_top_layers_reproduce_the_full_forward(tiny_encoder):
    aligner = _aligner(tiny_encoder)
    encs, _ = aligner.encode(copy_task(6, 3))
    batch = aligner.collate(encs)
    with torch.inference_mode():
        full = aligner.hidden(batch)
        for n_top in (0, 1, 2):
            top = aligner.top_layers(aligner.prefix_states(batch, n_top), batch.mask, n_top)
            assert torch.allclose(full[batch.mask.bool()], top[batch.mask.bool()], atol=1e-5)


def test_tuning_top_layer_moves_only_it_and_head(tiny_encoder):
    from spanaug.pipeline.aligner.model import encoder_layers

    cfg = CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=16, tune_layers=1)
    aligner = CrossAligner(cfg, device="cpu")
    before = {n: p.detach().clone() for n, p in aligner.encoder.named_parameters()}
    head_before = {n: p.detach().clone() for n, p in aligner.head.named_parameters()}
    aligner, summary = train_cross_aligner(
        copy_task(40, 4),
        cfg,
        CrossTrainSettings(epochs=1, learning_rate=1e-3),
        aligner=aligner,
        device="cpu",
        progress=False,
    )
    top = {id(p) for p in encoder_layers(aligner.encoder)[-1].parameters()}
    changed = {id(p) for n, p in aligner.encoder.named_parameters() if not torch.equal(p, before[n])}
    assert changed and changed <= top
    assert any(not torch.equal(p, head_before[n]) for n, p in aligner.head.named_parameters())
    assert summary["threshold_source"].startswith("held-out 10% of training pairs")


def test_soft_and_hard_targets():
    cands = torch.tensor([[2, 3], [2, 4], [0, 0]])
    soft, found = target_distribution(cands, (2, 3), "soft")
    weights = torch.tensor([1.0, 0.5, 2.0**-5])
    assert found and soft[0] == 0 and torch.allclose(soft[1:], weights / weights.sum())
    hard, _ = target_distribution(cands, (2, 3), "hard")
    assert hard.tolist() == [0.0, 1.0, 0.0, 0.0]
    null, _ = target_distribution(cands, None, "hard")
    assert null.tolist() == [1.0, 0.0, 0.0, 0.0]
    outside, found = target_distribution(cands, (5, 9), "hard")
    assert not found and outside[0] == 0 and outside[1:].sum() == pytest.approx(1.0)


def test_temperature_fit_sharpens_underconfident_scores():
    cands = torch.tensor([[0, 0], [1, 1]])
    raw = [(cands, torch.tensor([-5.0, 0.2, 0.0]))] * 10  # gold always candidate 0, but only slightly preferred
    t, _ = fit_temperature(raw, [(0, 0)] * 10)
    assert t < 0.5
    overconfident = [(cands, torch.tensor([-5.0, 4.0, 0.0]))] * 10  # right only half the time
    t, _ = fit_temperature(overconfident, [(0, 0)] * 5 + [(1, 1)] * 5)
    assert t > 2


def test_cli_trains_and_predicts_cross_kind(tiny_encoder, tmp_path, capsys):
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(i.as_json()) + "\n" for i in copy_task(40, 5)))
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(i.as_json()) + "\n" for i in copy_task(10, 6)))
    model, pred = tmp_path / "model", tmp_path / "pred.jsonl"
    assert (
        main(
            [
                "align",
                "train",
                "--kind",
                "cross",
                "--instances",
                str(train),
                "--encoder",
                tiny_encoder,
                "--out",
                str(model),
                "--k",
                "2",
                "--cross",
                '{"epochs": 1, "head_dim": 16}',
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    summary = json.loads((model / "training_summary.json").read_text())
    assert summary["threshold_source"].startswith("held-out 10% of training pairs")
    assert summary["kind"] == "cross" and len(summary["loss_history"]) == 1
    assert json.loads((model / "config.json").read_text())["head_dim"] == 16
    assert (
        main(
            ["align", "predict", "--model", str(model), "--instances", str(gold), "--out", str(pred), "--device", "cpu"]
        )
        == 0
    )
    assert len(pred.read_text().splitlines()) == 10
    capsys.readouterr()
    assert main(["align", "eval", "--gold", str(gold), "--pred", str(pred), "--calibration"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert {"ece", "pred_null_share", "gold_null_share", "exact_f1"} <= set(metrics)


def plain_head_forward(head, words, query, source, cls, item, cands, length_diff):
    """The span head's ``forward`` the plain way, one feature row per candidate: what the fast path
    (features of each word computed once, gathered per candidate) must equal."""
    prefix = torch.cat([words.new_zeros(words.shape[0], 1, words.shape[2]), words.cumsum(1)], dim=1)
    a, b = cands[:, 0], cands[:, 1]
    w_a, w_b = words[item, a], words[item, b]
    mean = (prefix[item, b + 1] - prefix[item, a]) / (b - a + 1).unsqueeze(-1).to(words.dtype)
    u = source[item]
    z = (
        head.first(w_a)
        + head.last(w_b)
        + head.inside(mean)
        + head.query(query[item])
        + head.match(u * mean)
        + head.diff(u - mean)
        + head.length_diff(length_diff.clamp(0, 2 * head.k))
    )
    span = head.start(w_a).squeeze(-1) + head.end(w_b).squeeze(-1) + head.span_out(z).squeeze(-1)
    null = head.null(torch.cat([cls, query], dim=-1)).squeeze(-1)
    return span, null


def test_fast_head_matches_plain_features(tiny_encoder):
    aligner = _aligner(tiny_encoder)
    encs, _ = aligner.encode(copy_task(7, 9))
    batch = aligner.collate(encs)
    torch.manual_seed(1)
    hidden = torch.randn(batch.ids.shape[0], batch.ids.shape[1], aligner.encoder.config.hidden_size)
    words = torch.bmm(batch.word_pool, hidden)
    query = torch.bmm(batch.query_pool.unsqueeze(1), hidden).squeeze(1)
    source = torch.bmm(batch.source_pool.unsqueeze(1), hidden).squeeze(1)
    args = (words, query, source, hidden[:, 0], batch.item, batch.cands, batch.length_diff)
    with torch.no_grad():
        fast, plain = aligner.head(*args), plain_head_forward(aligner.head, *args)
    assert torch.allclose(fast[0], plain[0], atol=1e-4) and torch.allclose(fast[1], plain[1])


def test_null_is_weighed_against_all_spans_and_its_threshold_tuned(tiny_encoder):
    aligner = _aligner(tiny_encoder)
    cands = torch.tensor([[0, 0], [0, 1], [1, 1]])
    spread = (cands, torch.log(torch.tensor([0.4, 0.2, 0.2, 0.2])))  # null beats the best span, not all of them
    sure_null = (cands, torch.log(torch.tensor([0.9, 0.04, 0.03, 0.03])))
    assert aligner.decide([spread, sure_null], temperature=1.0, threshold=0.5) == [
        ((0, 0), pytest.approx(0.2)),
        (None, pytest.approx(0.04)),
    ]
    raw = [spread] * 4 + [sure_null] * 4
    gold = [(0, 0)] * 4 + [None] * 4
    aligner.config.temperature = 1.0
    t, m = aligner.tune_threshold(raw, gold, "exact_f1")
    assert 0.4 < t <= 0.9 and m["exact_f1"] == 1.0
    t, _ = aligner.tune_threshold(raw, [(0, 0)] * 8, "soft_f1")
    assert t > 0.9  # never null when nothing is


def test_the_null_threshold_keeps_the_null_share_near_gold_when_told(tiny_encoder):
    aligner = _aligner(tiny_encoder)
    aligner.config.temperature = 1.0
    cands = torch.tensor([[0, 0], [0, 1], [1, 1]])

    def item(p_null: float) -> tuple[torch.Tensor, torch.Tensor]:
        rest = (1 - p_null) / 3
        return cands, torch.log(torch.tensor([p_null, rest + 0.01, rest, rest - 0.01]))

    # Two null instances the model takes for answerable, and eight answerable ones whose best span
    # (0, 0) half overlaps the gold (0, 1): soft F1 alone would rather answer everything.
    raw = [item(0.05), item(0.07)] + [item(0.1 + 0.02 * n) for n in range(8)]
    gold = [None] * 2 + [(0, 1)] * 8
    free, _ = aligner.tune_threshold(raw, gold, "soft_f1")
    held, m = aligner.tune_threshold(raw, gold, "soft_f1", null_share_tolerance=0.05)
    assert _null_share(aligner, raw, free) == 0.0
    assert _null_share(aligner, raw, held) == pytest.approx(0.2) == m["pred_null_share"] == m["gold_null_share"]
    assert m["soft_p"] == pytest.approx(6 / 8)
    # No threshold reaches the gold share (every null probability alike): the nearest share wins.
    same = [item(0.3)] * 10
    t, _ = aligner.tune_threshold(same, [None] * 3 + [(0, 1)] * 7, "soft_f1", null_share_tolerance=0.01)
    assert _null_share(aligner, same, t) == 0.0


def _null_share(aligner: CrossAligner, raw: list, t: float) -> float:
    return null_share([span for span, _ in aligner.decide(raw, temperature=1.0, threshold=t)])


def test_platt_scaling_fixes_overconfident_scores_and_is_saved(tiny_encoder, tmp_path):
    aligner = _aligner(tiny_encoder)
    cands = torch.tensor([[0, 0], [1, 1]])
    raw = [(cands, torch.tensor([-9.0, 3.0, 0.0]))] * 20  # best span's probability 0.95, right half the time
    gold = [(0, 0)] * 10 + [(1, 1)] * 10
    aligner.config.threshold = 0.5
    fitted = _fit_calibration(aligner, raw, gold)
    assert fitted["heldout_ece_before"] == pytest.approx(0.45, abs=0.01)
    assert fitted["heldout_ece_after"] < 0.05 and fitted["answers"] == 20
    assert [s for _, s in aligner.decide(raw)] == pytest.approx([0.5] * 20, abs=0.03)
    # training's own (explicit temperature) scores are not rescaled
    assert aligner.decide(raw[:1], temperature=1.0)[0][1] == pytest.approx(0.95, abs=0.01)
    aligner.save_pretrained(tmp_path / "m")
    again = CrossAligner.from_pretrained(tmp_path / "m", device="cpu")
    assert again.config.calibration == pytest.approx(aligner.config.calibration)


def test_training_fits_the_scaling_on_held_out_pairs(tiny_encoder):
    cfg = CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=32, calibration=[5.0, 5.0])
    aligner, summary = train_cross_aligner(
        copy_task(60, 0), cfg, CrossTrainSettings(epochs=1), device="cpu", progress=False
    )
    assert summary["calibration"]["params"] == aligner.config.calibration != [5.0, 5.0]
    assert summary["calibration"]["answers"] > 0
    _, plain = train_cross_aligner(
        copy_task(60, 0), cfg, CrossTrainSettings(epochs=1, calibrate=False), device="cpu", progress=False
    )
    assert "calibration" not in plain


def test_cli_pretrains_the_cross_kind_only(tiny_encoder, tmp_path):
    train, pre = tmp_path / "train.jsonl", tmp_path / "pre.jsonl"
    train.write_text("".join(json.dumps(i.as_json()) + "\n" for i in copy_task(30, 5)))
    pre.write_text("".join(json.dumps(i.as_json()) + "\n" for i in copy_task(12, 7)))
    base = [
        "align",
        "train",
        "--instances",
        str(train),
        "--encoder",
        tiny_encoder,
        "--k",
        "2",
        "--pretrain",
        str(pre),
        "--device",
        "cpu",
    ]
    assert (
        main(base + ["--kind", "cross", "--out", str(tmp_path / "m"), "--cross", '{"epochs": 1, "head_dim": 16}']) == 0
    )
    summary = json.loads((tmp_path / "m" / "training_summary.json").read_text())
    assert summary["pretrain_instances"] == 12 and summary["loss_history"][0]["pretrain_epoch"] == 1
    assert main(base + ["--out", str(tmp_path / "p"), "--epochs", "1"]) == 2
    assert not (tmp_path / "p").exists()


def _sharp_aligner(tiny_encoder, path):
    """A saved random aligner whose head is scaled up, so its scores spread out as a trained one's do
    (a random head's are all near uniform, where any rounding looks harmless)."""
    aligner = _aligner(tiny_encoder)
    with torch.no_grad():
        for p in aligner.head.parameters():
            p.mul_(5 ** (1 / 3))
    aligner.save_pretrained(path)
    return path


def test_bf16_predictions_agree_with_float32(tiny_encoder, tmp_path):
    path = _sharp_aligner(tiny_encoder, tmp_path / "al")
    full = CrossAligner.from_pretrained(path, device="cpu", dtype="float32")
    half = CrossAligner.from_pretrained(path, device="cpu", dtype="bfloat16")
    assert CrossAligner.from_pretrained(path, device="cpu").encoder.dtype == torch.float32  # auto on CPU
    assert half.encoder.dtype == torch.bfloat16
    assert all(p.dtype == torch.float32 for p in half.head.parameters())
    pairs = mixed_pairs(200, 3)
    raw = half.raw_scores(pairs)
    assert all(logits.dtype == torch.float32 for _, logits in raw)  # calibration math in float32
    assert_bf16_agrees(full, half, pairs, spread=0.5)


def test_length_sorted_batches_predict_as_one_pair_at_a_time(tiny_encoder, tmp_path):
    aligner = CrossAligner.from_pretrained(_sharp_aligner(tiny_encoder, tmp_path / "al"), device="cpu")
    assert_batches_predict_as_one_pair_at_a_time(aligner, mixed_pairs(60, 4))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_batches_in_flight_predict_as_on_the_cpu(tiny_encoder, tmp_path):
    """On a GPU, batches go up from pinned memory and their scores come back while the next batch
    runs: the same predictions as on the CPU, batch by batch and a pair at a time."""
    path = _sharp_aligner(tiny_encoder, tmp_path / "al")
    cpu = CrossAligner.from_pretrained(path, device="cpu", dtype="float32")
    gpu = CrossAligner.from_pretrained(path, device="cuda", dtype="float32")
    pairs = mixed_pairs(60, 5)
    assert_batches_predict_as_one_pair_at_a_time(gpu, pairs)
    on_cpu, on_gpu = cpu.predict_candidates(pairs, 3, batch_size=8), gpu.predict_candidates(pairs, 3, batch_size=8)
    assert [[span for span, _ in acc] for acc, _ in on_gpu] == [[span for span, _ in acc] for acc, _ in on_cpu]
    assert [best for _, best in on_gpu] == pytest.approx([best for _, best in on_cpu], abs=1e-4)


def _collate_one_write_at_a_time(encs, k, pooling, pad_id):
    """The batch written element by element (collate as it was first written): the reference."""
    n, length = len(encs), max(len(x.ids) for x in encs)
    n_words = max(len(x.target_words) for x in encs)
    ids = torch.full((n, length), pad_id, dtype=torch.long)
    types, mask = torch.zeros((n, length), dtype=torch.long), torch.zeros((n, length), dtype=torch.long)
    word_pool, query_pool, source_pool = (
        torch.zeros((n, n_words, length)),
        torch.zeros((n, length)),
        torch.zeros((n, length)),
    )
    items, cand_parts, diffs, counts = [], [], [], []
    for row, x in enumerate(encs):
        ids[row, : len(x.ids)] = torch.tensor(x.ids)
        types[row, : len(x.types)] = torch.tensor(x.types)
        mask[row, : len(x.ids)] = 1
        for w, (a, b) in enumerate(x.target_words):
            if pooling == "first":
                word_pool[row, w, a] = 1.0
            else:
                word_pool[row, w, a:b] = 1.0 / (b - a)
        m0, m1 = x.marked
        query_pool[row, m0 : m1 + 1] = 1.0 / (m1 - m0 + 1)
        for a, b in x.source_words:
            if pooling == "first":
                source_pool[row, a] = 1.0 / len(x.source_words)
            else:
                source_pool[row, a:b] = 1.0 / ((b - a) * len(x.source_words))
        cands = candidate_spans(len(x.target_words), x.source_len, k)
        cand_parts.append(cands)
        items.append(torch.full((len(cands),), row, dtype=torch.long))
        diffs.append((cands[:, 1] - cands[:, 0] + 1) - x.source_len + k)
        counts.append(len(cands))
    return Batch(
        ids,
        types,
        mask,
        word_pool,
        query_pool,
        source_pool,
        torch.cat(items),
        torch.cat(cand_parts),
        torch.cat(diffs),
        counts,
    )


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_collate_builds_the_batch_written_one_element_at_a_time(tiny_encoder, pooling):
    aligner = _aligner(tiny_encoder, pooling=pooling)
    pairs = mixed_pairs(40, 5) + [Instance("long", WORDS * 3, WORDS * 3, (0, 9))]  # multi-piece words too
    encs = [e for e in aligner.encode(pairs)[0] if e is not None]
    assert any(b - a > 1 for x in encs for a, b in x.target_words)
    for start in (0, 7, 30):
        part = encs[start : start + 11]
        got = collate(part, 2, pooling, 0, torch.device("cpu"))
        want = _collate_one_write_at_a_time(part, 2, pooling, 0)
        assert got.counts == want.counts
        for name in ("ids", "types", "mask", "word_pool", "query_pool", "source_pool", "item", "cands", "length_diff"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and torch.equal(a, b), name


@st.composite
def encoded(draw):
    """A made-up ``Encoded``: [CLS], context, [S] source words [/S], context, [SEP], target words, [SEP],
    words of 1 to 3 pieces."""
    marked_start = 1 + draw(st.integers(0, 3))
    ends = list(
        itertools.accumulate(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)), initial=marked_start + 1)
    )
    target_start = ends[-1] + 2 + draw(st.integers(0, 3))
    widths = draw(st.lists(st.integers(1, 3), min_size=1, max_size=8))
    target_ends = list(itertools.accumulate(widths, initial=target_start))
    n = target_ends[-1] + 1
    return Encoded(
        draw(st.lists(st.integers(5, 99), min_size=n, max_size=n)),
        [0] * target_start + [1] * (n - target_start),
        list(itertools.pairwise(target_ends)),
        (marked_start, ends[-1]),
        list(itertools.pairwise(ends)),
        len(ends) - 1,
        len(widths) + draw(st.integers(0, 2)),
    )


@settings(max_examples=int(os.environ.get("SPANAUG_FUZZ_EXAMPLES", "40")), deadline=None)
@given(st.lists(encoded(), min_size=1, max_size=6), st.sampled_from(["first", "mean"]), st.integers(0, 3))
def test_collate_from_flat_arrays_matches_the_reference(encs, pooling, k):
    got = collate(encs, k, pooling, 3, torch.device("cpu"))
    want = _collate_one_write_at_a_time(encs, k, pooling, 3)
    assert got.counts == want.counts
    for name in ("ids", "types", "mask", "word_pool", "query_pool", "source_pool", "item", "cands", "length_diff"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), name


def _padded_logits_row_at_a_time(span, null, counts):
    out = span.new_full((len(counts), 1 + max(counts, default=0)), float("-inf"))
    out[:, 0] = null
    offset = 0
    for row, c in enumerate(counts):
        out[row, 1 : 1 + c] = span[offset : offset + c]
        offset += c
    return out


@pytest.mark.parametrize("counts", [[3], [0, 4, 1, 0, 7], [2, 2, 2], [0]])
def test_padded_logits_and_split_scores_as_row_at_a_time(counts):
    span = torch.randn(sum(counts), requires_grad=True)
    null = torch.randn(len(counts))
    item = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    got = padded_logits(span, null, item, counts)
    assert torch.equal(got, _padded_logits_row_at_a_time(span, null, counts))
    got.masked_fill(got.isinf(), 0).sum().backward()  # training's loss reaches the span logits
    assert torch.equal(span.grad, torch.ones_like(span))
    cands = torch.arange(2 * sum(counts)).view(-1, 2)
    batch = Batch(*[None] * 7, cands, None, counts)
    out = [None] * (len(counts) + 1)
    split_scores(batch, got.detach(), list(range(1, len(counts) + 1)), out)
    offset = 0
    for row, c in enumerate(counts):
        assert torch.equal(out[row + 1][0], cands[offset : offset + c])
        assert torch.equal(out[row + 1][1], got.detach()[row, : 1 + c])
        offset += c


def _probabilities_one_at_a_time(raw, temperature, scaling):
    out = []
    for item in raw:
        if item is None or item[0].shape[0] == 0:
            out.append((None, 0.0, 1.0))
            continue
        cands, logits = item
        probs = torch.softmax(logits / temperature, dim=0)
        best = int(probs[1:].argmax())
        out.append(
            ((int(cands[best, 0]), int(cands[best, 1])), platt(float(probs[1 + best]), scaling), float(probs[0]))
        )
    return out


def _ranked_one_at_a_time(raw, top_k, threshold, temperature, scaling):
    out = []
    for item in raw:
        if item is None or item[0].shape[0] == 0:
            out.append(([], 0.0))
            continue
        cands, logits = item
        probs = torch.softmax(logits / temperature, dim=0)
        top = top_indices(probs[1:], top_k)
        spans = [((int(cands[n, 0]), int(cands[n, 1])), platt(float(probs[1 + n]), scaling)) for n in top]
        out.append((spans if float(probs[0]) < threshold else [], spans[0][1]))
    return out


def _random_raw(n, seed):
    """Scores of ``n`` instances of 0 to 40 candidates, some unscorable, some with tied logits."""
    gen = torch.Generator().manual_seed(seed)
    raw = []
    for k in range(n):
        c = int(torch.randint(0, 41, (1,), generator=gen))
        if k % 11 == 0:
            raw.append(None)
            continue
        logits = torch.randn(1 + c, generator=gen) * (3.0 if k % 2 else 0.3)
        if k % 5 == 0 and c > 3:
            logits[2:4] = logits[1:2].max()  # ties with the best
        raw.append((torch.randint(0, 30, (c, 2), generator=gen), logits))
    return raw


@pytest.mark.parametrize("calibration", [None, (1.3, -0.2)])
def test_decisions_in_groups_equal_one_instance_at_a_time(tiny_encoder, calibration):
    aligner = _aligner(tiny_encoder)
    aligner.config.temperature, aligner.config.calibration = 0.73, calibration
    raw = _random_raw(400, 1)
    want = _probabilities_one_at_a_time(raw, 0.73, calibration)
    assert aligner.probabilities(raw) == want
    assert aligner.probabilities(raw, temperature=1.7) == _probabilities_one_at_a_time(raw, 1.7, None)
    for threshold in (0.2, 0.9):
        assert aligner.decide(raw, threshold=threshold) == [(s if q < threshold else None, p) for s, p, q in want]
        for top_k in (1, 3, 50):
            assert aligner.ranked(raw, top_k, threshold) == _ranked_one_at_a_time(
                raw, top_k, threshold, 0.73, calibration
            )
