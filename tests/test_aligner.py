import json
import random

import pytest
import torch
from conftest import (
    WORDS,
    assert_batches_predict_as_one_pair_at_a_time,
    assert_bf16_agrees,
    copy_task,
    mixed_pairs,
    shared_file,
)

from spanaug.cli.main import main
from spanaug.core.aligner_settings import AlignerConfig, AlignerTrainSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.core.metrics import span_metrics
from spanaug.pipeline.aligner.instances import Instance, instances_from_bitext, pair_key, read_instances
from spanaug.pipeline.aligner.model import SpanAligner, candidate_spans, soft_labels
from spanaug.pipeline.aligner.training import holdout_by_pair, train_aligner

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_candidates_within_k_of_source_length():
    cands = candidate_spans(6, 2, 1)
    lengths = (cands[:, 1] - cands[:, 0] + 1).tolist()
    assert set(lengths) == {1, 2, 3} and len(cands) == 6 + 5 + 4
    assert int(cands.min()) >= 0 and int(cands.max()) <= 5


def test_soft_and_hard_labels():
    cands = torch.tensor([[2, 3], [2, 4], [0, 0]])
    assert soft_labels(cands, (2, 3), "soft").tolist() == [1.0, 0.5, 2.0**-5]
    assert soft_labels(cands, (2, 3), "hard").tolist() == [1.0, 0.0, 0.0]
    assert soft_labels(cands, None, "soft").tolist() == [0.0, 0.0, 0.0]


def test_metrics_on_hand_made_predictions():
    gold = [(0, 1), (3, 3), None]
    pred = [(1, 2), (3, 3), (0, 0)]
    m = span_metrics(gold, pred)
    assert m["soft_p"] == pytest.approx(2 / 4) and m["soft_r"] == pytest.approx(2 / 3)
    assert m["exact_p"] == pytest.approx(1 / 3) and m["exact_r"] == pytest.approx(1 / 2)
    assert m["n"] == 3


def test_config_rejects_unknown_feature():
    with pytest.raises(ConfigError):
        AlignerConfig(features=("df", "xx"))


def test_learns_copy_alignment_and_round_trips(tiny_encoder, tmp_path):
    train, test = copy_task(200, 0), copy_task(60, 1)
    cfg = AlignerConfig(encoder=tiny_encoder, k=2, hidden=64)
    aligner, summary = train_aligner(
        train, cfg, AlignerTrainSettings(epochs=15, batch_size=16), dev=copy_task(40, 2), device="cpu", progress=False
    )
    assert summary["loss_history"][-1] < summary["loss_history"][0]
    preds = aligner.predict(test)
    metrics = span_metrics([i.target_span for i in test], [p for p, _ in preds])
    assert metrics["exact_f1"] > 0.6, metrics
    aligner.save_pretrained(tmp_path / "al")
    again = SpanAligner.from_pretrained(tmp_path / "al", device="cpu")
    reloaded = again.predict(test)
    assert [p for p, _ in reloaded] == [p for p, _ in preds]
    assert [s for _, s in reloaded] == pytest.approx([s for _, s in preds], abs=1e-5)


@pytest.mark.parametrize(
    "features,normalize",
    [(("df", "mx", "cue"), True), (("df", "mx", "cue"), False), (("df",), True), (("mx", "cue"), False)],
)
def test_fast_scoring_matches_plain_features(tiny_encoder, features, normalize):
    torch.manual_seed(0)
    aligner = SpanAligner(
        AlignerConfig(encoder=tiny_encoder, hidden=16, k=2, features=features, normalize_spans=normalize), device="cpu"
    )
    with torch.no_grad():  # untrained batch-norm statistics would hide differences in scale
        aligner.scorer.norm.running_mean.normal_()
        aligner.scorer.norm.running_var.uniform_(0.5, 2.0)
    rng = random.Random(1)
    items = []
    for _ in range(40):
        n_src, n_tgt = rng.randint(1, 9), rng.randint(1, 12)
        s = rng.randrange(n_src)
        e = min(n_src - 1, s + rng.randint(0, 3))
        items.append(((torch.randn(n_src, 32), torch.randn(n_tgt, 32)), (s, e)))
    fast, plain = aligner.score_spans(items, chunk=7), aligner.score_spans_reference(items)
    assert [span for span, _ in fast] == [span for span, _ in plain]
    assert [score for _, score in fast] == pytest.approx([score for _, score in plain], abs=1e-5)


def test_encoding_is_shared_by_spans_of_one_pair(tiny_encoder, monkeypatch):
    aligner = SpanAligner(AlignerConfig(encoder=tiny_encoder, hidden=16), device="cpu")
    calls = []
    original = aligner.encode_pairs
    monkeypatch.setattr(
        aligner, "encode_pairs", lambda pairs, *a, **k: calls.append(len(pairs)) or original(pairs, *a, **k)
    )
    toks = WORDS[:6]
    aligner.predict([Instance(str(i), toks, toks, (i, i)) for i in range(6)])
    assert calls == [1]


def test_cli_train_predict_eval(tiny_encoder, tmp_path, capsys):
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(i.as_json()) + "\n" for i in copy_task(60, 3)))
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(i.as_json()) + "\n" for i in copy_task(20, 4)))
    model, pred = tmp_path / "model", tmp_path / "pred.jsonl"
    assert (
        main(
            [
                "align",
                "train",
                "--instances",
                str(train),
                "--encoder",
                tiny_encoder,
                "--out",
                str(model),
                "--dev",
                str(gold),
                "--features",
                "df",
                "cue",
                "--loss",
                "hard",
                "--k",
                "2",
                "--epochs",
                "2",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    assert json.loads((model / "config.json").read_text())["features"] == ["df", "cue"]
    assert main(["align", "predict", "--model", str(model), "--instances", str(gold), "--out", str(pred)]) == 0
    first = json.loads(pred.read_text().splitlines()[0])
    assert set(first) == {"id", "target_span", "score"}
    capsys.readouterr()
    assert main(["align", "eval", "--gold", str(gold), "--pred", str(pred)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert set(metrics) == {"soft_p", "soft_r", "soft_f1", "exact_p", "exact_r", "exact_f1", "n"} and metrics["n"] == 20


def test_instances_errors_name_line(tmp_path):
    path = tmp_path / "i.jsonl"
    path.write_text(
        json.dumps({"source_tokens": ["a"], "target_tokens": ["b"], "source_span": [0, 0], "target_span": None})
        + "\n"
        + json.dumps({"source_tokens": ["a"], "target_tokens": ["b"], "source_span": [0, 1]})
        + "\n"
    )
    with pytest.raises(InputError, match=r"i\.jsonl, line 2: 'source_span'.*out of range"):
        read_instances(path)


def test_instances_from_bitext_differences():
    insts = instances_from_bitext([(["He", "bought", "a", "car", "."], ["He", "purchased", "a", "car", "."])])
    assert [(i.source_span, i.target_span) for i in insts] == [((1, 1), (1, 1))]


@pytest.mark.integration
def test_real_edinburgh_instances_load():
    insts = read_instances(shared_file("edinburgh-train.spans.jsonl"))
    assert len(insts) == 2358
    assert 0.05 < sum(i.target_span is None for i in insts) / len(insts) < 0.15


def test_finetuning_top_layer_moves_only_that_layer_and_round_trips(tiny_encoder, tmp_path):
    from spanaug.pipeline.aligner.model import encoder_layers

    cfg = AlignerConfig(encoder=tiny_encoder, k=2, hidden=32, finetune_layers=1)
    aligner = SpanAligner(cfg, device="cpu")
    before = {n: p.detach().clone() for n, p in aligner.encoder.named_parameters()}
    aligner, _ = train_aligner(
        copy_task(60, 7),
        cfg,
        AlignerTrainSettings(epochs=2, batch_size=8, encoder_learning_rate=1e-3),
        aligner=aligner,
        device="cpu",
        progress=False,
    )
    top = {id(p) for p in encoder_layers(aligner.encoder)[-1].parameters()}
    changed = {id(p) for n, p in aligner.encoder.named_parameters() if not torch.equal(p, before[n])}
    assert changed and changed <= top
    test = copy_task(20, 8)
    preds = aligner.predict(test)
    aligner.save_pretrained(tmp_path / "al")
    again = SpanAligner.from_pretrained(tmp_path / "al", device="cpu")
    assert [s for _, s in again.predict(test)] == pytest.approx([s for _, s in preds], abs=1e-5)


def test_extra_instances_are_trained_on(tiny_encoder, tmp_path):
    from spanaug.pipeline.aligner.instances import reverse_instances

    train = copy_task(30, 9)
    gappy = Instance("g", ["a", "b", "c"], ["x", "y"], (0, 1), None)
    extra = reverse_instances(train + [gappy])
    assert len(extra) == len(train) and extra[0].source_tokens == train[0].target_tokens
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(i.as_json()) + "\n" for i in train))
    extra_path = tmp_path / "extra.jsonl"
    extra_path.write_text("".join(json.dumps(i.as_json()) + "\n" for i in extra))
    assert (
        main(
            [
                "align",
                "train",
                "--instances",
                str(path),
                "--extra-instances",
                str(extra_path),
                "--encoder",
                tiny_encoder,
                "--out",
                str(tmp_path / "m"),
                "--k",
                "2",
                "--epochs",
                "1",
                "--device",
                "cpu",
                "--threshold-holdout",
                "0",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "m" / "training_summary.json").read_text())
    assert summary["train_instances"] == 60 and summary["extra_instances"] == 30


def test_train_adds_reversed_and_phrase_pair_instances_off_held_out_pairs(tiny_encoder, tmp_path):
    from spanaug.pipeline.aligner.word_aligned import AlignedPair

    def shifted(insts):  # targets gain a first word, so a pair read backwards is another pair
        return [
            Instance(
                i.id,
                i.source_tokens,
                ["so"] + i.target_tokens,
                i.source_span,
                (i.target_span[0] + 1, i.target_span[1] + 1),
            )
            for i in insts
        ]

    train = shifted(copy_task(30, 9))
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(i.as_json()) + "\n" for i in train))
    dev = shifted(copy_task(6, 10))
    dev_path = tmp_path / "dev.jsonl"
    dev_path.write_text("".join(json.dumps(i.as_json()) + "\n" for i in dev))
    # the word-aligned corpus holds the dev pairs too: no phrase instance may come from them
    pairs = [
        AlignedPair(i.id, i.source_tokens, i.target_tokens, {(n, n + 1) for n in range(len(i.source_tokens))}, set())
        for i in train + dev
    ]
    gold = tmp_path / "gold.json"
    gold.write_text(
        json.dumps(
            [
                {
                    "id": p.id,
                    "source": " ".join(p.source),
                    "target": " ".join(p.target),
                    "sureAlign": " ".join(f"{s}-{t}" for s, t in sorted(p.sure)),
                    "possibleAlign": "",
                }
                for p in pairs
            ]
        )
    )
    base = [
        "align",
        "train",
        "--instances",
        str(path),
        "--dev",
        str(dev_path),
        "--encoder",
        tiny_encoder,
        "--k",
        "2",
        "--epochs",
        "1",
        "--device",
        "cpu",
    ]
    assert main(base + ["--out", str(tmp_path / "plain")]) == 0
    assert (
        main(
            base
            + [
                "--out",
                str(tmp_path / "m"),
                "--reversed",
                "--phrase-pairs",
                str(gold),
                "--phrase-max-per-pair",
                "2",
                "--phrase-keep-identical",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "m" / "training_summary.json").read_text())
    counts = summary["extra_sources"]
    assert counts["reversed"] == len(train) and 0 < counts["phrases"] <= 2 * len(train)
    assert summary["extra_instances"] == counts["reversed"] + counts["phrases"]
    assert "extra_sources" not in json.loads((tmp_path / "plain" / "training_summary.json").read_text())


# ---------------------------------------------------------------- the null threshold without a dev file


def with_nulls(n, seed):
    """The copy task plus spans whose gold answer is 'no counterpart' (the target lacks the word)."""
    out = copy_task(n, seed)
    for k, inst in enumerate(out[: n // 4]):
        s = inst.source_span[0]
        target = inst.source_tokens[:s] + inst.source_tokens[s + 1 :] or ["x"]
        out.append(Instance(f"null:{seed}:{k}", inst.source_tokens, target, (s, s), None))
    return out


def test_holdout_keeps_pairs_together_and_is_seeded():
    insts = copy_task(60, 11)
    insts += [Instance(i.id + "b", i.source_tokens, i.target_tokens, i.source_span, i.target_span) for i in insts[:20]]
    kept, held = holdout_by_pair(insts, 0.1, seed=3)
    assert held and kept and len(kept) + len(held) == len(insts)
    assert not ({pair_key(i) for i in kept} & {pair_key(i) for i in held})
    assert holdout_by_pair(insts, 0.1, seed=3)[1] == held
    assert holdout_by_pair(insts, 0.1, seed=4)[1] != held
    assert round(len({pair_key(i) for i in insts}) * 0.1) == len({pair_key(i) for i in held})
    assert holdout_by_pair(insts, 0.0)[1] == []
    assert len({pair_key(i) for i in holdout_by_pair(insts[:2], 0.9)[0]}) == 1  # never every pair


def test_threshold_tuned_without_dev_and_recorded(tiny_encoder, tmp_path):
    train = with_nulls(120, 12)
    cfg = AlignerConfig(encoder=tiny_encoder, k=2, hidden=32)
    aligner, summary = train_aligner(
        train, cfg, AlignerTrainSettings(epochs=3, batch_size=16), device="cpu", progress=False
    )
    assert summary["threshold_source"].startswith("held-out 10% of training pairs")
    assert aligner.config.threshold_source == summary["threshold_source"] and "dev_metrics" in summary
    assert summary["train_instances"] < len(train)  # the held-out pairs were not trained on
    aligner.save_pretrained(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "config.json").read_text())
    assert saved["threshold_source"] == summary["threshold_source"] and saved["threshold"] == aligner.config.threshold
    assert (
        SpanAligner.from_pretrained(tmp_path / "m", device="cpu").config.threshold_source == saved["threshold_source"]
    )


def test_untuned_and_refit_variants(tiny_encoder):
    train = with_nulls(80, 13)
    cfg = AlignerConfig(encoder=tiny_encoder, k=2, hidden=16)
    aligner, summary = train_aligner(
        train, cfg, AlignerTrainSettings(epochs=1, threshold_holdout=0.0), device="cpu", progress=False
    )
    assert aligner.config.threshold == 0.0 and summary["threshold_source"] == "untuned"
    base = SpanAligner(AlignerConfig(encoder=tiny_encoder, k=2, hidden=16), device="cpu", cache={})
    aligner, summary = train_aligner(
        train,
        base.config,
        AlignerTrainSettings(epochs=1, refit_after_holdout=True),
        device="cpu",
        progress=False,
        aligner=base,
    )
    assert summary["refit_on_all_pairs"] and summary["train_instances"] == len(train)
    assert summary["threshold_source"].endswith("then trained again on all pairs")
    assert aligner.config.threshold == summary["threshold"]


def test_cli_summary_says_how_the_threshold_was_set(tiny_encoder, tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(i.as_json()) + "\n" for i in with_nulls(60, 14)))
    assert (
        main(
            [
                "align",
                "train",
                "--instances",
                str(path),
                "--encoder",
                tiny_encoder,
                "--out",
                str(tmp_path / "m"),
                "--k",
                "2",
                "--epochs",
                "1",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "m" / "training_summary.json").read_text())
    assert summary["threshold_source"].startswith("held-out 10% of training pairs")


def _saved_aligner(tiny_encoder, path):
    """A saved random aligner whose scores spread out as a trained one's do (batch-norm statistics
    stand-ins and larger layers: a random scorer's are all alike, where any rounding looks harmless)."""
    torch.manual_seed(0)
    aligner = SpanAligner(AlignerConfig(encoder=tiny_encoder, hidden=16, k=2), device="cpu")
    with torch.no_grad():
        aligner.scorer.norm.running_mean.normal_()
        aligner.scorer.norm.running_var.uniform_(0.5, 2.0)
        aligner.scorer.hidden.weight.mul_(3)
        aligner.scorer.out.weight.mul_(5)
    aligner.save_pretrained(path)
    return path


def test_bf16_predictions_agree_with_float32(tiny_encoder, tmp_path):
    path = _saved_aligner(tiny_encoder, tmp_path / "al")
    full = SpanAligner.from_pretrained(path, device="cpu", dtype="float32")
    half = SpanAligner.from_pretrained(path, device="cpu", dtype="bfloat16")
    assert SpanAligner.from_pretrained(path, device="cpu").encoder.dtype == torch.float32  # auto on CPU
    assert half.encoder.dtype == torch.bfloat16 and half.scorer.hidden.weight.dtype == torch.float32
    pairs = mixed_pairs(200, 3)
    assert_bf16_agrees(full, half, pairs, spread=0.3)


def test_length_sorted_batches_predict_as_one_pair_at_a_time(tiny_encoder, tmp_path):
    aligner = SpanAligner.from_pretrained(_saved_aligner(tiny_encoder, tmp_path / "al"), device="cpu")
    assert_batches_predict_as_one_pair_at_a_time(aligner, mixed_pairs(60, 4))
