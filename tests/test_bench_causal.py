"""scripts/bench_causal.py, at a tiny Gemma 3 shape on CPU: every line a GPU run reads is printed,
with positive rates, and the engine's search decodes what it is timed on."""

import importlib.util
import re
import sys

import pytest
from conftest import REPO, shared_file

pytestmark = pytest.mark.integration

spec = importlib.util.spec_from_file_location("bench_causal", REPO / "scripts" / "bench_causal.py")
bench_causal = importlib.util.module_from_spec(spec)
sys.path.insert(0, str(REPO / "scripts"))  # its imports of the other benchmark modules, as a script
spec.loader.exec_module(bench_causal)

TINY_GEMMA = {
    "vocab_size": 8192,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "sliding_window": 512,
    "query_pre_attn_scalar": 16,
    "max_position_embeddings": 1024,
}


def test_the_decoder_only_benchmark_prints_rates_the_ratio_and_the_projection(monkeypatch, capsys):
    shared_file("fn1.7.dev.syntaxnet.conll")  # skips without the shared data
    monkeypatch.setitem(bench_causal.SHAPES, "tiny-gemma3", ("gemma3", TINY_GEMMA))
    argv = ["bench_causal.py", "--device", "cpu", "--shapes", "tiny-gemma3", "--sentences", "3", "--beams", "4"]
    monkeypatch.setattr(sys, "argv", [*argv, "--iterations", "1", "3", "--generate", "--max-tokens", "6"])
    bench_causal.main()
    out = capsys.readouterr().out
    rates = {
        what: float(rate)
        for what, rate in re.findall(r"^(unconstrained|iteration \d+)[^:]*: ([\d.]+) sentences/s", out, re.M)
    }
    assert set(rates) == {"unconstrained", "iteration 1", "iteration 3"} and min(rates.values()) > 0
    assert re.search(r"iteration 3 on generate's beam search: [\d.]+ sentences/s \(the engine [\d.]+x as fast\)", out)
    hours = re.search(r"projection: 198,368 seeds x 10 iterations .*: ([\d,.]+) device-hours", out)
    assert hours and float(hours.group(1).replace(",", "")) > 0
