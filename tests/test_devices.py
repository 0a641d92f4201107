"""A job that was given a GPU never runs on the CPU; every job log names its device (issue 33)."""

from __future__ import annotations

import logging
import re
import socket

import pytest
import torch
from conftest import CORPUS, REPO

from spanaug.cli.main import main
from spanaug.core import artifacts, devices
from spanaug.core.errors import ConfigError

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Every variable that says a job was given a GPU; cleared before each test so the host's own do not count.
ALLOCATION_VARIABLES = (*devices.SLURM_GPU_VARIABLES, "CUDA_VISIBLE_DEVICES")


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine whose torch cannot use CUDA (a CPU-only build, or a node without the GPU), and no allocation."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ALLOCATION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("env", "allocated"),
    [
        ({}, None),
        ({"SLURM_JOB_GPUS": "0"}, "SLURM_JOB_GPUS=0"),
        ({"SLURM_STEP_GPUS": "2,3"}, "SLURM_STEP_GPUS=2,3"),
        ({"SLURM_GPUS_ON_NODE": "1"}, "SLURM_GPUS_ON_NODE=1"),
        ({"SLURM_GPUS_ON_NODE": "0"}, None),
        ({"SLURM_JOB_GPUS": ""}, None),
        ({"CUDA_VISIBLE_DEVICES": "0"}, "CUDA_VISIBLE_DEVICES=0"),
        ({"CUDA_VISIBLE_DEVICES": "GPU-8f3c"}, "CUDA_VISIBLE_DEVICES=GPU-8f3c"),
        ({"CUDA_VISIBLE_DEVICES": ""}, None),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, None),
        ({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, None),
    ],
)
def test_what_says_a_job_was_given_a_gpu(env, allocated):
    assert devices.gpu_allocation(env) == allocated


def test_auto_stays_on_the_cpu_where_no_gpu_was_given(no_cuda):
    no_cuda.setenv("CUDA_VISIBLE_DEVICES", "")  # how a CPU job hides the node's GPUs
    assert devices.choose_device("auto").type == "cpu"
    assert devices.choose_device("cpu").type == "cpu"


@pytest.mark.parametrize(
    ("device", "env", "why"),
    [
        ("auto", {"SLURM_JOB_GPUS": "0"}, "this job was given a GPU (SLURM_JOB_GPUS=0)"),
        ("auto", {"CUDA_VISIBLE_DEVICES": "1"}, "this job was given a GPU (CUDA_VISIBLE_DEVICES=1)"),
        ("cuda", {}, "the config names CUDA"),
        ("cuda:1", {}, "the config names CUDA"),
    ],
)
def test_a_gpu_job_torch_cannot_run_on_cuda_stops_naming_host_build_and_visible_devices(no_cuda, device, env, why):
    for name, value in env.items():
        no_cuda.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        devices.choose_device(device)
    message = str(info.value)
    assert message.startswith(f"device: {device}: {why}, but torch cannot use CUDA on host {socket.gethostname()}")
    assert f"torch {torch.__version__}" in message
    assert ((torch.version.cuda and f"CUDA {torch.version.cuda}") or "CPU-only build") in message
    assert (
        f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']!r}" in message
        if env.get("CUDA_VISIBLE_DEVICES")
        else ("CUDA_VISIBLE_DEVICES=unset" in message)
    )


def test_device_cpu_is_honoured_under_a_gpu_allocation(no_cuda):
    """Naming the CPU is a choice, not a silent fallback."""
    no_cuda.setenv("SLURM_JOB_GPUS", "0")
    assert devices.choose_device("cpu").type == "cpu"


def _requests(tmp_path):
    from test_stages import requests_table

    path = tmp_path / "req.parquet"
    artifacts.write_table(requests_table(CORPUS[:3], ["the"]), path, artifacts.REQUESTS)
    return path


def _paraphrase(tiny_paraphraser, requests, out, *extra):
    args = ["paraphrase", "--requests", str(requests), "--out", str(out), "--stats", str(out) + ".json"]
    return main(
        [*args, "--model", tiny_paraphraser, "--backend", "hf", "--beam-size", "2", "--return-top", "1", *extra]
    )


@pytest.mark.parametrize(
    ("env", "device"),
    [({"SLURM_JOB_GPUS": "0"}, "auto"), ({"SLURM_GPUS_ON_NODE": "1"}, "auto"), ({}, "cuda")],
)
def test_spanaug_paraphrase_given_a_gpu_it_cannot_use_writes_nothing(
    tiny_paraphraser, tmp_path, capsys, no_cuda, env, device
):
    requests = _requests(tmp_path)
    for name, value in env.items():
        no_cuda.setenv(name, value)
    no_cuda.setenv("CUDA_VISIBLE_DEVICES", "0")
    out = tmp_path / "out" / "para.parquet"
    assert _paraphrase(tiny_paraphraser, requests, out, "--device", device) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("spanaug: error: --device: ")
    for part in ("but torch cannot use CUDA", socket.gethostname(), torch.__version__, "CUDA_VISIBLE_DEVICES='0'"):
        assert part in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["req.parquet"]  # no output, no stats, no folder


def test_spanaug_paraphrase_without_a_gpu_runs_on_the_cpu_and_names_it(tiny_paraphraser, tmp_path, no_cuda, caplog):
    """The control: the same command with no GPU given runs, and its log names the device and dtype."""
    no_cuda.setattr(devices, "_announced", set())
    requests = _requests(tmp_path)
    out = tmp_path / "para.parquet"
    with caplog.at_level(logging.INFO, logger="spanaug.core.devices"):
        assert _paraphrase(tiny_paraphraser, requests, out) == 0
    assert out.is_file()
    lines = [r.getMessage() for r in caplog.records if r.name == "spanaug.core.devices"]
    assert len(lines) == 1 and lines[0].startswith("device: cpu (CPU, "), lines
    assert "dtype: float32" in lines[0] and torch.__version__ in lines[0]


@pytest.mark.parametrize(
    "command",
    [
        ["paraphraser", "train", "--bitext", str(REPO / "resources/demo/bitext.tsv"), "--out", "{tmp}/model"],
        ["align", "predict", "--model", "{tmp}/aligner", "--instances", "{tmp}/i.jsonl", "--out", "{tmp}/p.jsonl"],
        ["align", "paraphrases", "--paraphrases", "{tmp}/p.parquet", "--model", "{tmp}/al", "--out", "{tmp}/a.parquet"],
        ["frameid", "train", "--train", "{tmp}/train.conll", "--out", "{tmp}/frameid"],
        ["iterate", "--chain", "{tmp}/c.parquet", "--iterations-dir", "{tmp}/it", "--shard", "0", "--align=--model m"],
    ],
    ids=["paraphraser-train", "align-predict", "align-paraphrases", "frameid-train", "iterate"],
)
def test_every_model_command_given_a_gpu_it_cannot_use_stops_before_writing(tmp_path, capsys, no_cuda, command):
    """The device is chosen when the command starts (cli.options), before it reads or writes a file."""
    no_cuda.setenv("SLURM_STEP_GPUS", "0")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "this job was given a GPU (SLURM_STEP_GPUS=0), but torch cannot use CUDA" in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_device_line_names_a_gpu_by_its_hardware_name(monkeypatch, caplog):
    """On CUDA the line names the card (simulated here), once per device and dtype."""
    monkeypatch.setattr(devices, "_announced", set())
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    with caplog.at_level(logging.INFO, logger="spanaug.core.devices"):
        devices.log_device(torch.device("cuda"), torch.bfloat16)
        devices.log_device(torch.device("cuda"), torch.bfloat16)
    lines = [r.getMessage() for r in caplog.records if r.name == "spanaug.core.devices"]
    assert len(lines) == 1 and lines[0].startswith("device: cuda (NVIDIA H100 80GB HBM3), dtype: bfloat16"), lines


@pytest.mark.parametrize(
    ("device", "env", "gpus", "expected"),
    [
        ("auto", {}, 0, "cpu"),
        ("auto", {}, 1, "cuda"),
        ("auto", {"SLURM_JOB_GPUS": "0"}, 1, "cuda"),
        ("cuda", {}, 1, "cuda"),
        ("cpu", {"SLURM_JOB_GPUS": "0"}, 1, "cpu"),  # device: cpu is honoured, as for the other backends
        ("auto", {"SLURM_JOB_GPUS": "0"}, 0, "this job was given a GPU (SLURM_JOB_GPUS=0)"),
        ("auto", {"CUDA_VISIBLE_DEVICES": "1"}, 0, "this job was given a GPU (CUDA_VISIBLE_DEVICES=1)"),
        ("cuda", {}, 0, "the config names CUDA"),
        ("mps", {}, 0, "the ct2 backend runs on cpu or cuda"),
    ],
)
def test_ct2_on_a_gpu_job_decodes_on_the_gpu_or_is_refused(no_cuda, device, env, gpus, expected):
    """An explicit backend: ct2 on a job given a GPU never decodes on the CPU: where CTranslate2
    sees no CUDA device, the job stops with a config error, as the other backends' device check does."""
    from spanaug.core.errors import ConfigError
    from spanaug.pipeline.paraphraser.ct2_backend import ct2_device

    for name, value in env.items():
        no_cuda.setenv(name, value)
    if expected in ("cpu", "cuda"):
        assert ct2_device(device, gpus) == expected
    else:
        with pytest.raises(ConfigError, match=re.escape(expected)):
            ct2_device(device, gpus)
