"""The CTranslate2 backend: the same model converted with CTranslate2 (once, into a cache)."""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import torch

from spanaug.core import model_files
from spanaug.core.config import DecodeSettings
from spanaug.core.devices import cpu_name, device_name, gpu_allocation, log_device
from spanaug.core.engine import EngineRecord
from spanaug.core.errors import ConfigError
from spanaug.pipeline.paraphraser import model_check
from spanaug.pipeline.paraphraser.decoder_step import UnsupportedModel
from spanaug.pipeline.paraphraser.paraphrase_decoder import HostTools, ParaphraseDecoder, Prepared, SentenceBeams
from spanaug.pipeline.paraphraser.search_spec import SearchSpec


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS has one, as under SLURM)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else os.cpu_count() or 1)


def ct2_device(device: str | None, cuda_devices: int) -> str:
    """Where CTranslate2 decodes: CUDA when the config names it or (``auto``) when CTranslate2 sees
    a GPU; a job that names CUDA or was given a GPU (:func:`~spanaug.core.devices.gpu_allocation`)
    and that CTranslate2 cannot run on one is refused, never decoded on the CPU (as
    :func:`~spanaug.core.devices.choose_device` refuses it for the other backends)."""
    named = str(device or "auto")
    wants_gpu = named.startswith("cuda") or (named == "auto" and gpu_allocation() is not None)
    if named not in ("auto", "cpu") and not named.startswith("cuda"):
        raise ConfigError(f"device: {named!r}: the ct2 backend runs on cpu or cuda; set paraphraser.backend: hf")
    if cuda_devices and named != "cpu":
        return "cuda"
    if wants_gpu:
        why = "the config names CUDA" if named.startswith("cuda") else f"this job was given a GPU ({gpu_allocation()})"
        raise ConfigError(
            f"paraphraser.backend: ct2: {why}, but CTranslate2 sees no CUDA device on host "
            f"{socket.gethostname()}: not decoding on the CPU; install a CUDA build of CTranslate2, set "
            "paraphraser.backend: auto (the static backend on CUDA), or set device: cpu"
        )
    return "cpu"


#: The families whose CTranslate2 conversion decodes as transformers does: the same beams and scores
#: as the hf backend (tests/test_paraphraser_families.py). mT5 and mBART are not among them under
#: transformers 5: CTranslate2's converter rescales mT5's decoder output, which transformers 5 no
#: longer does, and reads an mBART config attribute (normalize_before) that transformers 5 removed.
CT2_FAMILIES = frozenset({"t5", "bart", "pegasus", "marian"})


def check_family(name_or_path: str | Path, config: Any) -> None:
    """Refuse a model whose family CTranslate2 would decode differently (``auto`` then uses hf)."""
    model_type = getattr(config, "model_type", None)
    if model_type not in CT2_FAMILIES:
        raise UnsupportedModel(
            f"{name_or_path}: CTranslate2 does not decode model type {model_type!r} as transformers does "
            f"(the ct2 backend takes {', '.join(sorted(CT2_FAMILIES))})"
        )


@dataclasses.dataclass
class CT2Prepared(Prepared):
    """A batch's CTranslate2 calls: each call's sentences (indices in the batch), its length limit
    and the token pieces of its suppressed sequences; every sentence's source as pieces."""

    sources: list[list[str]] = dataclasses.field(default_factory=list)
    calls: list[tuple[list[int], int, list[list[str]]]] = dataclasses.field(default_factory=list)


def constraint_set(request: dict[str, Any], cfg: DecodeSettings) -> tuple[str, ...]:
    """What one CTranslate2 call shares: the request's constraint set (``ct2_batching: exact``), or
    nothing (``union``: a call suppresses the union of its sentences' sets)."""
    return () if cfg.ct2_batching == "union" else tuple(sorted(set(request["constraints"])))


class CT2Paraphraser(ParaphraseDecoder):
    """The same model converted with CTranslate2; constraints become ``suppress_sequences``.

    CTranslate2 applies ``suppress_sequences`` and ``max_decoding_length`` to a whole
    ``translate_batch`` call; its Python API has no per-example constraint or logits-processor
    option. So with ``ct2_batching: exact`` (the default) requests are batched by identical
    constraint set (batches never mix sets) and each call holds the requests of one set and one
    length limit: every sentence is decoded under exactly its own constraints, and the beams equal
    the hf backend's. ``ct2_batching: union`` decodes whole token-budget batches in one call per
    length limit under the union of their sentences' sets: real batches (for GPUs), every output
    still avoids its own phrases, but a sentence also avoids its batch-mates' phrases, so beams can
    differ from hf. Calls are submitted asynchronously; on CPU they run side by side.
    """

    #: Its batches decode in turn: CTranslate2 runs a batch's calls asynchronously itself.
    overlap_host = False
    backend = "ct2"

    def __init__(self, translator, tokenizer, device: str, config: Any = None, generation: Any = None):
        self.translator = translator
        self.tokenizer = tokenizer
        #: The converted model's transformers config and generation config (what its search reads).
        self.config = config
        self.generation = generation
        self.device = torch.device("cuda" if device == "cuda" else "cpu")
        #: CTranslate2's compute type (its dtype), as the translator reports it, and its CPU threads.
        self.compute_type = str(getattr(translator, "compute_type", None) or "default")
        self.cpu_threads = 1
        #: The converted model's target vocabulary (None: not known): a sequence the model never
        #: generates is suppressed only when CTranslate2 has its tokens (its Marian conversion has no
        #: <pad>, which it cannot generate, and refuses to suppress one).
        self.target_vocabulary: frozenset[str] | None = None

    def generation_config(self) -> Any:
        return self.generation

    def model_config(self) -> Any:
        return self.config

    def provenance(self, cfg: DecodeSettings) -> EngineRecord:
        if self.device.type == "cpu":  # CTranslate2's own threads, not torch's
            device = cpu_name(self.cpu_threads)
        else:  # torch names the card where it sees it (CTranslate2 may see one that a CPU-only torch does not)
            device = device_name(self.device) if torch.cuda.is_available() else "CUDA device"
        return EngineRecord(self.backend, device, self.compute_type)

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        device: str | None = "auto",
        dtype: str | None = "auto",
        ct2_cache: str | Path | None = None,
    ) -> CT2Paraphraser:
        """Load ``name_or_path`` converted (on first use) into ``ct2_cache``
        (default: :func:`.ct2_convert.cache_root`)."""
        try:
            import ctranslate2
        except ImportError:
            raise ConfigError("the ct2 backend needs the ctranslate2 package (pip install 'spanaug[ct2]')") from None
        from transformers import AutoConfig

        from spanaug.pipeline.paraphraser.ct2_convert import converted_model

        dev = ct2_device(device, ctranslate2.get_cuda_device_count())
        model_files.check_files(name_or_path)
        config = model_files.loaded(name_or_path, "config", lambda: AutoConfig.from_pretrained(str(name_or_path)))
        check_family(name_or_path, config)
        tokenizer = model_files.load_tokenizer(name_or_path, config.vocab_size)
        target = converted_model(name_or_path, cache=ct2_cache)
        compute = {"auto": "default", None: "default"}.get(dtype, dtype)
        # Requests are decoded in one call per constraint set: on CPU, run those calls side by side, one
        # per core this process may use (a SLURM job's CPUs, not the node's).
        threads = {"inter_threads": usable_cores(), "intra_threads": 1} if dev == "cpu" else {}
        translator = ctranslate2.Translator(str(target), device=dev, compute_type=compute or "default", **threads)
        log_device(torch.device(dev), getattr(translator, "compute_type", compute))
        paraphraser = cls(translator, tokenizer, dev, config, model_generation_config(name_or_path, config))
        paraphraser.compute_type = str(getattr(translator, "compute_type", None) or compute or "default")
        paraphraser.cpu_threads = threads.get("inter_threads", 1)
        paraphraser.name, paraphraser.positions = str(name_or_path), model_check.positions(config)
        paraphraser.target_vocabulary = target_vocabulary(Path(target))
        return paraphraser

    def _pieces(self, text: str, prefix: str = "", tokenizer: Any = None) -> list[str]:
        tokenizer = tokenizer or self.tokenizer
        return tokenizer.convert_ids_to_tokens(tokenizer(prefix + text, truncation=True)["input_ids"])

    def batch_group(self, requests: Sequence[dict[str, Any]], cfg: DecodeSettings) -> Callable[[int], Hashable] | None:
        """Exact batching: a batch holds one constraint set (a call applies its set to all its sentences)."""
        if cfg.ct2_batching == "union":
            return None
        return lambda i: constraint_set(requests[i], cfg)

    def prepare(self, requests: list[dict[str, Any]], cfg: DecodeSettings, tools: HostTools | None = None) -> Prepared:
        """A batch's calls: one per constraint set and length limit (per length limit with
        ``ct2_batching: union``), each with its sentences' suppressed sequences and the model's
        never-generated ones."""
        spec = self.search_spec(cfg)
        tokenizer, bans = tools or self.host_tools
        sources = [self._pieces(r["source_text"], cfg.prefix, tokenizer) for r in requests]
        limits = [spec.limit(len(src)) for src in sources]
        groups: dict[tuple, list[int]] = {}
        for i, req in enumerate(requests):
            groups.setdefault((constraint_set(req, cfg), limits[i]), []).append(i)
        banned = self.banned_sequences(requests, bans, list(spec.never))
        calls = []
        for (_, limit), idx in groups.items():
            seqs = sorted({seq for i in idx for seq in banned[i]})
            calls.append((idx, limit, [tokenizer.convert_ids_to_tokens(list(seq)) for seq in seqs]))
        return CT2Prepared({}, limits, banned, sources=sources, calls=calls)

    def build_search_spec(self, cfg: DecodeSettings) -> SearchSpec:
        """The search, without the never-generated sequences whose tokens CTranslate2's vocabulary
        lacks (it cannot generate them, and refuses to suppress them)."""
        spec = super().build_search_spec(cfg)
        if self.target_vocabulary is None:
            return spec
        known = [
            s
            for s in spec.never
            if all(p in self.target_vocabulary for p in self.tokenizer.convert_ids_to_tokens(list(s)))
        ]
        return dataclasses.replace(spec, never=tuple(known))

    def decode(self, prepared: Prepared, cfg: DecodeSettings, batch_index: int) -> list[SentenceBeams]:
        """The batch's calls, submitted at once (on CPU they run side by side), then collected."""
        import ctranslate2

        assert isinstance(prepared, CT2Prepared)
        spec = self.search_spec(cfg)
        if spec.mode == "sample":
            ctranslate2.set_random_seed(spec.batch_seed(batch_index))
        pending = [
            (
                idx,
                self.translator.translate_batch(
                    [prepared.sources[i] for i in idx],
                    max_decoding_length=limit,
                    suppress_sequences=banned or None,
                    asynchronous=True,
                    **spec.ct2_kwargs(),
                ),
            )
            for idx, limit, banned in prepared.calls
        ]
        out = [SentenceBeams([], []) for _ in prepared.limits]
        for idx, results in pending:
            for i, res in zip(idx, results):
                r = res.result()
                scores = r.scores if spec.mode == "beam" else [float("nan")] * len(r.hypotheses)
                # Detokenized through token ids (texts()), as the hf backend does, so both give the same text.
                out[i] = SentenceBeams([self.tokenizer.convert_tokens_to_ids(h) for h in r.hypotheses], list(scores))
        return out

    def score_outputs(self, requests: list[dict[str, Any]], outputs: list[str], cfg: DecodeSettings) -> list[float]:
        return self.score([r["source_text"] for r in requests], outputs, cfg.prefix)

    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised NLL from CTranslate2's own scoring of the output (end token included)."""
        src = [self._pieces(s, prefix) for s in sources]
        # CTranslate2 appends the end token to a target itself.
        tgt = [[t for t in self._pieces(o) if t != self.tokenizer.eos_token] for o in outputs]
        results = self.translator.score_batch(src, tgt)
        return [-sum(r.log_probs) / max(1, len(r.log_probs)) for r in results]


def model_generation_config(name_or_path: str | Path, config: Any) -> Any:
    """A model's generation config: its generation_config.json, else the one its config implies."""
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(str(name_or_path))
    except (OSError, ValueError):  # no generation_config.json: transformers derives one from the config
        return GenerationConfig.from_model_config(config)


def target_vocabulary(folder: Path) -> frozenset[str] | None:
    """The tokens of a converted model's target (or shared) vocabulary, None when it has no such file."""
    import json

    for name in ("target_vocabulary.json", "shared_vocabulary.json"):
        path = folder / name
        if path.is_file():
            return frozenset(json.loads(path.read_text(encoding="utf-8")))
    return None
