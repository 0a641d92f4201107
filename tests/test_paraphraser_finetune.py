"""Fine-tuning pretrained paraphrasers (paraphraser.train.init) and the held-out metrics.

Tiny random T5 and decoder-only models (Llama, Qwen2 with a chat template), tokenizers trained on
the fly, fine-tuned for a few steps on a small bitext whose paraphrases each replace a word.
"""

import json
import math

import pytest
import torch

from spanaug.cli.main import main
from spanaug.core.bitext import read_bitext
from spanaug.core.config import DecodeSettings, ParaphraserTrainSettings
from spanaug.core.errors import ConfigError
from spanaug.demo.standins import save_causal, save_standin
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser import finetune, heldout
from spanaug.pipeline.paraphraser.bitext import pairs_from_aligned, pick_word, split_heldout
from spanaug.pipeline.paraphraser.causal_backend import CausalParaphraser
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.prompts import DEFAULT_EXAMPLES, build_prompt, span_text
from spanaug.pipeline.paraphraser.stage import load_paraphraser
from spanaug.pipeline.paraphraser.training import PairCollator, train_paraphraser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Paraphrases that replace one word each (so every pair names a word in a decoder-only prompt).
PAIRS = [
    ("Abby bought a car from Robin last week .", "Abby purchased a car from Robin last week ."),
    ("The company purchased steel from three suppliers .", "The company bought steel from three suppliers ."),
    ("The children walked to school in the rain .", "The children went to school in the rain ."),
    ("My uncle gave up smoking last year .", "My uncle quit smoking last year ."),
    ("The minister said that taxes would rise .", "The minister stated that taxes would rise ."),
    ("Scientists discovered a new kind of bird .", "Scientists found a new kind of bird ."),
    ("She handed the letter to her friend .", "She gave the letter to her friend ."),
    ("The workers stopped the machine at noon .", "The workers halted the machine at noon ."),
    ("The farmers were angry about the rules .", "The farmers were furious about the rules ."),
    ("There is no evidence that it works .", "There is no proof that it works ."),
]


def _texts():
    """Every text a test tokenizer must cover: the pairs, and the default prompt's words."""
    cfg = DecodeSettings()
    words = [cfg.instruction, cfg.prompt, *(t for ex in DEFAULT_EXAMPLES for t in (ex.word, ex.sentence, ex.rewrite))]
    return [t for pair in PAIRS for t in pair] * 3 + words * 2


@pytest.fixture
def bitext(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in PAIRS))
    return path


def _settings(bitext, init, **changes):
    values = {
        "bitext": str(bitext),
        "init": str(init),
        "batch_size": 4,
        "max_steps": 4,
        "checkpoint_every": 2,
        "learning_rate": 1e-2,
        "warmup_steps": 1,
        "label_smoothing": 0.0,
        "heldout_share": 0.2,
        "heldout_beam": 2,
    }
    return ParaphraserTrainSettings(**{**values, **changes})


def _weights_equal(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def _check_metrics(out, held):
    metrics = json.loads((out / heldout.METRICS_FILE).read_text())
    assert metrics["heldout_pairs"] == held > 0
    for key in ("loss", "chrf", "bleu", "initial_loss", "copy_chrf", "copy_bleu"):
        assert isinstance(metrics[key], float) and math.isfinite(metrics[key]), key
    assert 0 <= metrics["chrf"] <= 100 and 0 <= metrics["bleu"] <= 100
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["heldout"]["chrf"] == metrics["chrf"]
    return metrics


# ---------------------------------------------------------------- the bitext, the word, the split


def test_pick_word_takes_a_replaced_content_word_not_a_deleted_one():
    assert pick_word("Abby bought a car last week .", "Abby purchased a car last week .") == "bought"
    # Lower-case before capitalised, longer before shorter.
    assert pick_word("Robin sold the old car .", "Kim sold the used car .") == "old"
    assert pick_word("Abby quickly purchased it .", "Abby bought it .") == "purchased"
    # A word merely deleted (and function words) are never the word: nothing replaced, no word.
    assert pick_word("The big house burned down .", "The house burned down .") is None
    assert pick_word("He sat on the chair .", "He sat in the chair .") is None


def test_heldout_split_is_deterministic_and_keeps_a_source_together():
    pairs = [(f"sentence {i}", f"rewrite {i}") for i in range(40)] + [("sentence 3", "another rewrite")]
    train, held = split_heldout(pairs, 0.25)
    assert split_heldout(list(reversed(pairs)), 0.25)[1] == list(reversed(held))  # by hash, not by order
    assert len({s for s, _ in held}) == 10 and not {s for s, _ in held} & {s for s, _ in train}
    assert ("sentence 3" in {s for s, _ in held}) == (("sentence 3", "another rewrite") in held)
    assert split_heldout(pairs, 0) == (pairs, [])


def test_bitext_command_reads_word_aligned_corpora(tmp_path):
    corpus = tmp_path / "a.gold.json"
    rows = [
        {"id": 1, "source": "we do n't know", "target": "we are not sure", "sureAlign": "0-0"},
        {"id": 2, "source": "the same", "target": "The same", "sureAlign": ""},  # a copy: left out
        {"id": 3, "source": "`` yes ''", "target": "`` certainly ''", "sureAlign": ""},
        {"id": 4, "source": "we do n't know", "target": "we are not sure", "sureAlign": "0-0"},  # a repeat
    ]
    corpus.write_text(json.dumps(rows))
    out = tmp_path / "pairs.tsv"
    assert main(["paraphraser", "bitext", "--out", str(out), "--files", str(corpus)]) == 0
    assert read_bitext(out) == [("we don't know", "we are not sure"), ('" yes "', '" certainly "')]
    assert pairs_from_aligned([corpus], detok=False)[0][0] == ("we do n't know", "we are not sure")
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert main(["paraphraser", "bitext", "--out", str(out), "--files", str(bad)]) == 2


def test_architecture_settings_with_init_are_refused(bitext):
    with pytest.raises(ConfigError, match=r"d_model.*do not apply"):
        ParaphraserTrainSettings(bitext=str(bitext), init="some/model", d_model=64)
    ParaphraserTrainSettings(bitext=str(bitext), d_model=64)  # from scratch they apply


# ---------------------------------------------------------------- seq2seq


def test_seq2seq_finetune_learns_resumes_and_decodes(bitext, tmp_path):
    init = save_standin(tmp_path / "t5", "t5", _texts(), vocab_size=200)
    decode = DecodeSettings(prefix="paraphrase: ")
    out = tmp_path / "model"
    cfg = _settings(bitext, init)
    train_pairs, held = split_heldout(read_bitext(bitext), cfg.heldout_share)

    def train_loss(folder):
        model, tokenizer = finetune.load_checkpoint("seq2seq", str(folder))
        collator = PairCollator(tokenizer, model, 128, decode.prefix)
        return heldout.mean_loss(model, [collator(train_pairs)], heldout.seq2seq_nll, torch.device("cpu"))

    assert train_paraphraser(cfg, out, device="cpu", progress=False, decode=decode)["steps"] == 4
    assert train_loss(out) < train_loss(init)
    cfg.max_steps = 6
    summary = train_paraphraser(cfg, out, device="cpu", progress=False, decode=decode)  # resumes at step 4
    assert summary["steps"] == 6 and summary["init"] == init
    assert sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-6"]
    _check_metrics(out, len(held))

    para = load_paraphraser(DecodeSettings(model=str(out), backend="hf"), device="cpu")
    last, _ = finetune.load_checkpoint("seq2seq", str(out / "checkpoints" / "checkpoint-6"))
    assert _weights_equal(para.model, last)
    req = {**heldout.requests([PAIRS[0]])[0], "constraints": ["bought"]}
    rows = list(paraphrase(para, [req], DecodeSettings(beam_size=2, return_top=2, max_new_tokens=8), progress=False))
    assert all(violations(r["paraphrase_text"], ["bought"]) == [] for r in rows)


def test_seq2seq_collator_puts_the_prefix_before_each_source(tmp_path):
    init = save_standin(tmp_path / "t5", "t5", _texts(), vocab_size=200)
    model, tokenizer = finetune.load_checkpoint("seq2seq", init)
    batch = PairCollator(tokenizer, model, 128, "paraphrase: ")([PAIRS[0]])
    assert tokenizer.decode(batch["input_ids"][0], skip_special_tokens=True).startswith("paraphrase:")


# ---------------------------------------------------------------- decoder-only


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma3"])
def test_causal_rows_are_the_backends_prompt_with_the_prompt_masked(family, tmp_path):
    folder = save_causal(family, _texts(), tmp_path / family)
    para = CausalParaphraser.from_pretrained(folder, device="cpu", dtype="float32")
    decode = DecodeSettings()
    prompt = build_prompt(decode, para.tokenizer)
    assert prompt.chat == (family == "qwen2")
    collator = finetune.CausalCollator(para.tokenizer, prompt)
    rows = finetune.examples(PAIRS[:3], prompt, "test")
    batch = collator(rows)
    pad = para.tokenizer.pad_token_id
    newline = para.tokenizer("\n", add_special_tokens=False)["input_ids"][-1:]
    end = [para.tokenizer.eos_token_id] if prompt.chat else newline
    for r, row in enumerate(rows):
        request = heldout.requests([(row.source, row.target)])[0]
        assert span_text(request) == row.word == pick_word(row.source, row.target)
        # The prompt's ids are those the backend decodes from: its head, then the sentence's query.
        head = para.head(prompt).ids[0].tolist()
        query = para.tokenizer(para.queries([request], decode), add_special_tokens=False)["input_ids"][0]
        answer = para.tokenizer(prompt.lead + row.target, add_special_tokens=False)["input_ids"] + end
        ids, mask, labels = (batch[k][r].tolist() for k in ("input_ids", "attention_mask", "labels"))
        start = mask.index(1)
        assert ids[start:] == head + query + answer and set(ids[:start]) <= {pad}
        assert labels == [-100] * (start + len(head) + len(query)) + answer  # the prompt masked out
        assert batch["position_ids"][r, start:].tolist() == list(range(len(ids) - start))


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma3"])
def test_causal_finetune_learns_resumes_and_decodes(family, bitext, tmp_path):
    init = save_causal(family, _texts(), tmp_path / family)
    decode = DecodeSettings()
    out = tmp_path / "model"
    cfg = _settings(bitext, init)
    train_pairs, held = split_heldout(read_bitext(bitext), cfg.heldout_share)

    def train_loss(folder):
        model, tokenizer = finetune.load_checkpoint("causal", str(folder))
        collator = finetune.CausalCollator(finetune.prepare_tokenizer(tokenizer), build_prompt(decode, tokenizer))
        batch = collator(finetune.examples(train_pairs, collator.ids.prompt, "test"))
        return heldout.mean_loss(model, [batch], finetune.answer_nll, torch.device("cpu"))

    assert train_paraphraser(cfg, out, device="cpu", progress=False, decode=decode)["steps"] == 4
    assert train_loss(out) < train_loss(init)
    cfg.max_steps = 6
    assert train_paraphraser(cfg, out, device="cpu", progress=False, decode=decode)["steps"] == 6
    assert sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-6"]
    _check_metrics(out, len(held))

    para = load_paraphraser(DecodeSettings(model=str(out)), device="cpu")
    assert isinstance(para, CausalParaphraser)
    last, _ = finetune.load_checkpoint("causal", str(out / "checkpoints" / "checkpoint-6"))
    assert _weights_equal(para.model, last)
    req = heldout.requests([PAIRS[0]])[0]
    assert req["constraints"] == ["bought"]
    rows = list(paraphrase(para, [req], DecodeSettings(beam_size=2, return_top=2, max_new_tokens=8), progress=False))
    assert all(violations(r["paraphrase_text"], ["bought"]) == [] for r in rows)


# ---------------------------------------------------------------- the run's plan and preflight


def _run_config(tmp_path, init):
    import yaml
    from conftest import REPO

    from spanaug.core.config import load_run_config

    raw = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    raw["data"]["inputs"] = [str(REPO / p) for p in raw["data"]["inputs"]]
    raw["aligner"]["train"]["bitext"] = str(REPO / raw["aligner"]["train"]["bitext"])
    raw["frameid"]["lexicon"] = raw["stats"]["lexicon"] = str(REPO / "resources/demo/fndata-demo")
    bitext = str(REPO / raw["paraphraser"]["train"]["bitext"])
    raw["paraphraser"]["train"] = {"bitext": bitext, "init": init, "max_steps": 3}
    return load_run_config(raw)


def test_the_run_fine_tunes_init_and_paraphrases_with_the_result(tmp_path):
    from spanaug.workflow.plan import Plan
    from spanaug.workflow.preflight import check_run

    folder = save_causal("llama", _texts(), tmp_path / "llama")
    cfg = _run_config(tmp_path, str(folder))
    plan = Plan(cfg, "results/x")
    assert plan.paraphraser_init_input() == [str(folder)]
    assert plan.paraphraser_model() == "results/x/models/paraphraser"  # the fine-tuned model decodes
    assert any(f.key == "paraphraser.train.init" and f.directory for f in plan.external_files())
    assert "fine-tuned in this run" in plan.run_description(tmp_path)["paraphraser"]
    assert not [p for p in check_run(cfg) if p.key.startswith("paraphraser")]

    missing = check_run(_run_config(tmp_path, str(tmp_path / "gone.gguf")), has_module=lambda m: m != "gguf")
    messages = [p.message for p in missing if p.key == "paraphraser.train.init"]
    assert any("no such GGUF file" in m for m in messages) and any(
        "gguf" in m and "not installed" in m for m in messages
    )
    assert Plan(_run_config(tmp_path, "gguf:gemma3-270m"), "r").paraphraser_init_input() == []


def test_evaluate_command_scores_any_paraphraser_on_the_heldout_pairs(bitext, tmp_path):
    model = save_standin(tmp_path / "t5", "t5", _texts(), vocab_size=200)
    out = tmp_path / "metrics.json"
    argv = ["paraphraser", "evaluate", "--model", model, "--bitext", str(bitext), "--out", str(out)]
    assert main([*argv, "--heldout-share", "0.2", "--heldout-beam", "2", "--device", "cpu"]) == 0
    metrics = json.loads(out.read_text())
    _, held = split_heldout(read_bitext(bitext), 0.2)
    assert metrics["model"] == model and metrics["heldout_pairs"] == len(held) == metrics["decoded_pairs"]
    assert [e["reference"] for e in metrics["examples"]] == [t for _, t in held]
    assert 0 <= metrics["chrf"] <= 100 and metrics["copy_chrf"] > 0
    assert main([*argv, "--paraphrase=--beam-size nope"]) == 2  # a bad stage option, named by --paraphrase


def test_a_model_trained_from_scratch_is_scored_on_the_heldout_pairs_too(bitext, tmp_path):
    cfg = ParaphraserTrainSettings(
        bitext=str(bitext),
        vocab_size=100,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        attention_heads=2,
        ffn_dim=64,
        batch_size=4,
        max_steps=2,
        warmup_steps=1,
        heldout_share=0.2,
        heldout_beam=2,
    )
    out = tmp_path / "model"
    summary = train_paraphraser(cfg, out, device="cpu", progress=False)
    train, held = split_heldout(read_bitext(bitext), 0.2)
    assert summary["pairs"] == len(PAIRS) and summary["train_rows"] == 2 * len(train)
    metrics = json.loads((out / heldout.METRICS_FILE).read_text())
    assert metrics["heldout_pairs"] == len(held) and "initial_loss" not in metrics
    assert all(isinstance(metrics[k], float) and math.isfinite(metrics[k]) for k in ("loss", "chrf", "bleu"))
