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
* a beam reorder copies each layer's self-attention history ``[0, t]`` in one gather;
* a sentence whose hypotheses can no longer change leaves the batch, so the step shrinks as
  sentences finish (``generate`` keeps decoding them until the whole batch is done); this is
  checked every ``sync_every`` steps (every graph bucket when the step is replayed from CUDA
  graphs, :mod:`.step_runner`), the only host synchronisation of the loop;
* on ``fuse_constraints`` the bans are applied to the logits before the one log-softmax, which is
  the renormalised distribution the processor computes after it, one pass over the vocabulary
  fewer (used on GPUs; on CPU the order is ``generate``'s, so scores agree to the last bit).

One case is left out on purpose: a sentence that reaches its length limit with fewer than
``beams`` finite hypotheses (constraints that ban almost everything) stops there. ``generate``
would keep it in the batch and fill its empty slots with hypotheses of the beams it had just
retired, scored about -1e9 / length.
"""

from __future__ import annotations

import dataclasses

import torch

from spanaug.pipeline.paraphraser.processors import TensorBannedSequences
from spanaug.pipeline.paraphraser.step_runner import EagerRunner, GraphRunner

NEG = -1.0e9  # transformers' stand-in for "impossible" in beam search bookkeeping


@dataclasses.dataclass
class SearchSettings:
    beams: int
    start_token: int
    eos_token: int
    fill_token: int
    length_penalty: float = 1.0
    forced_bos_token: int | None = None
    fuse_constraints: bool = False
    two_stage_topk: bool = False
    sync_every: int = 1


@dataclasses.dataclass
class _Beams:
    """Per active sentence: running and finished beams (``[B, W, ...]``), and who they are."""

    ids: torch.Tensor  # [B] original sentence index
    limits: torch.Tensor  # [B] new-token limit
    running: torch.Tensor  # [B, W, T] token ids, start token first
    running_scores: torch.Tensor  # [B, W]
    finished: torch.Tensor  # [B, W, T]
    finished_scores: torch.Tensor  # [B, W]
    is_finished: torch.Tensor  # [B, W] bool
    improvable: torch.Tensor  # [B, 1] bool (transformers' is_early_stop_heuristic_unsatisfied)

    def select(self, keep: torch.Tensor) -> _Beams:
        return _Beams(*(t.index_select(0, keep) for t in dataclasses.astuple(self)))


def _gather(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    while index.dim() < t.dim():
        index = index.unsqueeze(-1)
    return torch.take_along_dim(t, index, dim=1)


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
    )
    out_tokens = beams.finished.clone()
    out_scores = beams.finished_scores.clone()
    top_w = torch.arange(2 * w, device=device) < w  # only the first `beams` candidates may finish
    for s in range(steps):
        cur = s + 1  # tokens so far, the start token included
        n = beams.ids.shape[0]
        logits = runner(beams.running[:, :, s].reshape(-1), s)  # [n * w, V]
        vocab = logits.shape[-1]
        history = beams.running[:, :, :cur].reshape(n * w, cur)
        log_probs = _next_log_probs(logits, history, s, settings, processor)
        log_probs = log_probs.view(n, w, vocab) + beams.running_scores[:, :, None]
        # c. the 2W best continuations
        top_scores, parent, token = _top_continuations(log_probs, 2 * w, settings.two_stage_topk)
        top_seqs = _gather(beams.running, parent)
        top_seqs[:, :, cur] = token
        # d. which of them end here: EOS, or the sentence's own length limit
        ends = (token == settings.eos_token) | (beams.limits[:, None] <= cur)
        # e. the W best that run on
        run_scores = top_scores + ends.float() * NEG
        nxt = torch.topk(run_scores, k=w).indices
        beams.running = _gather(top_seqs, nxt)
        beams.running_scores = _gather(run_scores, nxt)
        rows = (torch.arange(n, device=device)[:, None] * w + _gather(parent, nxt)).reshape(-1)
        runner.reorder(rows, cur)
        # f. finished hypotheses (transformers' _update_finished_beams)
        _update_finished(beams, top_seqs, top_scores, ends & top_w, cur, settings)
        # g. can a running beam still beat the worst finished one? (transformers' early-stop heuristic)
        best_running = beams.running_scores[:, :1] / (cur**settings.length_penalty)
        worst = torch.where(beams.is_finished, beams.finished_scores.min(dim=1, keepdim=True).values, NEG)
        beams.improvable &= (best_running > worst).any(dim=-1, keepdim=True)
        done = beams.is_finished.all(dim=1) | ~beams.improvable[:, 0] | ends.all(dim=1)
        if s == steps - 1 or (s + 1) % sync_every == 0:
            beams, processor = _retire(beams, done, runner, processor, out_tokens, out_scores, cur)
            if beams is None:
                break
    if beams is not None:
        out_tokens.index_copy_(0, beams.ids, beams.finished)
        out_scores.index_copy_(0, beams.ids, beams.finished_scores)
    return out_tokens, out_scores


def _top_continuations(
    log_probs: torch.Tensor, k: int, two_stage: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ``k`` best (beam, token) continuations of each sentence from ``[B, W, V]`` scores: their
    scores, beams and tokens, best first. Two-stage: each beam's ``k`` best first (``B x W`` short
    rows, which a GPU runs in parallel), then the best of those, which are the same ``k`` (ties
    aside) as one selection over ``W x V`` scores, transformers' way."""
    n, w, vocab = log_probs.shape
    if not two_stage or k >= vocab:
        top_scores, index = torch.topk(log_probs.view(n, w * vocab), k=k)
        return top_scores, index // vocab, index % vocab
    beam_scores, beam_tokens = torch.topk(log_probs, k=k, dim=-1)  # [B, W, k]
    top_scores, index = torch.topk(beam_scores.view(n, w * k), k=k)
    return top_scores, index // k, beam_tokens.view(n, w * k).gather(1, index)


def _next_log_probs(
    logits: torch.Tensor,
    history: torch.Tensor,
    s: int,
    settings: SearchSettings,
    processor: TensorBannedSequences | None,
) -> torch.Tensor:
    """Log-probabilities of the next token under the constraints, renormalised over what they leave."""
    if settings.forced_bos_token is not None and s == 0:
        forced = torch.full_like(logits, float("-inf"))
        forced[:, settings.forced_bos_token] = 0.0
        logits = forced
    if processor is not None and settings.fuse_constraints:
        processor.renormalize = False
        return torch.log_softmax(processor(history, logits), dim=-1)
    log_probs = torch.log_softmax(logits, dim=-1)
    if processor is not None:
        processor.renormalize = True
        log_probs = processor(history, log_probs)
    return log_probs


def _update_finished(
    beams: _Beams, top_seqs: torch.Tensor, top_scores: torch.Tensor, just: torch.Tensor, cur: int, settings
) -> None:
    w = settings.beams
    length = cur  # generated tokens, the new one included (the start token is the prompt)
    scores = top_scores / (length**settings.length_penalty)
    full = beams.is_finished.all(dim=-1, keepdim=True)
    scores = scores + full.float() * NEG + (~beams.improvable).float() * NEG + (~just).float() * NEG
    merged_seqs = torch.cat((beams.finished, top_seqs), dim=1)
    merged_scores = torch.cat((beams.finished_scores, scores), dim=1)
    merged_done = torch.cat((beams.is_finished, just), dim=1)
    best = torch.topk(merged_scores, k=w).indices
    beams.finished = _gather(merged_seqs, best)
    beams.finished_scores = _gather(merged_scores, best)
    beams.is_finished = _gather(merged_done, best)


def _retire(
    beams: _Beams,
    done: torch.Tensor,
    runner: EagerRunner | GraphRunner,
    processor: TensorBannedSequences | None,
    out_tokens: torch.Tensor,
    out_scores: torch.Tensor,
    upto: int,
) -> tuple[_Beams | None, TensorBannedSequences | None]:
    """Store the sentences that are done and drop them from the batch (one host synchronisation)."""
    done_idx = done.nonzero().squeeze(-1)
    if done_idx.numel() == 0:
        return beams, processor
    out_tokens.index_copy_(0, beams.ids[done_idx], beams.finished[done_idx])
    out_scores.index_copy_(0, beams.ids[done_idx], beams.finished_scores[done_idx])
    keep = (~done).nonzero().squeeze(-1)
    if keep.numel() == 0:
        return None, processor
    runner.keep(keep, upto)
    if processor is not None:
        processor = processor.select(keep)
    return beams.select(keep), processor
