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
import dataclasses
import hashlib
import io
import os
import shutil
import typing
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
#: The manifest's record of what kind of spanaug model a folder holds (``argument identifier``,
#: ``Frame ID model``, ...): written by the model's save, checked by its load before any weights are
#: read. A folder that records one is no transformers model (an encoder or a paraphraser).
KIND_KEY = "model"


def write_training_summary(model_dir: Path | str, summary: Any) -> None:
    """Record what training a model saved in ``model_dir`` did (:data:`TRAINING_SUMMARY`)."""
    write_json(summary, Path(model_dir) / TRAINING_SUMMARY)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(folder: Path | str, skip: tuple[str, ...] = (), kind: str | None = None) -> dict[str, Any]:
    """Record every file under ``folder`` (but the top-level names in ``skip``, e.g. a trainer's
    checkpoints) in its manifest, with the ``kind`` of spanaug model it holds when given; returns
    the manifest."""
    folder = Path(folder)
    entries = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel == MANIFEST_FILE or rel.split("/", 1)[0] in skip:
            continue
        entries[rel] = {"size": path.stat().st_size, "sha256": _sha256(path)}
    manifest = {"format": MANIFEST_FORMAT, **({KIND_KEY: kind} if kind else {}), "files": entries}
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


def recorded_kind(folder: Path | str) -> str | None:
    """The kind of spanaug model ``folder``'s manifest records (None: no manifest, or no record)."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return None
    manifest = read_json(path)
    kind = manifest.get(KIND_KEY) if isinstance(manifest, dict) else None
    return kind if isinstance(kind, str) else None


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def check_kind(path: Path | str, what: str, config_class: Any = None) -> None:
    """Refuse a folder that holds another kind of model than ``what``, from its own records, before
    any weights are read: the kind its manifest records; for a folder that records none (an older
    spanaug's), its ``config.json``: a transformers model's ``model_type``, or settings that
    ``config_class`` (the expected model's config dataclass) has not. huggingface_hub drops those
    unknown settings silently, so another kind's folder would load and fail on tensor shapes."""
    path = Path(path)
    recorded = recorded_kind(path)
    if recorded is not None:
        if recorded != what:
            raise InputError(path, None, f"holds {_a(recorded)}, not {_a(what)} (its {MANIFEST_FILE} says so)")
        return
    saved = read_json(path / CONFIG_FILE)
    if not isinstance(saved, dict):
        raise InputError(path / CONFIG_FILE, None, f"not {_a(what)}'s config (a JSON object of its settings)")
    if "model_type" in saved:
        raise InputError(path, None, f"holds a transformers {saved['model_type']} model, not {_a(what)}")
    if config_class is not None and dataclasses.is_dataclass(config_class):
        extra = sorted(set(saved) - {f.name for f in dataclasses.fields(config_class)})
        if extra:
            raise InputError(
                path,
                None,
                f"not {_a(what)}: its {CONFIG_FILE} has settings {_a(what)} has not ({', '.join(extra[:4])}"
                f"{', ...' if len(extra) > 4 else ''}): another kind of model",
            )


@contextlib.contextmanager
def atomic_dir(path: Path | str, kind: str | None = None) -> Iterator[Path]:
    """A temporary folder (see :func:`spanaug.core.files.temporary_beside`) that replaces ``path``
    when the block succeeds; its manifest records ``kind``, the kind of spanaug model it holds."""
    path = Path(path)
    with temporary_beside(path, directory=True) as tmp:
        yield tmp
        write_manifest(tmp, kind=kind)
        apply_umask_tree(tmp)  # every file the save wrote, the weights' private temporaries included
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)


def check_head(cls: Any, path: Path | str, what: str) -> None:
    """What :func:`load_head` checks before it reads any weights: a config, the manifest, and that
    the folder holds ``what`` (:func:`check_kind`, against ``cls``'s config dataclass). A command
    that loads several models checks them all first."""
    if not (Path(path) / CONFIG_FILE).is_file():
        raise ConfigError(f"{path}: not a trained {what} (no {CONFIG_FILE})")
    verify_manifest(path)
    check_kind(path, what, typing.get_type_hints(cls.__init__).get("config"))


def load_head(cls: Any, path: Path | str, device: Any, what: str) -> Any:
    """``cls.from_pretrained`` on a local directory: every weight required, on ``device``; a folder
    that holds another kind of model than ``what`` (the kind its save recorded) is refused first."""
    check_head(cls, path, what)
    # The mixin prints where it loads from on standard output, where commands write their results.
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return cls.from_pretrained(str(path), map_location=str(device), strict=True)
    except SpanaugError as exc:  # a config.json whose settings are out of bounds
        raise InputError(Path(path) / CONFIG_FILE, None, str(exc)) from exc
    except Exception as exc:  # a damaged config.json or weights file, in whatever library reads it
        raise InputError(path, None, f"not a loadable {what} ({type(exc).__name__}: {exc})") from exc
