"""CTranslate2 conversion of a Hugging Face seq2seq model, once, into a cache keyed by model.

The converted model goes to ``<cache>/<name>-<key>`` where ``<cache>`` is ``$SPANAUG_CT2_CACHE``,
else ``$XDG_CACHE_HOME/spanaug/ct2``, else ``~/.cache/spanaug/ct2``, and ``<key>`` hashes the
model's resolved path (or hub name and revision), the modification times and sizes of its files
and the ctranslate2 version. The model directory itself is never written to (it may be read-only).
Shard jobs that start together convert once: the first takes a file lock and converts into a
temporary directory that is renamed into place (``modeldir.atomic_dir``); the others wait on the
lock and reuse the result.

Models saved by transformers 5 lack config fields that CTranslate2's converter still reads
(``normalize_before`` for BART and Pegasus, ``normalize_embedding`` for Pegasus). They are set on
the loaded model's own config object, in :class:`_Converter`, without patching transformers.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from pathlib import Path

from spanaug.core import modeldir

#: config class -> attributes the converter reads and transformers 5 no longer defines, with
#: the value that describes the architecture (BART is post-norm, Pegasus pre-norm without an
#: embedding layer norm).
_MISSING_CONFIG = {
    "BartConfig": {"normalize_before": False},
    "PegasusConfig": {"normalize_before": True, "normalize_embedding": False},
}


def cache_root() -> Path:
    if os.environ.get("SPANAUG_CT2_CACHE"):
        return Path(os.environ["SPANAUG_CT2_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spanaug" / "ct2"


def _local_dir(name_or_path: str, revision: str | None) -> Path | None:
    path = Path(name_or_path)
    if path.is_dir():
        return path.resolve()
    try:  # a hub name already in the local cache: its snapshot directory names the commit
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, revision=revision, local_files_only=True)).resolve()
    except Exception:
        return None


def model_key(name_or_path: str | Path, revision: str | None = None) -> str:
    """A stable key for one version of a model: path or name, file times and sizes, ct2 version."""
    import ctranslate2

    name_or_path = str(name_or_path)
    h = hashlib.sha256()
    local = _local_dir(name_or_path, revision)
    h.update(f"ctranslate2={ctranslate2.__version__}\n".encode())
    if local is None:
        h.update(f"name={name_or_path}\nrevision={revision}\n".encode())
    else:
        h.update(f"path={local}\n".encode())
        for f in sorted(local.iterdir()):
            if f.is_file():
                st = f.stat()  # follows links (hub snapshots link into blobs)
                h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name_or_path.rstrip("/")).name or "model")[:40]
    return f"{stem}-{h.hexdigest()[:16]}"


def _converter_class():
    from ctranslate2.converters import TransformersConverter

    class _Converter(TransformersConverter):
        def load_model(self, model_class, model_name_or_path, **kwargs):
            model = super().load_model(model_class, model_name_or_path, **kwargs)
            for attr, value in _MISSING_CONFIG.get(type(model.config).__name__, {}).items():
                if not hasattr(model.config, attr):
                    setattr(model.config, attr, value)  # this model's config object only
            return model

    return _Converter


def convert(name_or_path: str | Path, out: str | Path, revision: str | None = None) -> Path:
    """Convert into ``out`` (overwritten), float32 weights; compute types are chosen at load time."""
    conv = _converter_class()(str(name_or_path), revision=revision)
    conv.convert(str(out), force=True)
    return Path(out)


def converted_model(name_or_path: str | Path, cache: str | Path | None = None, revision: str | None = None) -> Path:
    """The CTranslate2 directory of a model, converted on first use (safe across processes)."""
    root = Path(cache) if cache else cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / model_key(name_or_path, revision)
    if (final / "model.bin").is_file():
        return final
    with open(root / f"{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if (final / "model.bin").is_file():  # another job converted it while we waited
            return final
        with modeldir.atomic_dir(final) as tmp:  # replaces a partial directory, if any
            convert(name_or_path, tmp, revision)
    return final
