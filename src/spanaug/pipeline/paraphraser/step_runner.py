"""How beam search runs its steps: eagerly, or replayed from CUDA graphs.

A step of beam search on a T5-base is several hundred kernels for the decoder and about two hundred
more for the constraints, the selection and the bookkeeping of finished hypotheses. On a GPU the
host takes longer to launch them one by one from Python than the GPU takes to run them (measured
on an H100 under iteration 10's constraints: the GPU idle half of each step; with only the decoder
in a graph, constrained decoding still took twice as long as unconstrained). A CUDA graph launches
a whole step at once. It replays fixed shapes and addresses, so :class:`GraphRunner`

* gives the step its position as a device tensor ``t`` (a :class:`~.decoder_step.Position`);
* with the cache read through the beam ancestry (:mod:`.indirect_attention`, on GPUs where its
  kernel runs), captures one graph for every position: the kernel reads ``t`` on the device;
* otherwise has the decoder attend to a fixed span of cache positions (the next multiple of
  ``bucket``; later positions are masked), so one graph serves ``bucket`` steps, and captures one
  per span and per direction of the beam reorder: the reorder gathers the cache into its spare
  buffer and the two swap after the replay, so the next step replays the graph captured the other
  way round (no copy back);
* runs the first step of a batch eagerly, and the second on a side stream before any capture (the
  kernels are loaded and the libraries' handles made outside a capture); captures anew only when
  sentences leave the batch, which it allows when enough of them are done
  (:meth:`GraphRunner.worth_shrinking`): each capture costs the host about one eager step.

:class:`EagerRunner` runs the same steps without graphs (the CPU, and the fallback when a capture
fails). ``GraphRunner(capture=False)`` runs the graphs' steps eagerly, which is how the tests check
their arithmetic on the CPU.

A capture that fails is one runner's (one batch's): it is logged and counted (:class:`GraphCounts`,
which the shard's statistics and Parquet metadata record), that batch decodes on eagerly, and the
next batch captures again. With ``paraphraser.require_cuda_graphs`` a failure stops the job. An
out-of-memory error inside a capture is not a capture failure: the failed capture is dropped and
the error goes on to the batch-splitting path (:mod:`spanaug.core.oom`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch

from spanaug.core.errors import ConfigError
from spanaug.core.oom import OutOfMemoryError
from spanaug.pipeline.paraphraser.decoder_step import DecoderStep, Position, StepState
from spanaug.pipeline.paraphraser.host_gate import WORKER_GATE

log = logging.getLogger(__name__)

#: Steps one graph serves (the attended span grows by this much from one graph to the next).
GRAPH_BUCKET = 16

#: With CUDA graphs, sentences leave the batch once this share of it is done (or all of it): each
#: leaving makes the next steps capture new graphs, which costs more than a few done rows.
GRAPH_SHRINK_SHARE = 0.125

#: One step of beam search, in place: called with an int step (eager) or a device Position.
SearchStep = Callable[[int | Position], None]


@dataclass
class GraphCounts:
    """What a paraphraser's graph runners did: graphs captured, and captures that failed (each
    left its batch to decode on eagerly: a fallback)."""

    captures: int = 0
    fallbacks: int = 0


def out_of_memory(err: BaseException) -> BaseException | None:
    """The out-of-memory error ``err`` is or was raised during (a capture that ran out of memory
    can end in the capture's own error, raised as the graph closes), or None."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, OutOfMemoryError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class EagerRunner:
    """The steps launched op by op."""

    sync_every: int | None = None  # beam search's own default

    def __init__(self, step: DecoderStep, state: StepState):
        self.step, self.state = step, state

    def run(self, search_step: SearchStep, s: int) -> None:
        search_step(s)

    def decode(self, tokens: torch.Tensor, s: int | Position) -> torch.Tensor:
        return self.step(tokens, s, self.state)

    def reorder(self, rows: torch.Tensor, upto: int | torch.Tensor) -> None:
        self.state.reorder(rows, upto)

    def keep(self, sentences: torch.Tensor, upto: int) -> None:
        self.state.keep(sentences, upto)

    def worth_shrinking(self, done: int, sentences: int) -> bool:
        return True


class GraphRunner(EagerRunner):
    """The steps replayed from CUDA graphs: per batch of rows, one graph (the ancestry) or one per
    span and reorder direction (the reordered cache)."""

    def __init__(
        self,
        step: DecoderStep,
        state: StepState,
        bucket: int = GRAPH_BUCKET,
        capture: bool = True,
        counts: GraphCounts | None = None,
        require: bool = False,
    ):
        super().__init__(step, state)
        self.bucket = bucket
        self.capture = capture
        #: Counted here, and by the paraphraser that made the runner when it passes its own.
        self.counts = counts if counts is not None else GraphCounts()
        #: paraphraser.require_cuda_graphs: a failed capture stops the job instead of falling back.
        self.require = require
        self.sync_every = bucket
        self.max_len = state.self_kv.shape[4]
        self.span_now: int | None = None
        self.warm = False
        self._new_generation()

    def _new_generation(self) -> None:
        """The position buffer the graphs read and no graphs: the rows changed, or the batch is new."""
        self.t = torch.zeros((), dtype=torch.long, device=self.state.self_kv.device)
        self.graphs: dict[tuple[int, int], torch.cuda.CUDAGraph] = {}
        # A fresh memory pool for each generation of graphs: the graphs of a pool are replayed in the
        # order they were captured, as sharing requires, and a pool whose graphs were all freed
        # cannot take a capture again (on an H100, torch 2.11 stopped on an internal assert when
        # graphs captured after sentences left reused the first generation's pool).
        self.pool = torch.cuda.graph_pool_handle() if self.capture else None

    def span(self, s: int) -> int:
        if self.state.ancestry is not None:  # the kernel reads positions [0, t]: one graph for all t
            return self.max_len
        return min(self.max_len, (s // self.bucket + 1) * self.bucket)

    def run(self, search_step: SearchStep, s: int) -> None:
        if s == 0:  # eagerly, as on CPU: the first step may force a token (forced_bos_token)
            with self._launching():
                search_step(s)
            return
        self.t.fill_(s)
        self.span_now = self.span(s)
        key = (self.span_now, self.state.self_kv.data_ptr())
        if self.capture and not self.warm:
            with self._launching():
                self._warm_up(search_step)  # runs this step
        else:
            if self.capture and key not in self.graphs:
                with self._launching():
                    self._capture(key, search_step)
            if key in self.graphs:
                self.graphs[key].replay()
            else:  # without graphs, or a capture failed
                search_step(Position(self.t, self.span_now))
        self.state.after_graph_step()  # the reorder may have written into the spare buffer

    def _launching(self) -> contextlib.AbstractContextManager:
        """Around a step whose kernels Python launches one by one (the first, the warm-up, a
        capture): the host's worker pauses (:mod:`.host_gate`). Without graphs every step is such a
        step, and the worker runs beside them as before."""
        return WORKER_GATE.closed() if self.capture else contextlib.nullcontext()

    def _warm_up(self, search_step: SearchStep) -> None:
        """The batch's first graph-shaped step, run on a side stream: the kernels it uses are loaded
        and the libraries' lazily made handles and workspaces exist before any capture."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            search_step(Position(self.t, self.span_now))
        torch.cuda.current_stream().wait_stream(side)
        self.warm = True

    def _capture(self, key: tuple[int, int], search_step: SearchStep) -> None:
        """One graph of the step at ``key``; a capture that fails leaves this runner's batch to
        decode on eagerly, counted and logged (or stops the job when graphs are required)."""
        try:
            self.graphs[key] = self._record(search_step)
            self.counts.captures += 1
        except RuntimeError as err:
            self._drop_graphs()
            oom = out_of_memory(err)
            if oom is not None:
                # Not the capture's fault: the batch is too large. This runner's graphs and pool are
                # dropped, so that their memory can be given back, and the batch is split (core.oom).
                raise oom from None
            # A step this torch cannot capture.
            self.counts.fallbacks += 1
            if self.require:
                raise ConfigError(
                    f"paraphraser.require_cuda_graphs: a CUDA graph capture failed ({err}); set "
                    "require_cuda_graphs: false to let the batch decode without graphs (slower)"
                ) from None
            log.warning(
                "static backend: CUDA graph capture failed (%s); this batch decodes without graphs "
                "(capture failures so far: %d)",
                err,
                self.counts.fallbacks,
            )
            self.capture = False

    def _record(self, search_step: SearchStep) -> torch.cuda.CUDAGraph:
        """The step captured into a CUDA graph from this generation's pool."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            search_step(Position(self.t, self.span_now))
        return graph

    def _drop_graphs(self) -> None:
        """Forget this runner's graphs and their pool, after a failed capture."""
        self.graphs = {}
        self.pool = None

    def reorder(self, rows: torch.Tensor, upto: int | torch.Tensor) -> None:
        if isinstance(upto, int):  # an eager step
            self.state.reorder(rows, upto)
        else:  # a graph's step: the ancestry, or into the spare buffer, which run() swaps in
            self.state.reorder_in_graph(rows, self.span_now)

    def keep(self, sentences: torch.Tensor, upto: int) -> None:
        self.state.keep(sentences, upto)
        self._new_generation()

    def worth_shrinking(self, done: int, sentences: int) -> bool:
        return not self.capture or done >= GRAPH_SHRINK_SHARE * sentences
