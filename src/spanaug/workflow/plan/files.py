"""The files outside a run that its config names: as inputs, and as empty stand-ins to plan a run
whose data are elsewhere."""

from __future__ import annotations

import dataclasses
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class ExternalFile:
    """A file or directory outside the run that the config names, and the key that names it."""

    key: str
    path: str
    directory: bool = False


def lexicon_file(key: str, path: str | None) -> list[ExternalFile]:
    """A lexicon: a JSON file, or a FrameNet release directory."""
    if not path:
        return []
    return [ExternalFile(key, path, directory=not path.endswith(".json"))]


def local_model(name: str | None) -> list[str]:
    """A model the config names, as an input when it is a local directory (a hub name is not a file)."""
    if not name:
        return []
    path = Path(name).expanduser()
    return [str(path)] if path.is_dir() else []


def make_stand_ins(files: list[ExternalFile], root: Path) -> list[Path]:
    """Empty stand-ins of ``files`` under ``root`` (to plan a run whose data are elsewhere); returns them."""
    made = []
    for file in files:
        path = root / file.path
        if file.directory:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        made.append(path)
    return made
