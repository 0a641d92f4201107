"""A model job's long-lived Python objects, kept out of the garbage collector's full collections.

A job that imports torch and transformers and loads a model holds some 400,000 objects that the
cyclic garbage collector tracks and will never free. Every full collection walks all of them: 225 to
250 ms on this project's CPU, during which no thread runs Python, the thread that launches the GPU's
decode steps included. A stage allocates as it goes (rows, constraint phrases, their token
sequences), and the paraphrase stage met a full collection about once every 6,000 sentences: on an
H100, which decodes 6,000 sentences in some 15 s, a stall of 1 to 2% of the job, landing in one
benchmark round and not another. :func:`gc.freeze` moves the objects alive when a stage starts into
a permanent generation that collections skip; what the stage allocates is still collected.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: How many :func:`long_lived_objects_frozen` blocks are open. The nesting is counted here, not read
#: from :func:`gc.get_freeze_count`: Python 3.12 reports some 375 objects of its own as frozen from
#: start-up on (and again after any collection that follows an unfreeze), so "nothing frozen yet"
#: cannot tell the outermost block there.
_open_blocks = 0
_lock = threading.Lock()


@contextlib.contextmanager
def long_lived_objects_frozen() -> Iterator[None]:
    """Freeze the objects alive now (the imported modules, the loaded models) for the block's
    duration. They are unfrozen afterwards, so that the interpreter's shutdown frees them as usual
    (extension modules report frozen objects as leaks: triton's nanobind bindings print a page of
    them). A nested block leaves the unfreezing to the outermost, which unfreezes everything, also
    what was frozen before it: :func:`gc.unfreeze` cannot tell whose objects are whose, and making
    them collectable again costs a host nothing but a longer full collection."""
    global _open_blocks
    with _lock:
        _open_blocks += 1
        gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _open_blocks -= 1
            if not _open_blocks:
                gc.unfreeze()
