"""The model stages decode and align with the objects alive at their start frozen (core.heap)."""

import gc
import subprocess
import sys

import pytest
from conftest import CORPUS
from test_stages import requests_table, write_paraphrases

from spanaug.core import artifacts
from spanaug.core.config import DecodeSettings
from spanaug.core.heap import long_lived_objects_frozen

pytestmark = pytest.mark.usefixtures("one_torch_thread")


#: Objects the interpreter reports frozen before any block: none up to Python 3.11, some 375 of its
#: own from 3.12 on (an unfreeze empties the count until the next collection refills it).
INTERPRETER_FROZEN = gc.get_freeze_count()


@pytest.fixture(autouse=True)
def no_block_frozen_around():
    assert gc.get_freeze_count() <= INTERPRETER_FROZEN
    yield
    gc.unfreeze()  # whatever a failing test left


def unfrozen() -> bool:
    """Whether no block's objects are frozen: the count is at most the interpreter's own, also after a
    full collection."""
    gc.collect()
    return gc.get_freeze_count() <= INTERPRETER_FROZEN


def test_the_block_freezes_what_is_alive_and_unfreezes_it_after():
    alive = [[i] for i in range(1000)]  # tracked containers
    with long_lived_objects_frozen():
        frozen = gc.get_freeze_count()
        assert frozen >= INTERPRETER_FROZEN + len(alive)
        made_inside = [[i] for i in range(1000)]
        # What the block allocates is still collected: the frozen count does not grow with it. (It may
        # shrink: a frozen object that loses its last reference is freed, and leaves the count.)
        assert gc.get_freeze_count() <= frozen
        assert gc.is_tracked(made_inside[0])
    assert unfrozen()


def test_nested_blocks_leave_unfreezing_to_the_outermost():
    with long_lived_objects_frozen():
        with long_lived_objects_frozen():
            pass
        assert gc.get_freeze_count() > INTERPRETER_FROZEN + 1000  # the modules the test loaded
    assert unfrozen()


def test_an_error_in_the_block_unfreezes_too():
    with pytest.raises(RuntimeError), long_lived_objects_frozen():
        raise RuntimeError("decoding failed")
    assert unfrozen()


def test_objects_frozen_before_the_first_block_leave_it_the_outermost():
    """Python 3.12 reports objects of its own frozen from start-up on (so may a host that froze its
    objects): the first block must still unfreeze what it froze."""
    gc.freeze()
    before = gc.get_freeze_count()
    alive = [[i] for i in range(1000)]
    with long_lived_objects_frozen():
        assert gc.get_freeze_count() >= before + len(alive)
    assert gc.get_freeze_count() < before + len(alive)


def test_the_interpreter_shuts_down_without_leak_reports():
    """Objects left frozen at exit make triton's bindings (imported with torch) print a page of
    'leaked instance' lines into every job's log."""
    pytest.importorskip("triton")
    code = (
        "import torch, transformers.modeling_utils\n"
        "from spanaug.core.heap import long_lived_objects_frozen\n"
        "with long_lived_objects_frozen():\n"
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr


def test_the_paraphrase_stage_decodes_with_the_loaded_model_frozen(tiny_paraphraser, tmp_path, monkeypatch):
    from spanaug.pipeline.paraphraser import decode_loop
    from spanaug.pipeline.paraphraser.stage import paraphrase_stage

    frozen = []
    decode = decode_loop.paraphrase_chunks

    def recording(*args, **kwargs):
        for rows in decode(*args, **kwargs):
            frozen.append(gc.get_freeze_count())
            yield rows

    monkeypatch.setattr(decode_loop, "paraphrase_chunks", recording)
    artifacts.write_table(requests_table(CORPUS[:2], ["the"]), tmp_path / "req.parquet", artifacts.REQUESTS)
    cfg = DecodeSettings(model=tiny_paraphraser, beam_size=2, return_top=1, max_new_tokens=4, dtype="float32")
    paraphrase_stage(tmp_path / "req.parquet", tmp_path / "para.parquet", cfg, "cpu", chunk_rows=1)
    assert len(frozen) == 2 and min(frozen) > INTERPRETER_FROZEN + 1000
    assert unfrozen()


def test_the_align_stage_aligns_with_the_loaded_model_frozen(tiny_aligner, tmp_path, monkeypatch):
    from spanaug.pipeline.aligner import stage

    write_paraphrases([("a", 0, 0.0, None)], tmp_path / "para.parquet")
    frozen = []
    align = stage.align_rows

    def recording(*args, **kwargs):
        frozen.append(gc.get_freeze_count())
        return align(*args, **kwargs)

    monkeypatch.setattr(stage, "align_rows", recording)
    stage.align_stage(tiny_aligner, tmp_path / "para.parquet", tmp_path / "out.parquet", device="cpu")
    assert frozen and min(frozen) > INTERPRETER_FROZEN + 1000
    assert unfrozen()
