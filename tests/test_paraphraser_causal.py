"""Decoder-only paraphrasers: tiny random Llama, Gemma 3 and Qwen2 models with tokenizers trained on
the fly, prompts, bans on the continuation, the shared prompt cache, scores, output checks."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math

import pytest
import torch
from conftest import CORPUS, paraphrase_request

from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.demo.standins import CAUSAL_FAMILIES, save_causal
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser.causal_backend import CausalParaphraser
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.decode_stats import DecodeStats
from spanaug.pipeline.paraphraser.paraphrase_decoder import Prepared, SentenceBeams
from spanaug.pipeline.paraphraser.processors import SequenceTable
from spanaug.pipeline.paraphraser.prompts import DEFAULT_EXAMPLES, OutputCheck, build_prompt, load_examples
from spanaug.pipeline.paraphraser.stage import load_paraphraser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = DecodeSettings(model="tiny", beam_size=4, return_top=4, max_new_tokens=6)
#: What the tokenizers are trained on: the corpus and the default prompt's text.
TEXTS = (
    CORPUS * 3
    + [CFG.instruction, CFG.prompt, "Here's a rephrased version:"]
    + [f"{e.word} {e.sentence} {e.rewrite}\n" for e in DEFAULT_EXAMPLES]
)


@pytest.fixture(scope="module", params=CAUSAL_FAMILIES)
def family_model(request, tmp_path_factory):
    out = save_causal(request.param, TEXTS, tmp_path_factory.mktemp(f"tiny_{request.param}"))
    return request.param, str(out)


@pytest.fixture(scope="module")
def causal(family_model):
    _, path = family_model
    return CausalParaphraser.from_pretrained(path, device="cpu", dtype="float32")


_req = paraphrase_request

REQS = [_req(t) for t in CORPUS[:3]]


def _run(paraphraser, reqs, cfg):
    stats = DecodeStats()
    return list(paraphrase(paraphraser, reqs, cfg, stats, progress=False)), stats


def _continuations(beams: list[SentenceBeams], ends: set[int]) -> list[list[int]]:
    """Each beam's ids up to (without) its end token."""
    rows = []
    for sentence in beams:
        for row in sentence.ids.tolist():
            cut = next((i for i, t in enumerate(row) if t in ends), len(row))
            rows.append(row[:cut])
    return rows


def _with_bans(prepared: Prepared, banned: list[list[tuple[int, ...]]]) -> Prepared:
    return dataclasses.replace(prepared, banned=banned, table=SequenceTable.of(banned))


def test_auto_and_hf_load_decoder_only_models_and_static_ct2_refuse_them(family_model):
    _, path = family_model
    for backend in ("auto", "hf"):
        loaded = load_paraphraser(dataclasses.replace(CFG, model=path, backend=backend), "cpu")
        assert isinstance(loaded, CausalParaphraser)
        assert loaded.provenance(CFG).backend == "hf decoder-only"  # as its shards' records name it
    for backend in ("static", "ct2"):
        with pytest.raises(ConfigError, match=f"paraphraser.backend: {backend} decodes seq2seq models only"):
            load_paraphraser(dataclasses.replace(CFG, model=path, backend=backend), "cpu")


def test_bans_hold_in_the_step(causal):
    """Ban tokens and token pairs the unconstrained search produced: no beam holds them."""
    prepared = causal.prepare(REQS, CFG)
    ends = set(causal.search_spec(CFG).end_tokens)
    rows = _continuations(causal.decode(prepared, CFG, 0), ends)
    first = {row[0] for row in rows if row}
    pairs = {tuple(row[i : i + 2]) for row in rows for i in range(len(row) - 1)}
    assert first, "the unconstrained search generated something"
    banned = [[(t,) for t in sorted(first)] + sorted(pairs) for _ in REQS]
    for row in _continuations(causal.decode(_with_bans(prepared, banned), CFG, 0), ends):
        assert not any((t,) in banned[0] for t in row)
        assert not any(tuple(row[i : i + 2]) in pairs for i in range(len(row) - 1))


def test_the_prompt_never_completes_a_banned_sequence(causal):
    """A banned pair (the prompt's last token, the top beam's first token) leaves the top beam as it
    was: only the continuation counts toward a banned sequence."""
    prepared = causal.prepare(REQS, CFG)
    free = causal.decode(prepared, CFG, 0)
    pairs = [[(prepared.enc["input_ids"][s, -1].item(), free[s].ids[0, 0].item())] for s in range(len(REQS))]
    again = causal.decode(_with_bans(prepared, pairs), CFG, 0)
    checked = 0
    for s, (a, b) in enumerate(zip(free, again)):
        top = a.ids[0].tolist()
        if pairs[s][0] not in itertools.pairwise(top):  # the pair inside the continuation is banned there
            assert b.ids[0].tolist() == top
            checked += 1
    assert checked


def test_outputs_never_hold_a_banned_form(causal):
    """Ban the words the unconstrained model wrote: they are gone, and nothing violating is kept."""
    free, _ = _run(causal, REQS, CFG)
    words = sorted({w for r in free for w in r["paraphrase_text"].split() if w.isalpha()})
    reqs = [_req(r["source_text"], constraints={r["source_tokens"][1], *words[:4]}) for r in REQS]
    rows, stats = _run(causal, reqs, CFG)
    assert stats.requests == len(reqs)
    for row in rows:
        assert not violations(row["paraphrase_text"], row["constraints"])
        assert "\n" not in row["paraphrase_text"]


@contextlib.contextmanager
def _searching(causal, **how):
    """``causal`` with its search switches (own_search, fused_search, share_prompt) set for a while."""
    before = {k: getattr(causal, k) for k in how}
    for k, v in how.items():
        setattr(causal, k, v)
    try:
        yield causal
    finally:
        for k, v in before.items():
            setattr(causal, k, v)


def test_the_shared_prompt_cache_decodes_what_generate_decodes_on_the_whole_prompt(causal):
    shared, _ = _run(causal, REQS, CFG)  # the engine's search, its prompt cache shared by the beams
    for how in ({"own_search": False}, {"own_search": False, "share_prompt": False}):
        with _searching(causal, **how):
            whole, _ = _run(causal, REQS, CFG)
        assert [r["paraphrase_text"] for r in shared] == [r["paraphrase_text"] for r in whole], how
        for a, b in zip(shared, whole):
            assert math.isclose(a["paraphrase_score"], b["paraphrase_score"], rel_tol=1e-4, abs_tol=1e-5)


def _beams_agree(a: list[SentenceBeams], b: list[SentenceBeams], ends: set[int], tolerance: float) -> None:
    """The same beams up to their end tokens (what fills a row after its end is no output), and scores."""
    assert _continuations(a, ends) == _continuations(b, ends)
    for x, y in zip(a, b, strict=True):
        assert x.scores == pytest.approx(y.scores, abs=tolerance)


def _free_tokens_banned(causal, prepared: Prepared, cfg: DecodeSettings) -> Prepared:
    """``prepared`` with the first tokens and the token pairs of its unconstrained beams banned."""
    ends = set(causal.search_spec(cfg).end_tokens)
    rows = _continuations(causal.decode(prepared, cfg, 0), ends)
    first = sorted({row[0] for row in rows if row})[:6]
    pairs = sorted({tuple(row[i : i + 2]) for row in rows for i in range(len(row) - 1)})[:20]
    return _with_bans(prepared, [[(t,) for t in first] + pairs for _ in range(len(prepared.limits))])


@pytest.mark.parametrize("width,new_tokens", [(4, 6), (6, 9)])
def test_the_engine_search_decodes_generates_beams_and_scores(causal, width, new_tokens):
    """The engine's beam search (:mod:`.causal_search`) against ``generate``'s on the same prompt
    cache, under bans and per-sentence limits (sentences of different lengths: some leave the batch
    early): in generate's order of operations the same beams and scores; fused (bans before one
    normalisation, two-stage top-k) the same beams, the scores to float rounding."""
    cfg = dataclasses.replace(CFG, beam_size=width, return_top=width, max_new_tokens=new_tokens)
    reqs = [_req(t) for t in CORPUS[:5]]
    ends = set(causal.search_spec(cfg).end_tokens)
    for prepared in (causal.prepare(reqs, cfg), _free_tokens_banned(causal, causal.prepare(reqs, cfg), cfg)):
        assert len(set(prepared.limits)) > 1 or cfg.max_new_tokens
        with _searching(causal, own_search=False):
            reference = causal.decode(prepared, cfg, 0)
        with _searching(causal, own_search=True, fused_search=False):
            _beams_agree(causal.decode(prepared, cfg, 0), reference, ends, 1e-5)
        with _searching(causal, own_search=True, fused_search=True):
            _beams_agree(causal.decode(prepared, cfg, 0), reference, ends, 1e-4)


def test_the_engine_search_agrees_beyond_a_sliding_window(tmp_path):
    """Gemma 3's local layers attend to a window of the last tokens: with a window of 8, shorter than
    every prompt, the engine's mask and positions still give generate's beams."""
    path = save_causal("gemma3", TEXTS, tmp_path / "gemma3")
    config = json.loads((path / "config.json").read_text())
    config["sliding_window"] = 8
    (path / "config.json").write_text(json.dumps(config))
    causal = CausalParaphraser.from_pretrained(path, device="cpu", dtype="float32")
    assert causal.model.config.sliding_window == 8
    prepared = causal.prepare(REQS, CFG)
    with _searching(causal, own_search=False):
        reference = causal.decode(prepared, CFG, 0)
    _beams_agree(causal.decode(prepared, CFG, 0), reference, set(causal.search_spec(CFG).end_tokens), 1e-4)


def test_sampling_gives_num_samples_each_reproducibly(causal):
    cfg = dataclasses.replace(CFG, mode="sample", num_samples=3, top_k=5, seed=3)
    first, stats = _run(causal, REQS, cfg)
    again, _ = _run(causal, REQS, cfg)
    assert [r["paraphrase_text"] for r in first] == [r["paraphrase_text"] for r in again]
    assert stats.requests == len(REQS)
    assert all(sum(r["seed_id"] == q["seed_id"] for r in first) <= 3 for q in REQS)


def test_score_is_the_continuations_mean_nll_given_the_whole_prompt(causal):
    prompt, _ = causal.prompt_for(CFG)
    outputs = ["Abby purchased a car .", "The company bought steel ."]
    reqs = REQS[:2]
    got = causal.score_outputs(reqs, outputs, CFG)
    tok = causal.tokenizer
    end = [tok.eos_token_id] if prompt.chat else tok("\n", add_special_tokens=False)["input_ids"][-1:]
    for req, out, score in zip(reqs, outputs, got):
        head = tok(prompt.head, add_special_tokens=prompt.head_specials)["input_ids"]
        query = tok(causal.queries([req], CFG)[0], add_special_tokens=False)["input_ids"]
        answer = tok(prompt.lead + out, add_special_tokens=False)["input_ids"] + end
        ids = torch.tensor([head + query + answer])
        with torch.inference_mode():
            logp = torch.log_softmax(causal.model(input_ids=ids).logits[0, :-1].float(), -1)
        targets = ids[0, 1:]
        token_logp = logp.gather(-1, targets[:, None])[-len(answer) :, 0]
        assert math.isclose(score, -token_logp.mean().item(), rel_tol=1e-4)


def test_an_output_ends_at_its_first_newline(causal):
    ids = causal.tokenizer("Abby bought\nWord: x", add_special_tokens=False)["input_ids"]
    texts = causal.texts([SentenceBeams(torch.tensor([ids]), [0.0])])
    assert texts[0][0][0] == "Abby bought"
    newline_tokens = [i for i in causal.search_spec(CFG).end_tokens if "\n" in causal.tokenizer.decode([i])]
    assert newline_tokens, "every token holding a newline ends an output"
    assert causal.tokenizer.eos_token_id in causal.search_spec(CFG).end_tokens


def test_the_default_prompt_holds_instruction_examples_and_the_query(family_model):
    family, path = family_model
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    prompt = build_prompt(CFG, tokenizer)
    text = prompt.text("Abby bought a car .", "bought")
    assert text.count("Sentence: ") == len(DEFAULT_EXAMPLES) + 1
    assert "Word: bought\nSentence: Abby bought a car ." in text
    assert CFG.instruction in prompt.head and "Abby" not in prompt.head
    if family == "qwen2":  # ChatML: examples as turns, the answer after the assistant's turn opens
        assert prompt.chat and text.endswith("<|im_start|>assistant\n") and prompt.lead == ""
        assert f"<|im_start|>assistant\n{DEFAULT_EXAMPLES[0].rewrite}<|im_end|>" in text
        plain = build_prompt(dataclasses.replace(CFG, prompt_format="plain"), tokenizer)
        assert not plain.chat and plain.text("s", "w").endswith("Rewrite:")
    else:
        assert not prompt.chat and text.endswith("Rewrite:") and prompt.lead == " "
        assert f"Rewrite: {DEFAULT_EXAMPLES[0].rewrite}\n\n" in text
        with pytest.raises(ConfigError, match=r"paraphraser\.prompt_format: chat"):
            build_prompt(dataclasses.replace(CFG, prompt_format="chat"), tokenizer)


def test_prompt_settings_are_checked(tmp_path, family_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(family_model[1])
    with pytest.raises(ConfigError, match=r"no \{sentence\} placeholder"):
        build_prompt(dataclasses.replace(CFG, prompt="Word: {word}"), tokenizer)
    shots = tmp_path / "shots.jsonl"
    shots.write_text(json.dumps({"word": "big", "sentence": "A big dog.", "rewrite": "A large dog."}) + "\n\n")
    cfg = dataclasses.replace(CFG, few_shot=str(shots), instruction="", prompt="In: {sentence}\nOut:")
    prompt = build_prompt(dataclasses.replace(cfg, prompt_format="plain"), tokenizer)
    assert prompt.head.endswith("In: A big dog.\nOut: A large dog.\n\n") and prompt.query == "In: {sentence}\nOut:"
    assert load_examples(shots)[0].word == "big"
    shots.write_text('{"word": "big", "sentence": "A big dog."}\n')
    with pytest.raises(InputError, match="line 1"):
        load_examples(shots)


def _check() -> OutputCheck:
    class Plain:
        chat_template = None

    return OutputCheck(build_prompt(CFG, Plain()))


@pytest.mark.parametrize(
    ("text", "kept", "why"),
    [
        ("Abby purchased a car last week .", "Abby purchased a car last week .", "kept"),
        ("Rewrite: Abby purchased a car .", "Abby purchased a car .", "stripped"),
        ("Sure enough, Abby purchased a car .", "Sure enough, Abby purchased a car .", "kept"),
        ("Here's a rephrased version of the sentence:", None, "chatter"),
        ("Sure! Abby purchased a car .", None, "chatter"),
        ("Abby bought a car from Robin last week.", None, "copy"),
        ("Sentence: Abby bought a car from Robin last week .", None, "copy"),
        ("Abby purchased a car . Word: car", None, "echo"),
        (DEFAULT_EXAMPLES[1].rewrite, None, "echo"),
        ("Abby purchased a car .\nWord: x", "Abby purchased a car .", "kept"),
    ],
)
def test_output_check(text, kept, why):
    assert _check()(text, CORPUS[0]) == (kept, why)


def test_refused_outputs_are_counted_never_output(causal, monkeypatch):
    chatter = "Here's a rephrased version:"
    monkeypatch.setattr(causal, "texts", lambda beams, tools=None: [[(chatter, 0.0)] * 4 for _ in beams])
    rows, stats = _run(causal, REQS, CFG)
    assert (
        rows == [] and stats.chatter_dropped == CFG.beam_size * len(REQS) and stats.requests_without_output == len(REQS)
    )


@pytest.mark.parametrize("search", ["engine", "generate", "sample"])
def test_cpu_batches_keep_to_the_decoder_only_budget(causal, search):
    """The engine's beam search takes the larger budget (sentences done leave its batch); generate's
    beam search and sampling the smaller one (a batch runs until its slowest sentence is done)."""
    from spanaug.pipeline.paraphraser.causal_backend import CPU_BATCH_TOKENS, CPU_SEARCH_BATCH_TOKENS

    reqs = [_req(t) for t in CORPUS * 40]
    cfg = dataclasses.replace(CFG, beam_size=20, return_top=3)
    if search == "sample":
        cfg = dataclasses.replace(cfg, mode="sample", num_samples=20, top_k=5)
    budget = CPU_SEARCH_BATCH_TOKENS if search == "engine" else CPU_BATCH_TOKENS
    lengths = causal.source_lengths([r["source_text"] for r in reqs])
    with _searching(causal, own_search=search != "generate"):
        batches = causal.batches(reqs, cfg)
    assert sorted(i for b in batches for i in b) == list(range(len(reqs)))
    assert len(batches) > 1
    sizes = [len(batch) * max(lengths[i] for i in batch) * 20 for batch in batches]
    assert all(size <= budget for batch, size in zip(batches, sizes) if len(batch) > 1)
    assert max(sizes) > budget // 2  # the budget is filled, not a smaller one


@pytest.mark.parametrize("prompt_format", ["auto", "plain"])
def test_the_paraphrase_command_takes_the_prompt_settings_as_the_workflow_passes_them(
    family_model, tmp_path, prompt_format
):
    """The rules pass a config section as options (newlines and braces in the prompt quoted)."""
    import shlex

    from spanaug.cli.main import main
    from spanaug.core import artifacts
    from spanaug.workflow.plan.options import flags

    _, path = family_model
    requests = tmp_path / "requests.parquet"
    rows = [{**r, "frame": "F", "lexical_unit": "buy.v", "seed_trigger": "x", "iteration": 1} for r in REQS]
    with artifacts.open_writer(requests, artifacts.REQUESTS, {"source": "test"}) as writer:
        writer.write([{**r, "source_frame_elements": None} for r in rows])
    cfg = dataclasses.replace(CFG, model=None, prompt_format=prompt_format)
    options = shlex.split(flags(dataclasses.asdict(cfg), skip=("model", "train")))
    out = tmp_path / "paraphrases.parquet"
    args = ["paraphrase", "--requests", str(requests), "--out", str(out), "--model", path, "--device", "cpu"]
    assert main([*args, *options]) == 0
    written = artifacts.read_table(out, artifacts.PARAPHRASES).to_pylist()
    assert written and {r["seed_id"] for r in written} <= {r["seed_id"] for r in REQS}


def test_a_decoder_only_model_is_refused_on_cuda_when_graphs_are_required(family_model, monkeypatch):
    """It decodes with generate, never with the static engine's graphs: with require_cuda_graphs the job
    stops before the weights load, rather than decoding without the graphs it was told to require."""
    import spanaug.pipeline.paraphraser.stage as stage

    _, path = family_model
    monkeypatch.setattr(stage, "choose_device", lambda device: torch.device("cuda"))
    monkeypatch.setattr(CausalParaphraser, "from_pretrained", lambda *a, **k: pytest.fail("the weights loaded"))
    with pytest.raises(ConfigError, match="require_cuda_graphs: false"):
        load_paraphraser(dataclasses.replace(CFG, model=path, require_cuda_graphs=True), "cuda")
