"""When the host's worker thread may run Python beside a GPU decode.

On GPUs the paraphrase loop overlaps a batch's host work (its phrases, table, texts and checks) with
the decoding of another, in a worker thread that shares the GIL with the decoding thread. Most of a
batch's decoding replays CUDA graphs: the decoding thread launches one graph a step and then waits
on the device, and a worker running meanwhile costs nothing. A few steps a batch are different: the
first step, the warm-up step and each capture launch every kernel of a step from Python (several
hundred torch calls), and each call gives the GIL up and must win it back from the worker. A
worker running then slows the launches, and the GPU waits for them.

The decoding thread closes the gate around those steps (:meth:`HostGate.closed`); the worker checks
it between sentences (:meth:`HostGate.wait`) and pauses while it is closed. The decoding thread
never waits on the worker with the gate closed, so the two cannot wait on each other. Everything
else (CPU decoding, decoding without graphs, host work in turn) leaves the gate open.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class HostGate:
    """Open unless a decoding thread is inside :meth:`closed` (blocks may nest, and come from
    several threads: the gate opens when the last one leaves)."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._closers = 0
        #: False: :meth:`closed` leaves the gate open (the benchmark's comparison, and a way out).
        self.enabled = True

    @contextlib.contextmanager
    def closed(self) -> Iterator[None]:
        """The gate closed for the block (the worker pauses at its next check), then open again,
        also when the block raises."""
        if not self.enabled:
            yield
            return
        with self._lock:
            self._closers += 1
            self._open.clear()
        try:
            yield
        finally:
            with self._lock:
                self._closers -= 1
                if self._closers == 0:
                    self._open.set()

    def wait(self) -> None:
        """Return once the gate is open (at once when it is: a flag read)."""
        self._open.wait()

    @property
    def is_open(self) -> bool:
        return self._open.is_set()


#: The process's gate: decoding threads close it, worker threads wait at it.
WORKER_GATE = HostGate()
