"""CTranslate2 conversion: once per model version, into a cache outside the model directory."""

import threading
import time

import pytest
from conftest import CORPUS

from spanaug.demo.standins import save_standin
from spanaug.pipeline.paraphraser import ct2_convert

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def pegasus(tmp_path_factory):
    return save_standin(tmp_path_factory.mktemp("pegasus"), "pegasus", CORPUS * 3)


def test_conversion_cached_once_outside_model_dir(pegasus, tmp_path, monkeypatch):
    """Jobs that start together convert once, into the cache; the model directory is not touched."""
    from pathlib import Path

    before = sorted(p.name for p in Path(pegasus).iterdir())
    calls = []
    real = ct2_convert.convert

    def slow_convert(*args, **kwargs):
        calls.append(1)
        time.sleep(0.5)  # the other jobs arrive while this one converts
        return real(*args, **kwargs)

    monkeypatch.setattr(ct2_convert, "convert", slow_convert)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPANAUG_CT2_CACHE", raising=False)
    results = []
    jobs = [threading.Thread(target=lambda: results.append(ct2_convert.converted_model(pegasus))) for _ in range(3)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    assert len(calls) == 1 and len(set(results)) == 1
    out = results[0]
    assert out.parent == tmp_path / "xdg" / "spanaug" / "ct2" and (out / "model.bin").is_file()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary left
    assert sorted(p.name for p in Path(pegasus).iterdir()) == before


def test_key_changes_with_model_files(pegasus, tmp_path):
    import os
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(pegasus, copy)
    key = ct2_convert.model_key(copy)
    assert ct2_convert.model_key(copy) == key
    cfg = copy / "config.json"
    os.utime(cfg, ns=(cfg.stat().st_atime_ns, cfg.stat().st_mtime_ns + 10**9))
    assert ct2_convert.model_key(copy) != key
    assert ct2_convert.model_key("org/some-model") != ct2_convert.model_key("org/some-model", revision="v2")
