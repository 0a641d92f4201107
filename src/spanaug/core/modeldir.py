"""Trained model directories, one convention for every model of the project.

A model's trained head is an ``nn.Module`` with ``huggingface_hub.PyTorchModelHubMixin``: its config
dataclass goes to ``config.json`` and its weights to ``model.safetensors``; a tuned encoder, when there
is one, is saved beside them with ``save_pretrained`` (in ``encoder/``, :data:`ENCODER_DIR`). The
directory is written into a temporary folder that replaces it once complete, so a killed job never
leaves half a model; every file and folder in it then gets the umask's permissions, as every
artifact does.

Every folder written so carries a manifest (``spanaug-manifest.json``: each file's size and
sha256), checked when the model is loaded: safetensors checks a file's header, not its data, so a
damaged weights file would otherwise load and predict nonsense.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spanaug.core.errors import ConfigError, InputError, SpanaugError
from spanaug.core.files import apply_umask_tree, read_json, temporary_beside, write_json

#: The file a head's config is saved to (huggingface_hub's name).
CONFIG_FILE = "config.json"
#: Where a model with a tuned encoder saves it (with its tokenizer), inside the model directory.
ENCODER_DIR = "encoder"
#: Each file of a model folder spanaug wrote, with its size and sha256.
MANIFEST_FILE = "spanaug-manifest.json"
#: What training a model records beside it (its data, settings, history and held-out scores); read by
#: the report and by ``spanaug.core.provenance`` (whether the model is a toy).
TRAINING_SUMMARY = "training_summary.json"
MANIFEST_FORMAT = 1


def write_training_summary(model_dir: Path | str, summary: Any) -> None:
    """Record what training a model saved in ``model_dir`` did (:data:`TRAINING_SUMMARY`)."""
    write_json(summary, Path(model_dir) / TRAINING_SUMMARY)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(folder: Path | str, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Record every file under ``folder`` (but the top-level names in ``skip``, e.g. a trainer's
    checkpoints) in its manifest; returns the manifest."""
    folder = Path(folder)
    entries = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel == MANIFEST_FILE or rel.split("/", 1)[0] in skip:
            continue
        entries[rel] = {"size": path.stat().st_size, "sha256": _sha256(path)}
    manifest = {"format": MANIFEST_FORMAT, "files": entries}
    write_json(manifest, folder / MANIFEST_FILE)
    return manifest


def verify_manifest(folder: Path | str) -> bool:
    """Check ``folder`` against its manifest: each listed file present, of its size and sha256. An
    InputError names the first file that differs. False when the folder has no manifest (a hub model
    or a folder written by an older spanaug): nothing to check against."""
    folder = Path(folder)
    if not (folder / MANIFEST_FILE).is_file():
        return False
    manifest = read_json(folder / MANIFEST_FILE)
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict):
        raise InputError(folder / MANIFEST_FILE, None, "not a model manifest (no 'files' mapping)")
    for rel, entry in listed.items():
        path = folder / rel
        if not path.is_file():
            raise InputError(path, None, "listed in the model's manifest but missing")
        size = path.stat().st_size
        if size != entry.get("size"):
            raise InputError(path, None, f"{size} bytes where the model's manifest says {entry.get('size')}")
        if _sha256(path) != entry.get("sha256"):
            raise InputError(
                path, None, "its sha256 differs from the model's manifest: the file is damaged or replaced"
            )
    return True


@contextlib.contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """A temporary folder (see :func:`spanaug.core.files.temporary_beside`) that replaces ``path``
    when the block succeeds."""
    path = Path(path)
    with temporary_beside(path, directory=True) as tmp:
        yield tmp
        write_manifest(tmp)
        apply_umask_tree(tmp)  # every file the save wrote, the weights' private temporaries included
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)


def load_head(cls: Any, path: Path | str, device: Any, what: str) -> Any:
    """``cls.from_pretrained`` on a local directory: every weight required, on ``device``."""
    if not (Path(path) / CONFIG_FILE).is_file():
        raise ConfigError(f"{path}: not a trained {what} (no {CONFIG_FILE})")
    verify_manifest(path)
    # The mixin prints where it loads from on standard output, where commands write their results.
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return cls.from_pretrained(str(path), map_location=str(device), strict=True)
    except SpanaugError as exc:  # a config.json whose settings are out of bounds
        raise InputError(Path(path) / CONFIG_FILE, None, str(exc)) from exc
    except Exception as exc:  # a damaged config.json or weights file, in whatever library reads it
        raise InputError(path, None, f"not a loadable {what} ({type(exc).__name__}: {exc})") from exc
