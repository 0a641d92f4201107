"""The static backend (the GPU decoding engine) against transformers' generate (the hf backend).

Random models of every family (T5, mT5, BART on byte-level BPE and on WordPiece, mBART, Pegasus,
Marian),
tokenizers trained on the fly, on the CPU in float32: the engine's beams and scores must be
generate's, under per-sentence constraints and length limits, with beams that end early (EOS
made likelier) and beams that run to their limit.
"""

import dataclasses

import pytest
import torch
from conftest import CORPUS

from spanaug.core.config import DecodeSettings
from spanaug.demo.standins import FAMILIES, Size, build_model, train_tokenizer
from spanaug.pipeline.paraphraser import decoder_step
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser
from spanaug.pipeline.paraphraser.processors import TensorBannedSequences
from spanaug.pipeline.paraphraser.static_backend import StaticParaphraser, UnsupportedModel

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CPU = torch.device("cpu")
SMALL = Size(d_model=64, layers=2, heads=4, ffn=128)


def _requests():
    # Each sentence bans two of its own words (and their case variants), so every beam is constrained.
    return [{"source_text": t, "constraints": t.split()[1:3]} for t in CORPUS]


@pytest.fixture(scope="module")
def family_models():
    built = {}

    def get(family, eos_boost=1.0):
        key = (family, eos_boost)
        if key not in built:
            tok = train_tokenizer(FAMILIES[family], CORPUS * 3, 160, family=family.split("-")[0])
            model = build_model(family, tok, SMALL)
            with torch.no_grad():  # random weights almost never end a beam: make EOS likelier
                model.lm_head.weight[tok.eos_token_id] *= eos_boost
            built[key] = (model, tok)
        return built[key]

    return get


@pytest.mark.parametrize("family", list(FAMILIES))
def test_decoder_step_matches_the_model_forward(family_models, family):
    model, tok = family_models(family)
    enc = tok(CORPUS[:3], padding=True, return_tensors="pt")
    decoder_ids = torch.randint(3, len(tok), (3, 7), generator=torch.Generator().manual_seed(1))
    step = decoder_step.for_model(model)
    assert decoder_step.check_against_model(step, enc["input_ids"], enc["attention_mask"], decoder_ids) < 1e-5


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize(("beams", "eos_boost"), [(5, 1.0), (4, 1.6), (9, 2.0)])
def test_beams_and_scores_equal_generate(family_models, family, beams, eos_boost):
    model, tok = family_models(family, eos_boost)
    cfg = DecodeSettings(beam_size=beams, return_top=beams)
    requests = _requests()
    expected = HFParaphraser(model, tok, CPU, torch.float32).decode_batch(requests, cfg, 0)
    got = StaticParaphraser(model, tok, CPU, torch.float32).decode_batch(requests, cfg, 0)
    assert [[text for text, _ in beams_] for beams_ in got] == [[text for text, _ in beams_] for beams_ in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [score for _, score in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-5)


#: EOS boosts tried until a random T5 ends some beams early and runs others to their limit (random
#: weights differ between torch versions, so no one boost does it everywhere).
BOOSTS = (1.3, 1.6, 2.0, 2.5, 3.0, 4.0)
LIMIT = 12


@pytest.fixture(scope="module")
def mixed_endings(family_models):
    """A T5 whose beams end both ways under DecodeSettings(max_new_tokens=LIMIT), beam 9."""
    cfg = DecodeSettings(beam_size=9, return_top=9, max_new_tokens=LIMIT)
    for boost in BOOSTS:
        model, tok = family_models("t5", boost)
        para = StaticParaphraser(model, tok, CPU, torch.float32)
        tokens = torch.stack([s.ids for s in para.decode(para.prepare(_requests(), cfg), cfg, 0)])
        ended = (tokens[:, :, 1:] == tok.eos_token_id).any(-1)  # an EOS among the new tokens
        if ended.any() and not ended.all():
            return model, tok, cfg
    pytest.fail(f"no EOS boost of {BOOSTS} made some beams end early and others run to their limit")


def test_beams_equal_generate_when_some_end_early_and_some_at_their_limit(mixed_endings):
    model, tok, cfg = mixed_endings
    expected = HFParaphraser(model, tok, CPU, torch.float32).decode_batch(_requests(), cfg, 0)
    got = StaticParaphraser(model, tok, CPU, torch.float32).decode_batch(_requests(), cfg, 0)
    assert [[t for t, _ in b] for b in got] == [[t for t, _ in b] for b in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [s for _, s in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-5)


def test_finished_sentences_leave_the_batch(mixed_endings):
    model, tok, _ = mixed_endings
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    rows_per_step = []
    real_step = para.step.__class__.__call__

    def counting(self, tokens, t, state):
        rows_per_step.append(tokens.shape[0])
        return real_step(self, tokens, t, state)

    cfg = DecodeSettings(beam_size=4, return_top=4)
    para.decode_batch(_requests(), cfg, 0)  # the first batch also checks the step against the model
    para.step.__class__.__call__ = counting
    try:
        para.decode_batch(_requests(), cfg, 0)
    finally:
        para.step.__class__.__call__ = real_step
    assert rows_per_step[0] == len(CORPUS) * 4
    assert rows_per_step[-1] < rows_per_step[0]
    assert rows_per_step == sorted(rows_per_step, reverse=True)


def test_fused_constraints_give_the_same_beams(family_models, monkeypatch):
    """On GPUs the bans go before the one log-softmax: the same renormalised distribution."""
    model, tok = family_models("bart", 1.6)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    cfg = DecodeSettings(beam_size=5, return_top=5)
    plain = para.decode_batch(_requests(), cfg, 0)
    settings = para.search_settings(cfg)
    assert not settings.fuse_constraints  # on CPU, generate's order
    monkeypatch.setattr(para, "search_settings", lambda c: dataclasses.replace(settings, fuse_constraints=True))
    fused = para.decode_batch(_requests(), cfg, 0)
    assert [[t for t, _ in b] for b in fused] == [[t for t, _ in b] for b in plain]
    for a, b in zip(fused, plain):
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5)


@pytest.mark.parametrize("family", ["t5", "bart", "marian"])
@pytest.mark.parametrize("graphed", [False, True], ids=["eager", "graph-shaped"])
def test_selection_from_logits_gives_the_same_beams(family_models, monkeypatch, family, graphed):
    """On GPUs each beam's best continuations are its best banned logits, shifted by its score and
    the row's logsumexp (no log-softmax over the vocabulary): the same beams and scores, eagerly
    and as a graph replays the step with the cache read through the ancestry (the GPU's path)."""
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    model, tok = family_models(family, 1.6)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    cfg = DecodeSettings(beam_size=5, return_top=5)
    plain = para.decode_batch(_requests(), cfg, 0)
    settings = dataclasses.replace(para.search_settings(cfg), fuse_constraints=True, two_stage_topk=True)
    monkeypatch.setattr(para, "search_settings", lambda c: settings)
    if graphed:
        para.ancestry = True
        monkeypatch.setattr(para, "runner", lambda state, cfg: GraphRunner(para.step, state, bucket=4, capture=False))
    shifted = para.decode_batch(_requests(), cfg, 0)
    assert [[t for t, _ in b] for b in shifted] == [[t for t, _ in b] for b in plain]
    for a, b in zip(shifted, plain):
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5)


def test_processor_select_keeps_each_sentences_bans():
    banned = [[(5,), (7, 8)], [(9,)], [(3, 4, 6)]]
    full = TensorBannedSequences(banned, vocab_size=20)
    kept = full.select(torch.tensor([2, 0]))
    history = torch.tensor([[1, 3, 4], [1, 1, 7]])
    scores = kept(history, torch.zeros(2, 20))
    assert torch.isinf(scores[0, 6]) and not torch.isinf(scores[0, 5])
    assert torch.isinf(scores[1, 5]) and torch.isinf(scores[1, 8]) and not torch.isinf(scores[1, 9])


def test_other_families_are_refused(family_models):
    from transformers import GPT2Config, GPT2LMHeadModel

    with pytest.raises(UnsupportedModel, match="gpt2"):
        decoder_step.for_model(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2)))


def test_auto_falls_back_to_hf_where_the_engine_cannot_decode(tiny_paraphraser, monkeypatch, caplog):
    """backend auto on CUDA picks static; a model it cannot decode goes to hf with a warning, while
    an explicit backend: static is a config error naming the setting."""
    from spanaug.core.errors import ConfigError
    from spanaug.pipeline.paraphraser import stage

    monkeypatch.setattr(stage, "resolve_backend", lambda backend, device: "static")

    def refuse(*args, **kwargs):
        raise UnsupportedModel("no static decoder step for model type 'x'")

    monkeypatch.setattr(stage.StaticParaphraser, "from_pretrained", refuse)
    loaded = stage.load_paraphraser(DecodeSettings(model=tiny_paraphraser, dtype="float32"), "cpu")
    assert type(loaded) is HFParaphraser
    assert "hf instead of static" in caplog.text
    with pytest.raises(ConfigError, match=r"paraphraser\.backend: static: no static decoder step"):
        stage.load_paraphraser(DecodeSettings(model=tiny_paraphraser, backend="static"), "cpu")


@pytest.mark.parametrize(("attention", "chunk"), [("matmul", 0), ("sdpa", 0), ("matmul", 6)])
def test_two_stage_selection_and_either_attention_give_the_same_beams(family_models, monkeypatch, attention, chunk):
    """GPUs select each beam's best continuations first (by chunks of the vocabulary) and may
    attend with torch's fused kernels: the same beams as one selection over all beams' tokens with
    the default attention. (Chunks of 6 columns split the 160-token vocabulary into 26 and a tail.)"""
    model, tok = family_models("t5", 1.6)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    cfg = DecodeSettings(beam_size=6, return_top=6)
    plain = para.decode_batch(_requests(), cfg, 0)
    settings = dataclasses.replace(para.search_settings(cfg), two_stage_topk=True, topk_chunk=chunk)
    monkeypatch.setattr(para, "search_settings", lambda c: settings)
    monkeypatch.setattr(para.step, "attention", attention)
    two_stage = para.decode_batch(_requests(), cfg, 0)
    assert [[t for t, _ in b] for b in two_stage] == [[t for t, _ in b] for b in plain]
    for a, b in zip(two_stage, plain):
        assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5)


def test_chunked_selection_with_a_forced_first_token_picks_real_tokens(family_models, monkeypatch):
    """A forced first token (mBART's language) leaves one finite logit a row, so most of the first
    step's 2W candidates tie at -inf; chunked selection over a vocabulary with a tail (160 = 26 x 6
    + 4) must fill them with real tokens, as one selection over the vocabulary does."""
    model, tok = family_models("bart", 1.6)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    cfg = DecodeSettings(beam_size=6, return_top=6)
    words = [i for i in tok.get_vocab().values() if i not in tok.all_special_ids]
    forced = max(words, key=lambda i: (len(tok.decode([i]).strip()), i))  # a whole word, e.g. " the"
    base = dataclasses.replace(para.search_settings(cfg), forced_bos_token=forced, two_stage_topk=True)
    beams = {}
    for chunk in (0, 6):
        monkeypatch.setattr(para, "search_settings", lambda c, chunk=chunk: dataclasses.replace(base, topk_chunk=chunk))
        beams[chunk] = para.decode_batch(_requests(), cfg, 0)
    assert [[t for t, _ in b] for b in beams[6]] == [[t for t, _ in b] for b in beams[0]]
    word = tok.decode([forced]).strip()
    assert all(t.strip().startswith(word) for b in beams[6] for t, _ in b)


@pytest.mark.parametrize("family", ["t5", "bart", "pegasus", "marian"])
def test_the_graphed_step_gives_generates_beams(family_models, mixed_endings, monkeypatch, family):
    """What a CUDA graph replays (device-side position, a fixed span with later positions masked,
    the beam reorder inside the step, sentences leaving only at span boundaries), run eagerly on
    the CPU: generate's beams and scores, with short buckets so that several spans and leavings occur."""
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    model, tok, cfg = mixed_endings if family == "t5" else (*family_models(family, 1.6), DecodeSettings(beam_size=5))
    expected = HFParaphraser(model, tok, CPU, torch.float32).decode_batch(_requests(), cfg, 0)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    spans = []

    def graph_runner(state, cfg):
        runner = GraphRunner(para.step, state, bucket=4, capture=False)
        span = runner.span
        runner.span = lambda s: spans.append(span(s)) or spans[-1]
        return runner

    monkeypatch.setattr(para, "runner", graph_runner)
    got = para.decode_batch(_requests(), cfg, 0)
    assert len(set(spans)) > 2
    assert [[t for t, _ in b] for b in got] == [[t for t, _ in b] for b in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [s for _, s in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-5)


@pytest.mark.parametrize("family", ["t5", "bart", "pegasus", "marian"])
@pytest.mark.parametrize("graphed", [False, True], ids=["eager", "graph-shaped"])
def test_reading_the_cache_through_the_beam_ancestry_gives_generates_beams(
    family_models, mixed_endings, monkeypatch, family, graphed
):
    """The cache GPUs decode with: never reordered, read through the beam ancestry table (the
    reference attention on the CPU, the Triton kernel on CUDA), eagerly and as a graph replays it,
    sentences leaving included: generate's beams and scores."""
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    model, tok, cfg = mixed_endings if family == "t5" else (*family_models(family, 1.6), DecodeSettings(beam_size=5))
    expected = HFParaphraser(model, tok, CPU, torch.float32).decode_batch(_requests(), cfg, 0)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    para.ancestry = True
    states = []
    start = para.step.start
    monkeypatch.setattr(para.step, "start", lambda *a, **k: states.append(start(*a, **k)) or states[-1])
    moves, keeps = [], []
    gather, keep = decoder_step.StepState.gather_into_spare, decoder_step.StepState.keep
    monkeypatch.setattr(decoder_step.StepState, "gather_into_spare", lambda *a: moves.append(a[2]) or gather(*a))
    monkeypatch.setattr(decoder_step.StepState, "keep", lambda *a: keeps.append(a[2]) or keep(*a))
    if graphed:
        monkeypatch.setattr(para, "runner", lambda state, cfg: GraphRunner(para.step, state, bucket=4, capture=False))
    got = para.decode_batch(_requests(), cfg, 0)
    searched = [s for s in states if s.beams == cfg.beam_size]  # not the load-time self-check's
    assert searched and all(s.ancestry is not None for s in searched)
    assert moves == keeps  # the cache moved only when sentences left the batch
    assert [[t for t, _ in b] for b in got] == [[t for t, _ in b] for b in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [s for _, s in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-5)


def test_done_sentences_left_in_the_batch_keep_their_beams(mixed_endings, monkeypatch):
    """With CUDA graphs, sentences leave only once a share of the batch is done, and a done one may
    run on for many steps: the beams are still generate's when no sentence leaves before the whole
    batch is done."""
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    model, tok, cfg = mixed_endings
    expected = HFParaphraser(model, tok, CPU, torch.float32).decode_batch(_requests(), cfg, 0)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    shrinks = []

    def graph_runner(state, cfg):
        runner = GraphRunner(para.step, state, bucket=1, capture=False)
        runner.worth_shrinking = lambda done, sentences: shrinks.append((done, sentences)) or done == sentences
        return runner

    monkeypatch.setattr(para, "runner", graph_runner)
    got = para.decode_batch(_requests(), cfg, 0)
    assert any(done < sentences for done, sentences in shrinks)  # some were done early and stayed
    assert [[t for t, _ in b] for b in got] == [[t for t, _ in b] for b in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [s for _, s in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("family", ["t5", "mt5", "bart", "mbart", "pegasus"])
@pytest.mark.parametrize(
    ("ancestry", "chunk"),
    [(None, None), (False, None), (None, 4)],
    ids=["ancestry-kernel", "reordered-cache", "ancestry-kernel-chunks"],
)
def test_on_cuda_graphs_give_generates_beams_in_float32(family_models, family, ancestry, chunk):
    """The engine as backend auto runs it on a GPU (CUDA graphs of whole steps, the cache read
    through the beam ancestry by the Triton kernel, fused constraints, two-stage selection), and
    with the cache reordered instead, in float32 against generate on the same card. The test
    vocabulary (160) is too small for chunked selection at its default width: chunks of 4 columns
    force it. The graphs must really be captured and replayed: the eager fallback of a failed
    capture gives the same beams, so the counts say which ran."""
    model, tok = family_models(family, 1.6)
    cuda = torch.device("cuda")
    cfg = DecodeSettings(beam_size=5, return_top=5)
    expected = HFParaphraser(model, tok, cuda, torch.float32).decode_batch(_requests(), cfg, 0)
    para = StaticParaphraser(model, tok, cuda, torch.float32)
    para.ancestry, para.topk_chunk = ancestry, chunk
    assert para.uses_ancestry(cfg) is (ancestry is None)
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    state = para.step.start(torch.zeros(1, 1, model.config.d_model, device=cuda), torch.ones(1, 1, device=cuda), 5, 4)
    assert isinstance(para.runner(state, cfg), GraphRunner)
    para.begin(cfg)
    try:
        got = para.decode_batch(_requests(), cfg, 0)
    finally:
        model.to("cpu")
    assert para.graph_counts.captures > 0 and para.graph_counts.fallbacks == 0
    engine = para.provenance(cfg)
    assert (engine.decode_path, engine.device) == ("graphs", torch.cuda.get_device_name())
    assert [[t for t, _ in b] for b in got] == [[t for t, _ in b] for b in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [s for _, s in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("ancestry", [None, False], ids=["ancestry-kernel", "reordered-cache"])
def test_on_cuda_sentences_leaving_the_batch_are_captured_anew(mixed_endings, monkeypatch, ancestry):
    """A sentence that leaves the batch changes the rows: the graphs that follow are new captures,
    none fails, and the beams are still generate's."""
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    model, tok, cfg = mixed_endings
    cuda = torch.device("cuda")
    try:
        expected = HFParaphraser(model, tok, cuda, torch.float32).decode_batch(_requests(), cfg, 0)
        para = StaticParaphraser(model, tok, cuda, torch.float32)
        para.ancestry = ancestry
        at_leaving = []

        def runner(state, cfg):
            made = GraphRunner(para.step, state, bucket=1, counts=para.graph_counts)
            made.worth_shrinking = lambda done, sentences: done > 0  # every done sentence leaves at once
            keep = made.keep
            made.keep = lambda sentences, upto: at_leaving.append(para.graph_counts.captures) or keep(sentences, upto)
            return made

        monkeypatch.setattr(para, "runner", runner)
        para.begin(cfg)
        got = para.decode_batch(_requests(), cfg, 0)
    finally:
        model.to("cpu")
    assert at_leaving, "no sentence left the batch"
    assert para.graph_counts.captures > at_leaving[0]  # graphs captured anew after sentences left
    assert para.graph_counts.fallbacks == 0
    assert [[t for t, _ in b] for b in got] == [[t for t, _ in b] for b in expected]
    for got_beams, expected_beams in zip(got, expected):
        assert [s for _, s in got_beams] == pytest.approx([s for _, s in expected_beams], abs=1e-3)


def test_the_log_says_how_the_engine_decodes(family_models, caplog):
    """A job's log names the engine's path once (graphs or eager steps, the ancestry kernel or the
    reordered cache): on the CPU, eager steps and a cache reordered each step."""
    import logging

    model, tok = family_models("t5")
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    with caplog.at_level(logging.INFO, logger="spanaug.pipeline.paraphraser.static_backend"):
        para.decode_batch(_requests(), DecodeSettings(beam_size=3), 0)
        para.decode_batch(_requests(), DecodeSettings(beam_size=3), 0)
    lines = [r.getMessage() for r in caplog.records if "static backend: eager" in r.getMessage()]
    assert lines == ["static backend: eager steps, cache reordered each step"]


class _Graph:
    """A captured graph's stand-in on the CPU: a replay runs the recorded step again."""

    def __init__(self, replay):
        self.replay = replay


def _capturing_runners(para, monkeypatch, failures: dict[int, Exception]):
    """Make ``para`` run its batches on GraphRunners that capture as on CUDA, with the graphs
    stood in for on the CPU (:func:`conftest.stub_captures` replaces the failure handling; this
    replaces only the recording): the ``n``-th runner's first capture raises ``failures[n]``.
    Returns the runners made."""
    from spanaug.pipeline.paraphraser.decoder_step import Position
    from spanaug.pipeline.paraphraser.step_runner import GraphRunner

    made = []

    def runner(state, cfg):
        r = GraphRunner(
            para.step, state, bucket=4, capture=False, counts=para.graph_counts, require=cfg.require_cuda_graphs
        )
        r.capture, number = True, len(made)
        made.append(r)
        r._new_generation = lambda: setattr(r, "graphs", {})

        def warm_up(search_step):
            search_step(Position(r.t, r.span_now))
            r.warm = True

        def record(search_step):
            if number in failures and not r.graphs:
                raise failures.pop(number)
            span = r.span_now
            return _Graph(lambda: search_step(Position(r.t, span)))

        r._warm_up, r._record = warm_up, record
        return r

    monkeypatch.setattr(para, "runner", runner)
    return made


def _texts(decoded):
    return [[t for t, _ in beams] for beams in decoded]


def test_a_failed_capture_is_its_runners_counted_and_logged(mixed_endings, monkeypatch, caplog):
    """A capture that fails leaves its own batch to decode eagerly (the same beams), is counted and
    logged, and the next batch's runner captures again: graphs are not turned off for the process."""
    model, tok, cfg = mixed_endings
    expected = HFParaphraser(model, tok, CPU, torch.float32).decode_batch(_requests(), cfg, 0)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    runners = _capturing_runners(
        para, monkeypatch, {0: RuntimeError("operation not permitted when stream is capturing")}
    )
    para.begin(cfg)
    first = para.decode_batch(_requests(), cfg, 0)
    after_first = para.graph_counts.captures
    second = para.decode_batch(_requests(), cfg, 1)
    assert (para.graph_counts.fallbacks, after_first) == (1, 0)
    assert not runners[0].capture and runners[1].capture
    assert para.graph_counts.captures > 0  # the second batch's runner captured
    assert _texts(first) == _texts(second) == _texts(expected)
    assert "CUDA graph capture failed (operation not permitted" in caplog.text
    engine = para.provenance(cfg)
    assert (engine.decode_path, engine.cuda_graph_fallbacks) == ("fallback", 1)
    assert engine.cuda_graph_captures == para.graph_counts.captures


@pytest.mark.parametrize("wrapped", [False, True], ids=["oom", "oom-then-capture-error"])
def test_running_out_of_memory_in_a_capture_splits_the_batch(mixed_endings, monkeypatch, caplog, wrapped):
    """Out of memory inside a capture is not a capture failure: the runner drops its graphs and the
    error reaches the batch-splitting path, whose halves capture and give generate's beams. (A
    capture that ran out can end in the capture's own error as the graph closes: the same.)"""
    from spanaug.core.oom import OutOfMemoryError

    model, tok, cfg = mixed_endings
    expected = paraphrase(HFParaphraser(model, tok, CPU, torch.float32), _requests(), cfg, progress=False)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    error: Exception = OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    if wrapped:
        try:
            try:
                raise error
            except OutOfMemoryError:
                raise RuntimeError("CUDA error: operation failed due to a previous error during capture")  # noqa: B904
        except RuntimeError as closing:
            error = closing
    runners = _capturing_runners(para, monkeypatch, {0: error})
    got = list(paraphrase(para, _requests(), cfg, progress=False))
    assert "ran out of GPU memory: split and retried as 2 parts" in caplog.text
    assert len(runners) >= 3 and runners[0].graphs == {} and runners[0].pool is None
    assert para.graph_counts.fallbacks == 0 and para.graph_counts.captures > 0
    assert para.provenance(cfg).decode_path == "eager"  # on the CPU; no fallback
    assert got == list(expected)


def test_with_graphs_required_a_failed_capture_stops_the_job(mixed_endings, monkeypatch):
    from spanaug.core.errors import ConfigError

    model, tok, cfg = mixed_endings
    cfg = dataclasses.replace(cfg, require_cuda_graphs=True)
    para = StaticParaphraser(model, tok, CPU, torch.float32)
    _capturing_runners(para, monkeypatch, {0: RuntimeError("capture not supported")})
    with pytest.raises(ConfigError, match=r"paraphraser\.require_cuda_graphs: a CUDA graph capture failed"):
        para.decode_batch(_requests(), cfg, 0)
    assert para.graph_counts.fallbacks == 1


def test_graphs_required_refuses_a_cuda_job_without_them():
    """On CUDA, require_cuda_graphs takes the static backend's beam search; on the CPU it says nothing."""
    from types import SimpleNamespace

    from spanaug.core.errors import ConfigError
    from spanaug.pipeline.paraphraser.stage import check_graphs_required

    required = DecodeSettings(model="m", require_cuda_graphs=True)
    for backend in ("hf", "ct2"):
        with pytest.raises(ConfigError, match=rf"require_cuda_graphs: paraphraser\.backend is {backend}"):
            check_graphs_required(SimpleNamespace(device=torch.device("cuda"), backend=backend), required)
    static = SimpleNamespace(device=torch.device("cuda"), backend="static")
    check_graphs_required(static, required)
    with pytest.raises(ConfigError, match="mode is sample"):
        check_graphs_required(static, dataclasses.replace(required, mode="sample"))
    check_graphs_required(SimpleNamespace(device=CPU, backend="hf"), required)
    with pytest.raises(ConfigError, match="require_cuda_graphs is true but cuda_graphs is false"):
        DecodeSettings(require_cuda_graphs=True, cuda_graphs=False)


def test_the_step_is_checked_at_load_on_a_padded_graph_shaped_batch(tiny_paraphraser, monkeypatch, caplog):
    """The engine checks its step against the model when it loads, eagerly and as graphs feed it,
    on a padded batch: a model whose step disagrees is refused before any sentence is decoded, and
    backend auto loads hf instead."""
    from spanaug.pipeline.paraphraser import stage

    calls = []
    real = decoder_step.check_against_model

    def spy(step, ids, mask, decoder_ids, span=None, ancestry=False):
        calls.append((span, bool((mask == 0).any())))
        return real(step, ids, mask, decoder_ids, span=span, ancestry=ancestry)

    monkeypatch.setattr(decoder_step, "check_against_model", spy)
    StaticParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    assert calls == [(None, True), (16, True)]
    monkeypatch.setattr(decoder_step, "check_against_model", lambda *a, **k: 0.5)
    with pytest.raises(UnsupportedModel, match="differs from the model's own forward pass"):
        StaticParaphraser.from_pretrained(tiny_paraphraser, device="cpu", dtype="float32")
    monkeypatch.setattr(stage, "resolve_backend", lambda backend, device: "static")
    loaded = stage.load_paraphraser(DecodeSettings(model=tiny_paraphraser, dtype="float32"), "cpu")
    assert type(loaded) is HFParaphraser and loaded.backend == "hf"
    assert "hf instead of static: the static decoder step differs" in caplog.text
