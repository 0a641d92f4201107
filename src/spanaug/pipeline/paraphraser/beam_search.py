"""Beam search over a :class:`~.decoder_step.DecoderStep`, with transformers' semantics.

The search is transformers' vectorised beam search (``GenerationMixin._beam_search``, transformers
5.x) step for step: ``2 x beams`` candidates per sentence from the running beams' accumulated
log-probabilities, candidates that end (EOS or the sentence's own length limit) among the first
``beams`` become finished hypotheses scored ``sum log p / length ** length_penalty``, the
``beams`` best unfinished candidates run on, and a sentence stops taking hypotheses once all its
beams are finished (``early_stopping=True``) or no running beam can beat its worst finished one.
The same constraints (a :class:`~.processors.TensorBannedSequences`) and the same per-sentence
length limits apply, so on the same model the beams and scores are ``generate``'s.

What differs is what it keeps and moves:

* the cross-attention state is per sentence and never reordered (see :mod:`.decoder_step`);
* a beam reorder gathers the beams' ancestry table (on GPUs, :mod:`.indirect_attention`), or each
  layer's self-attention history in one gather;
* a whole step (the decoder, the constraints, the selection and the bookkeeping of finished
  hypotheses) updates the search's tensors in place and reads its position from the runner, so
  that a runner can replay it from a CUDA graph (:mod:`.step_runner`): on a GPU the host then
  launches one graph a step instead of several hundred kernels;
* a sentence whose hypotheses can no longer change leaves the batch, so the step shrinks as
  sentences finish (``generate`` keeps decoding them until the whole batch is done); this is
  checked every ``sync_every`` steps (every graph bucket when the step is replayed from CUDA
  graphs), the only host synchronisation of the loop; a sentence that is done but still in the
  batch takes no new hypotheses, so its beams are the same whenever it leaves;
* on ``fuse_constraints`` the bans are applied to the logits before the one log-softmax, which is
  the renormalised distribution the processor computes after it, one pass over the vocabulary
  fewer (used on GPUs; on CPU the order is ``generate``'s, so scores agree to the last bit); with
  ``two_stage_topk`` too (GPUs), no log-softmax is written at all: a row's log-probabilities are
  its logits shifted by their logsumexp, so each beam's best continuations are its best logits,
  and only those are scored; with ``topk_chunk`` too, a beam's best tokens are found among the
  vocabulary's chunks with the largest maxima (:mod:`.topk`).

One case is left out on purpose: a sentence that reaches its length limit with fewer than
``beams`` finite hypotheses (constraints that ban almost everything) stops there. ``generate``
would keep it in the batch and fill its empty slots with hypotheses of the beams it had just
retired, scored about -1e9 / length.
"""

from __future__ import annotations

import dataclasses

import torch

from spanaug.pipeline.paraphraser.decoder_step import Position
from spanaug.pipeline.paraphraser.processors import TensorBannedSequences
from spanaug.pipeline.paraphraser.step_runner import EagerRunner, GraphRunner
from spanaug.pipeline.paraphraser.topk import row_topk

NEG = -1.0e9  # transformers' stand-in for "impossible" in beam search bookkeeping

#: Steps between the host's looks at which sentences are done, on GPUs without CUDA graphs (with
#: them, every graph bucket; on CPU every step: there a look costs nothing, and a finished sentence
#: leaves at once).
GPU_SYNC_EVERY = 4


@dataclasses.dataclass
class SearchSettings:
    beams: int
    start_token: int
    eos_token: int
    fill_token: int
    #: Further tokens that end a hypothesis as ``eos_token`` does (a decoder-only model's newlines).
    other_end_tokens: tuple[int, ...] = ()
    length_penalty: float = 1.0
    forced_bos_token: int | None = None
    fuse_constraints: bool = False
    two_stage_topk: bool = False
    #: Two-stage selection finds a beam's best tokens among chunks of this many columns (0: one
    #: ``torch.topk`` over the vocabulary).
    topk_chunk: int = 0
    sync_every: int = 1


@dataclasses.dataclass
class _Beams:
    """Per active sentence: running and finished beams (``[B, W, ...]``), and who they are. A step
    updates them in place (a replayed graph reads and writes the same tensors every step)."""

    ids: torch.Tensor  # [B] original sentence index
    limits: torch.Tensor  # [B] new-token limit
    running: torch.Tensor  # [B, W, T] token ids, start token first
    running_scores: torch.Tensor  # [B, W]
    finished: torch.Tensor  # [B, W, T]
    finished_scores: torch.Tensor  # [B, W]
    is_finished: torch.Tensor  # [B, W] bool
    improvable: torch.Tensor  # [B, 1] bool (transformers' is_early_stop_heuristic_unsatisfied)
    done: torch.Tensor  # [B] bool: no hypothesis of the sentence can change any more

    def select(self, keep: torch.Tensor) -> _Beams:
        return _Beams(*(t.index_select(0, keep) for t in dataclasses.astuple(self)))


def _gather(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    while index.dim() < t.dim():
        index = index.unsqueeze(-1)
    return torch.take_along_dim(t, index, dim=1)


class _Step:
    """One step of the search, in place on ``beams``: what a runner runs eagerly or replays."""

    def __init__(self, beams: _Beams, settings: SearchSettings, processor: TensorBannedSequences | None, runner):
        self.beams, self.settings, self.processor, self.runner = beams, settings, processor, runner
        w = settings.beams
        self.top_w = torch.arange(2 * w, device=beams.running.device) < w  # only the first `beams` may finish
        ends = (settings.eos_token, *settings.other_end_tokens)
        self.end_tokens = torch.tensor(ends, device=beams.running.device) if len(ends) > 1 else None

    def __call__(self, s: int | Position) -> None:
        beams, settings, w = self.beams, self.settings, self.settings.beams
        n = beams.running.shape[0]
        if isinstance(s, Position):  # the position is a device tensor: the step reads it there
            t = s.t
            tokens = beams.running.index_select(2, t.view(1)).reshape(-1)
            history, last, first = beams.running.view(n * w, -1), t, False
            cur: int | torch.Tensor = t + 1
        else:
            cur = s + 1  # tokens so far, the start token included
            tokens = beams.running[:, :, s].reshape(-1)
            history, last, first = beams.running[:, :, :cur].reshape(n * w, cur), None, s == 0
        logits = self.runner.decode(tokens, s)  # [n * w, V]
        vocab = logits.shape[-1]
        # c. the 2W best continuations
        if settings.fuse_constraints and settings.two_stage_topk:
            logits = _allowed_logits(logits, history, last, first, settings, self.processor).view(n, w, vocab)
            # log p = logit - logsumexp(logits): one shift a row, so each beam's best tokens are its
            # best logits, and only those 2W a beam are scored (no pass writing log p over the vocabulary).
            shift = beams.running_scores[:, :, None] - torch.logsumexp(logits, dim=-1, keepdim=True)
            top_scores, parent, token = _top_shifted(logits, shift, 2 * w, settings.topk_chunk)
        else:
            log_probs = _next_log_probs(logits, history, last, first, settings, self.processor)
            log_probs = log_probs.view(n, w, vocab) + beams.running_scores[:, :, None]
            top_scores, parent, token = _top_continuations(
                log_probs, 2 * w, settings.two_stage_topk, settings.topk_chunk
            )
        top_seqs = _gather(beams.running, parent)
        if isinstance(cur, int):
            top_seqs[:, :, cur] = token
        else:
            top_seqs.index_copy_(2, cur.view(1), token[:, :, None])
        # d. which of them end here: an end token, or the sentence's own length limit
        ended = token == settings.eos_token if self.end_tokens is None else torch.isin(token, self.end_tokens)
        ends = ended | (beams.limits[:, None] <= cur)
        # e. the W best that run on
        run_scores = top_scores + ends.float() * NEG
        nxt = torch.topk(run_scores, k=w).indices
        beams.running.copy_(_gather(top_seqs, nxt))
        beams.running_scores.copy_(_gather(run_scores, nxt))
        rows = (torch.arange(n, device=nxt.device)[:, None] * w + _gather(parent, nxt)).reshape(-1)
        self.runner.reorder(rows, cur)
        # f. finished hypotheses (transformers' _update_finished_beams); a sentence already done
        # takes none (it may run on until the host next looks)
        length = cur if isinstance(cur, int) else cur.float()  # generated tokens, the new one included
        _update_finished(beams, top_seqs, top_scores, ends & self.top_w & ~beams.done[:, None], length, settings)
        # g. can a running beam still beat the worst finished one? (transformers' early-stop heuristic)
        best_running = beams.running_scores[:, :1] / (length**settings.length_penalty)
        worst = torch.where(beams.is_finished, beams.finished_scores.min(dim=1, keepdim=True).values, NEG)
        beams.improvable &= (best_running > worst).any(dim=-1, keepdim=True)
        beams.done |= beams.is_finished.all(dim=1) | ~beams.improvable[:, 0] | ends.all(dim=1)


@torch.inference_mode()
def beam_search(
    runner: EagerRunner | GraphRunner,
    limits: torch.Tensor,
    settings: SearchSettings,
    processor: TensorBannedSequences | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Finished beams ``[B, W, 1 + max(limits)]`` (start token first, ``fill_token`` after the end)
    and their scores ``[B, W]``, best first, for the ``B`` sentences of the runner's state."""
    w = settings.beams
    b = runner.state.sentences
    sync_every = runner.sync_every or settings.sync_every
    device = limits.device
    steps = int(limits.max())
    width = steps + 1
    running = torch.full((b, w, width), settings.fill_token, dtype=torch.long, device=device)
    running[:, :, 0] = settings.start_token
    scores = torch.zeros((b, w), device=device)
    scores[:, 1:] = NEG
    beams = _Beams(
        ids=torch.arange(b, device=device),
        limits=limits,
        running=running,
        running_scores=scores,
        finished=running.clone(),
        finished_scores=torch.full((b, w), NEG, device=device),
        is_finished=torch.zeros((b, w), dtype=torch.bool, device=device),
        improvable=torch.ones((b, 1), dtype=torch.bool, device=device),
        done=torch.zeros(b, dtype=torch.bool, device=device),
    )
    out_tokens = beams.finished.clone()
    out_scores = beams.finished_scores.clone()
    step = _Step(beams, settings, processor, runner)
    for s in range(steps):
        runner.run(step, s)
        if s == steps - 1 or (s + 1) % sync_every == 0:
            kept = _retire(step.beams, runner, step.processor, out_tokens, out_scores, s + 1)
            if kept is None:
                return out_tokens, out_scores
            if kept[0] is not step.beams:
                step = _Step(kept[0], settings, kept[1], runner)
    out_tokens.index_copy_(0, step.beams.ids, step.beams.finished)
    out_scores.index_copy_(0, step.beams.ids, step.beams.finished_scores)
    return out_tokens, out_scores


def _top_continuations(
    log_probs: torch.Tensor, k: int, two_stage: bool, chunk: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ``k`` best (beam, token) continuations of each sentence from ``[B, W, V]`` scores: their
    scores, beams and tokens, best first. Two-stage: each beam's ``k`` best first (``B x W`` short
    rows, which a GPU runs in parallel; by chunks of ``chunk`` columns when set), then the best of
    those, which are the same ``k`` (ties aside) as one selection over ``W x V`` scores,
    transformers' way."""
    n, w, vocab = log_probs.shape
    if not two_stage or k >= vocab:
        top_scores, index = torch.topk(log_probs.view(n, w * vocab), k=k)
        return top_scores, index // vocab, index % vocab
    beam_scores, beam_tokens = row_topk(log_probs, k, chunk)  # [B, W, k]
    top_scores, index = torch.topk(beam_scores.view(n, w * k), k=k)
    return top_scores, index // k, beam_tokens.view(n, w * k).gather(1, index)


def _top_shifted(
    logits: torch.Tensor, shift: torch.Tensor, k: int, chunk: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`_top_continuations` (two-stage) of ``logits + shift`` (``shift`` ``[B, W, 1]``), adding the
    shift to each beam's ``k`` best logits only."""
    n, w, vocab = logits.shape
    if k >= vocab:
        return _top_continuations(logits + shift, k, two_stage=False)
    beam_logits, beam_tokens = row_topk(logits, k, chunk)  # [B, W, k]
    top_scores, index = torch.topk((beam_logits + shift).view(n, w * k), k=k)
    return top_scores, index // k, beam_tokens.view(n, w * k).gather(1, index)


def _forced_first(logits: torch.Tensor, first: bool, settings: SearchSettings) -> torch.Tensor:
    """On the first step of a model with a forced first token (mBART's language), only that token."""
    if settings.forced_bos_token is None or not first:
        return logits
    forced = torch.full_like(logits, float("-inf"))
    forced[:, settings.forced_bos_token] = 0.0
    return forced


def _allowed_logits(
    logits: torch.Tensor,
    history: torch.Tensor,
    last: torch.Tensor | None,
    first: bool,
    settings: SearchSettings,
    processor: TensorBannedSequences | None,
) -> torch.Tensor:
    """The logits with what the step may not produce at -inf: all but a forced first token, and
    the constraints' bans (``history`` as in :func:`_next_log_probs`)."""
    logits = _forced_first(logits, first, settings)
    if processor is not None:
        logits = processor.ban(history, logits, last, renormalize=False)
    return logits


def _next_log_probs(
    logits: torch.Tensor,
    history: torch.Tensor,
    last: torch.Tensor | None,
    first: bool,
    settings: SearchSettings,
    processor: TensorBannedSequences | None,
) -> torch.Tensor:
    """Log-probabilities of the next token under the constraints, renormalised over what they leave.
    ``history`` holds each row's tokens up to ``last`` (a device position), or exactly its tokens."""
    if settings.fuse_constraints:
        return torch.log_softmax(_allowed_logits(logits, history, last, first, settings, processor), dim=-1)
    log_probs = torch.log_softmax(_forced_first(logits, first, settings), dim=-1)
    if processor is not None:
        log_probs = processor.ban(history, log_probs, last, renormalize=True)
    return log_probs


def _update_finished(
    beams: _Beams,
    top_seqs: torch.Tensor,
    top_scores: torch.Tensor,
    just: torch.Tensor,
    length: int | torch.Tensor,
    settings: SearchSettings,
) -> None:
    w = settings.beams
    scores = top_scores / (length**settings.length_penalty)
    full = beams.is_finished.all(dim=-1, keepdim=True)
    scores = scores + full.float() * NEG + (~beams.improvable).float() * NEG + (~just).float() * NEG
    merged_seqs = torch.cat((beams.finished, top_seqs), dim=1)
    merged_scores = torch.cat((beams.finished_scores, scores), dim=1)
    merged_done = torch.cat((beams.is_finished, just), dim=1)
    best = torch.topk(merged_scores, k=w).indices
    beams.finished.copy_(_gather(merged_seqs, best))
    beams.finished_scores.copy_(_gather(merged_scores, best))
    beams.is_finished.copy_(_gather(merged_done, best))


def _retire(
    beams: _Beams,
    runner: EagerRunner | GraphRunner,
    processor: TensorBannedSequences | None,
    out_tokens: torch.Tensor,
    out_scores: torch.Tensor,
    upto: int,
) -> tuple[_Beams, TensorBannedSequences | None] | None:
    """Store the sentences that are done and drop them from the batch when the runner finds it
    worth it (one host synchronisation); None once every sentence is done."""
    done = beams.done
    done_idx = done.nonzero().squeeze(-1)  # the synchronisation; the rows it needs come with it
    n_done = done_idx.numel()
    if n_done == 0 or (n_done < done.shape[0] and not runner.worth_shrinking(n_done, done.shape[0])):
        return beams, processor
    out_tokens.index_copy_(0, beams.ids[done_idx], beams.finished[done_idx])
    out_scores.index_copy_(0, beams.ids[done_idx], beams.finished_scores[done_idx])
    if n_done == done.shape[0]:
        return None
    keep = (~done).nonzero().squeeze(-1)
    runner.keep(keep, upto)
    if processor is not None:
        processor = processor.select(keep)
    return beams.select(keep), processor
