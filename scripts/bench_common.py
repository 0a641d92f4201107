"""What the GPU benchmarks share: the FrameNet dev rows they run on, the random encoders' shapes, the
production config and the count option. ``bench_gpu.py`` (the decoding, aligning and training
measurements) and ``bench_jobs.py`` (a job's fixed cost) both import it, and neither imports the
other at import time."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from spanaug.core.config import RunConfig
from spanaug.core.overrides import read_run_config

PRODUCTION_CONFIG = REPO / "config" / "config.yaml"
#: Random BERT encoders the aligners are timed with (vocabulary 30,522, as bert-base-uncased and MiniLM).
ENCODER_SHAPES = {
    "minilm": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "small": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024},
}
#: Where the FrameNet dev CoNLL is looked for: $SPANAUG_FN_CONLL first (a copy carried to a machine
#: that lacks ../shared), then the shared data.
CONLL_CANDIDATES = [
    *([Path(os.environ["SPANAUG_FN_CONLL"])] if os.environ.get("SPANAUG_FN_CONLL") else []),
    Path("/work/shared/data/fn1.7.dev.syntaxnet.conll"),
    REPO.parent / "shared/data/fn1.7.dev.syntaxnet.conll",
]


def framenet_rows() -> list[dict]:
    """The FrameNet 1.7 dev rows (open-SESAME CoNLL, full-text), one per annotated frame."""
    from spanaug.pipeline.importers import read_conll

    for path in CONLL_CANDIDATES:
        if path.is_file():
            return list(read_conll(path))
    sys.exit("no FrameNet dev CoNLL found (looked in " + ", ".join(map(str, CONLL_CANDIDATES)) + ")")


def production_config() -> RunConfig:
    """config/config.yaml with every default filled in."""
    return read_run_config(PRODUCTION_CONFIG)


def encoder_size(name: str) -> str:
    """The random stand-in for a configured encoder: MiniLM-sized for MiniLM, else BERT-base-sized."""
    return "minilm" if "minilm" in name.lower() else "base"


def positive(text: str) -> int:
    """A count option: a whole number of at least 1 (argparse reports anything else as a usage error)."""
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value
