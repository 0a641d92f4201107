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
from collections.abc import Iterator


@contextlib.contextmanager
def long_lived_objects_frozen() -> Iterator[None]:
    """Freeze the objects alive now (the imported modules, the loaded models) for the block's
    duration. They are unfrozen afterwards, so that the interpreter's shutdown frees them as usual
    (extension modules report frozen objects as leaks: triton's nanobind bindings print a page of
    them). A nested block leaves the unfreezing to the outermost."""
    outermost = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if outermost:
            gc.unfreeze()
