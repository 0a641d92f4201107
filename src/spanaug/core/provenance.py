"""Whether a model is a toy, read from the model's own records rather than from where it lies.

A release made with the demo's models looks real unless its card says so: a model folder moved or
named in another run's config (``aligner.model: results/demo/models/aligner``) carries no sign of
the demo in its path that a reader could trust. So the records the model was saved with decide:

* ``spanaug-standin.json``, which :mod:`spanaug.demo.standins` writes beside a model with random
  weights (a stand-in for tests, benchmarks and rehearsals); an aligner whose encoder is one is one too;
* ``training_summary.json``, which training writes: a paraphraser trained from scratch (no
  :data:`INITIAL_MODEL` recorded) on the bundled demo bitext or on fewer than :data:`TOY_PAIRS`
  sentence pairs, an aligner trained on fewer than :data:`TOY_INSTANCES` span instances, is a toy
  (the demo recipe trains both on 76 pairs). A pretrained model fine-tuned on a small bitext is no
  toy by that count: its pretraining, not the bitext, makes its language.

A hub name or a folder without records says nothing: its own model card speaks for it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from spanaug.core.modeldir import TRAINING_SUMMARY

#: Written beside a model with random weights (spanaug.demo.standins).
STANDIN_FILE = "spanaug-standin.json"
#: Fewer training pairs than this make a paraphraser a toy (ParaBank-style bitexts have millions).
TOY_PAIRS = 1_000
#: Fewer training instances than this make an aligner a toy (the production corpora give ~100,000).
TOY_INSTANCES = 1_000
#: The bundled demo data, as its records name it.
DEMO_DATA = "resources/demo/"
#: The rule above, as the report's toy-models banner states it.
TOY_RULE = (
    f"a paraphraser trained from scratch on the bundled demo bitext or on fewer than {TOY_PAIRS:,} sentence "
    f"pairs, an aligner trained on fewer than {TOY_INSTANCES:,} span instances, and a model with random "
    "weights count as toys"
)
#: The key under which a fine-tuned paraphraser's training summary (or its ``config``, the training
#: settings) names the pretrained model it started from; absent or null: trained from scratch.
INITIAL_MODEL = "init"


@dataclasses.dataclass(frozen=True)
class ModelOrigin:
    """A model of the run (``role``: paraphraser or aligner) and, when it is a toy, why."""

    role: str
    path: str
    toy: str | None = None

    def describe(self) -> str:
        return f"the {self.role} `{self.path}` is {self.toy}" if self.toy else ""


def write_standin_record(folder: Path | str, what: str) -> None:
    """Mark ``folder`` as a stand-in: a model with random weights (``what`` says which)."""
    record = {"stand_in": True, "weights": "random", "what": what}
    (Path(folder) / STANDIN_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _standin(folder: Path) -> str | None:
    record = _read(folder / STANDIN_FILE)
    return f"a stand-in with random weights ({record.get('what', 'spanaug.demo.standins')})" if record else None


def initial_model(summary: dict[str, Any]) -> str | None:
    """The pretrained model a paraphraser was fine-tuned from, as its training summary records it."""
    config = summary.get("config") if isinstance(summary.get("config"), dict) else {}
    value = summary.get(INITIAL_MODEL) or config.get(INITIAL_MODEL)
    return str(value) if value else None


def _paraphraser_toy(summary: dict[str, Any]) -> str | None:
    if initial_model(summary):
        return None
    pairs = summary.get("pairs")
    bitext = str((summary.get("config") or {}).get("bitext") or "")
    if DEMO_DATA in Path(bitext).as_posix() + "/":
        return (
            f"a toy trained from scratch by the demo recipe ({summary.get('steps', '?')} steps on {pairs} pairs "
            f"of `{bitext}`)"
        )
    if isinstance(pairs, int) and pairs < TOY_PAIRS:
        return f"a toy: trained from scratch on {pairs} sentence pairs of `{bitext}` (fewer than {TOY_PAIRS:,})"
    return None


def paraphraser_training(path: str | None) -> str | None:
    """How the paraphraser at ``path`` was trained, by its training summary: from scratch or fine-tuned
    from a pretrained model, on how many pairs of which bitext (None: no record, e.g. a hub model)."""
    summary = _read(Path(path) / TRAINING_SUMMARY) if path and Path(path).is_dir() else None
    if not summary:
        return None
    pairs, bitext = summary.get("pairs"), (summary.get("config") or {}).get("bitext")
    on = f" on {pairs:,} sentence pairs" if isinstance(pairs, int) else ""
    on += f" of `{bitext}`" if bitext else ""
    start = initial_model(summary)
    return f"fine-tuned from `{start}`{on}" if start else f"trained from scratch{on}"


def _aligner_toy(folder: Path, summary: dict[str, Any] | None) -> str | None:
    config = _read(folder / "config.json") or {}
    encoder = config.get("encoder")
    if isinstance(encoder, str) and Path(encoder).is_dir() and _standin(Path(encoder)):
        return f"built on a stand-in encoder with random weights (`{encoder}`)"
    if not summary:
        return None
    corpora = [c for c in summary.get("corpora") or [] if isinstance(c, dict) and c.get("part") == "train"]
    files = [str(c.get("file", "")) for c in corpora]
    instances = sum(int(c.get("instances") or 0) for c in corpora)
    if any(DEMO_DATA in Path(f).as_posix() for f in files):
        return f"a toy trained by the demo recipe (on {instances} instances of the bundled demo data)"
    if corpora and instances < TOY_INSTANCES:
        return f"a toy: trained on {instances} span instances ({', '.join(f'`{f}`' for f in files)})"
    return None


def model_origin(role: str, path: str | None) -> ModelOrigin | None:
    """What the records of the model at ``path`` say of it (None: no model named)."""
    if not path:
        return None
    folder = Path(path)
    if not folder.is_dir():
        return ModelOrigin(role, path)
    toy = _standin(folder)
    if toy is None:
        summary = _read(folder / TRAINING_SUMMARY)
        if role == "paraphraser":
            toy = _paraphraser_toy(summary) if summary else None
        else:
            toy = _aligner_toy(folder, summary)
    return ModelOrigin(role, path, toy)


def toy_models(paraphraser: str | None, aligner: str | None) -> list[ModelOrigin]:
    """The run's models that are toys (stand-ins, or trained by the demo recipe), by their records."""
    origins = [model_origin("paraphraser", paraphraser), model_origin("aligner", aligner)]
    return [o for o in origins if o is not None and o.toy]
