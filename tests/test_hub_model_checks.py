"""Hub models are checked in the offline cache as the stages check them when they load them.

Tiny random models of real architectures (T5, BART, Pegasus, Marian; a BERT encoder), with
tokenizers trained on the fly, are laid out in a temporary Hugging Face cache (blobs, snapshots,
refs/main) so that a hub name resolves offline. `spanaug config check` then refuses a missing
tokenizer file, a vocabulary of special tokens only, more tokenizer ids than the model embeds,
truncated weights and too few positions for data.max_tokens: exit 2, one line naming the model.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CORPUS, REPO

from spanaug.cli.main import main
from spanaug.core import model_files
from spanaug.core.errors import InputError
from spanaug.demo.standins import save_standin
from spanaug.pipeline.paraphraser.hf_backend import HFParaphraser

FAMILIES = ["t5", "bart", "pegasus", "marian"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
#: The positions of the stand-ins with learned ones (demo.standins.TINY); T5's are relative.
POSITIONS = 256

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_encoder):
    """Each family saved once (save_pretrained), and the tiny BERT encoder."""
    root = tmp_path_factory.mktemp("standins")
    folders = {family: Path(save_standin(root / family, family, CORPUS * 3)) for family in FAMILIES}
    return {**folders, "encoder": Path(tiny_encoder)}


def to_cache(cache: Path, repo_id: str, folder: Path) -> Path:
    """``folder``'s files as huggingface_hub stores a download: content-named blobs, a snapshot of
    links to them, refs/main naming the snapshot. Returns the snapshot folder."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs/main").write_text(COMMIT)
    for path in folder.iterdir():
        if path.is_file():
            blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
            shutil.copyfile(path, blob)
            (snapshot / path.name).symlink_to(os.path.relpath(blob, snapshot))
    return snapshot


@pytest.fixture
def hub(tmp_path, monkeypatch, saved):
    """A fresh offline cache; ``hub(kind)`` puts model ``kind`` in it as ``org/<kind>``."""
    from huggingface_hub import constants

    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    def put(kind):
        return f"org/{kind}", to_cache(cache, f"org/{kind}", saved[kind])

    put.cache = cache
    return put


def config_file(tmp_path, paraphraser, encoder="minilm", **changes):
    """The demo config (absolute paths) with the paraphraser and aligner encoder given, written out."""
    raw = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    raw["data"]["inputs"] = [str(REPO / p) for p in raw["data"]["inputs"]]
    raw["paraphraser"] = {"model": paraphraser}
    raw["aligner"]["train"]["bitext"] = str(REPO / raw["aligner"]["train"]["bitext"])
    raw["aligner"]["encoder"] = encoder
    raw["frameid"]["lexicon"] = raw["stats"]["lexicon"] = str(REPO / "resources/demo/fndata-demo")
    for section, values in changes.items():
        raw[section] = {**raw.get(section, {}), **values}
    path = tmp_path / "hub-config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def config_check(path, capsys):
    code = main(["config", "check", "--configfile", str(path)])
    err = capsys.readouterr().err
    problems = [line.strip()[2:] for line in err.splitlines() if line.startswith("  - ")]
    return code, problems, err


def replace_blob(link: Path, data: bytes) -> None:
    """Change a cached file's content (its blob, as a damaged download would be)."""
    link.resolve().write_bytes(data)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_good_hub_model_passes_config_check(hub, tmp_path, capsys, family):
    name, snapshot = hub(family)
    encoder, _ = hub("encoder")
    assert model_files.find(name) == model_files.ModelFiles(name, snapshot, complete=True)
    code, problems, err = config_check(config_file(tmp_path, name, encoder), capsys)
    assert (code, problems) == (0, []), err
    assert HFParaphraser.from_pretrained(name, device="cpu").name == name  # the stage finds it offline


@pytest.mark.parametrize("family", FAMILIES)
def test_a_hub_model_without_tokenizer_files_is_refused(hub, tmp_path, capsys, family):
    name, snapshot = hub(family)
    for path in snapshot.iterdir():
        if path.name in model_files.TOKENIZER_FILES:
            path.unlink()
    code, problems, err = config_check(config_file(tmp_path, name), capsys)
    assert code == 2 and len(problems) == 1, err
    assert problems[0].startswith(f"paraphraser.model: {name}: no tokenizer files in its cached snapshot {snapshot}")
    with pytest.raises(InputError, match=f"{name}: no tokenizer files"):  # the stage refuses it the same way
        HFParaphraser.from_pretrained(name, device="cpu")


def _special_tokens_only(folder: Path) -> None:
    """Replace a model's tokenizer with one whose vocabulary is its special tokens alone."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    for path in folder.iterdir():
        if "token" in path.name or path.suffix in (".model", ".spm", ".txt") or path.name == "vocab.json":
            path.unlink()
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    empty = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<unk>")),
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    empty.save_pretrained(folder)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_hub_model_whose_tokenizer_has_no_vocabulary_is_refused(hub, saved, tmp_path, capsys, family):
    folder = tmp_path / "empty-vocab"
    shutil.copytree(saved[family], folder)
    _special_tokens_only(folder)
    name = f"org/{family}-empty"
    to_cache(hub.cache, name, folder)
    code, problems, err = config_check(config_file(tmp_path, name), capsys)
    assert code == 2, err
    assert problems == [f"paraphraser.model: {name}: its tokenizer has 3 tokens, all special: no vocabulary"]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_hub_tokenizer_with_more_ids_than_the_model_embeds_is_refused(hub, tmp_path, capsys, family):
    name, snapshot = hub(family)
    config = json.loads((snapshot / "config.json").read_text())
    config["vocab_size"] = 20
    replace_blob(snapshot / "config.json", json.dumps(config).encode())
    code, problems, err = config_check(config_file(tmp_path, name), capsys)
    assert code == 2 and len(problems) == 1, err
    assert problems[0].startswith(f"paraphraser.model: {name}: its tokenizer has ")
    assert problems[0].endswith("tokens but the model embeds 20: not its tokenizer")


@pytest.mark.parametrize("family", FAMILIES)
def test_hub_weights_cut_short_are_refused_without_loading_them(hub, tmp_path, capsys, family):
    name, snapshot = hub(family)
    weights = snapshot / "model.safetensors"
    data = weights.read_bytes()
    replace_blob(weights, data[: len(data) - 1000])
    code, problems, err = config_check(config_file(tmp_path, name), capsys)
    assert code == 2 and len(problems) == 1, err
    assert problems[0].startswith(
        f"paraphraser.model: {name}: model.safetensors in its cached snapshot {snapshot}: truncated or damaged: "
        "its header places"
    )
    replace_blob(weights, data[:100])
    assert "model.safetensors" in config_check(config_file(tmp_path, name), capsys)[1][0]
    with pytest.raises(InputError, match=rf"{name}: model\.safetensors in its cached snapshot .*: truncated"):
        HFParaphraser.from_pretrained(name, device="cpu")


@pytest.mark.parametrize("family", ["bart", "pegasus", "marian"])
def test_data_max_tokens_beyond_a_hub_models_positions_is_refused(hub, tmp_path, capsys, family):
    name, _ = hub(family)
    assert model_files.find(name) is not None
    code, problems, err = config_check(config_file(tmp_path, name, data={"max_tokens": POSITIONS}), capsys)
    assert code == 2, err
    assert problems == [
        f"data.max_tokens: data.max_tokens {POSITIONS} words cannot fit the model's {POSITIONS} positions: "
        f"set it below {POSITIONS} ({name})"
    ]
    ok = config_check(config_file(tmp_path, name, data={"max_tokens": POSITIONS - 1}), capsys)
    assert ok[:2] == (0, []), ok[2]


def test_t5s_relative_positions_allow_any_max_tokens(hub, tmp_path, capsys):
    name, _ = hub("t5")
    assert config_check(config_file(tmp_path, name, data={"max_tokens": None}), capsys)[:2] == (0, [])


def test_the_aligner_encoder_from_the_hub_is_checked_too(hub, tmp_path, capsys):
    paraphraser, _ = hub("bart")
    name, snapshot = hub("encoder")
    (snapshot / "model.safetensors").resolve().write_bytes(b"\x00" * 7)
    code, problems, err = config_check(config_file(tmp_path, paraphraser, name), capsys)
    assert code == 2 and len(problems) == 1, err
    assert problems[0].startswith(f"aligner.encoder: {name}: model.safetensors in its cached snapshot")
    (snapshot / "model.safetensors").unlink()
    (snapshot / "vocab.txt").unlink(missing_ok=True)
    (snapshot / "tokenizer.json").unlink()
    problems = config_check(config_file(tmp_path, paraphraser, name), capsys)[1]
    assert [p.split(":")[0] for p in problems] == ["aligner.encoder"] and "no tokenizer files" in problems[0]


def test_pytorch_checkpoints_are_read_from_their_zip_directory(tmp_path):
    import torch

    path = tmp_path / "pytorch_model.bin"
    torch.save({"w": torch.zeros(64, 64)}, path)
    assert model_files.torch_file_problem(path) is None
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert "truncated or damaged: its zip directory cannot be read" in model_files.torch_file_problem(path)
    path.write_bytes(b"not a checkpoint")
    assert "not a PyTorch checkpoint" in model_files.torch_file_problem(path)


def test_config_check_on_the_command_line_names_the_hub_model(hub, tmp_path):
    """As a user runs it: HF_HOME and HF_HUB_OFFLINE=1 in the environment, exit status 2, no traceback."""
    name, snapshot = hub("marian")
    weights = snapshot / "model.safetensors"
    replace_blob(weights, weights.read_bytes()[:-10])
    env = {**os.environ, "HF_HOME": str(hub.cache.parent), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    spanaug = Path(sys.executable).parent / "spanaug"
    proc = subprocess.run(
        [str(spanaug), "config", "check", "--configfile", str(config_file(tmp_path, name))],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    problems = [line for line in proc.stderr.splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and problems[0].startswith(f"  - paraphraser.model: {name}: model.safetensors")
    assert "Traceback" not in proc.stderr
