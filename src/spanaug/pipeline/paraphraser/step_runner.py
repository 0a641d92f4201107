"""How beam search runs a decoder step: eagerly, or replayed from CUDA graphs.

A T5-base decoder step is several hundred kernels. On a GPU the host takes longer to launch them,
one by one from Python, than the GPU takes to run them (measured on an H100: 16 ms per step for
160 decoder rows, where the kernels themselves took a few), so the GPU waits. A CUDA graph
launches the whole step at once. It replays fixed shapes and addresses, so :class:`GraphRunner`

* keeps the step's inputs (the tokens, the position ``t``, the beams' parent rows) in buffers
  that the graph reads, and ``t`` on the device;
* attends to a fixed span of cache positions (the next multiple of ``bucket``; later positions
  are masked, see :class:`~.decoder_step.Position`), so one graph serves ``bucket`` steps;
* moves the beam reorder into the step: the graph first gathers every row's history from the
  row its beam continues;
* captures anew when sentences leave the batch (the row count changes), which beam search does
  only every ``bucket`` steps in this mode.

:class:`EagerRunner` runs the same step without graphs (the CPU, and the fallback when a capture
fails). ``GraphRunner(capture=False)`` runs the graph's body eagerly, which is how the tests check
its arithmetic on the CPU.
"""

from __future__ import annotations

import logging

import torch

from spanaug.pipeline.paraphraser.decoder_step import DecoderStep, Position, StepState

log = logging.getLogger(__name__)

#: Steps one graph serves (the attended span grows by this much from one graph to the next).
GRAPH_BUCKET = 16


class EagerRunner:
    """The decoder step, launched op by op."""

    sync_every: int | None = None  # beam search's own default

    def __init__(self, step: DecoderStep, state: StepState):
        self.step, self.state = step, state

    def __call__(self, tokens: torch.Tensor, s: int) -> torch.Tensor:
        return self.step(tokens, s, self.state)

    def reorder(self, rows: torch.Tensor, upto: int) -> None:
        self.state.reorder(rows, upto)

    def keep(self, sentences: torch.Tensor, upto: int) -> None:
        self.state.keep(sentences, upto)


class GraphRunner:
    """The decoder step replayed from CUDA graphs, one per (rows, span)."""

    #: Set once a capture failed in this process: later runners run eagerly from the start.
    disabled = False

    def __init__(self, step: DecoderStep, state: StepState, bucket: int = GRAPH_BUCKET, capture: bool = True):
        self.step, self.state, self.bucket = step, state, bucket
        self.capture = capture and not GraphRunner.disabled
        self.sync_every = bucket
        self.max_len = state.self_kv.shape[4]
        self.warm = False
        self._buffers()

    def _buffers(self) -> None:
        """Inputs the graphs read, for the current rows; graphs of other row counts are dropped."""
        rows = self.state.sentences * self.state.beams
        device = self.state.self_kv.device
        self.tokens = torch.zeros(rows, dtype=torch.long, device=device)
        self.t = torch.zeros((), dtype=torch.long, device=device)
        self.identity = torch.arange(rows, device=device)
        self.parents = self.identity.clone()
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        # A fresh memory pool for each generation of graphs: the graphs of a pool are replayed in the
        # order they were captured, as sharing requires, and a pool whose graphs were all freed
        # cannot take a capture again (on an H100, torch 2.11 stopped on an internal assert when
        # graphs captured after sentences left reused the first generation's pool).
        self.pool = torch.cuda.graph_pool_handle() if self.capture else None

    def span(self, s: int) -> int:
        return min(self.max_len, (s // self.bucket + 1) * self.bucket)

    def _body(self, span: int) -> torch.Tensor:
        """What a graph holds: the pending beam reorder, then the decoder step at position ``t``."""
        view = self.state.self_kv[:, :, : self.parents.shape[0], :, :span]
        view.copy_(view.index_select(2, self.parents))
        return self.step(self.tokens, Position(self.t, span), self.state)

    def __call__(self, tokens: torch.Tensor, s: int) -> torch.Tensor:
        self.tokens.copy_(tokens)
        self.t.fill_(s)
        span = self.span(s)
        if self.capture and span not in self.graphs:
            self._capture(span)
        if self.capture:
            graph, logits = self.graphs[span]
            graph.replay()
        else:
            logits = self._body(span)
        self.parents.copy_(self.identity)  # until beam search reorders again
        return logits

    def _capture(self, span: int) -> None:
        pending = self.parents.clone()
        self.parents.copy_(self.identity)  # the warm-up must not apply the reorder: the replay will
        try:
            if not self.warm:  # once per batch: lazily built tables and library handles, outside any capture
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    self._body(span)
                torch.cuda.current_stream().wait_stream(side)
                self.warm = True
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                logits = self._body(span)
            self.graphs[span] = (graph, logits)
        except RuntimeError as err:  # a step this torch cannot capture: decode eagerly, say so once
            log.warning("static backend: CUDA graph capture failed (%s); decoding without graphs", err)
            GraphRunner.disabled = True
            self.capture = False
        self.parents.copy_(pending)

    def reorder(self, rows: torch.Tensor, upto: int) -> None:
        self.parents.copy_(rows)

    def keep(self, sentences: torch.Tensor, upto: int) -> None:
        # The pending reorder first (eagerly), then the rows of the sentences kept; new graphs follow.
        self.state.reorder(self.parents, upto)
        self.state.keep(sentences, upto)
        self._buffers()
