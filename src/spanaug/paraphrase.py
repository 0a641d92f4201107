"""Lexically constrained paraphrasing with a Hugging Face seq2seq model.

Each request carries its own negative constraints (phrases the output must not contain). Every
phrase becomes banned token sequences, enforced per sentence during decoding with the semantics
of ``bad_words_ids`` (a phrase's last token is forbidden once the preceding ones were
generated), and every output is re-checked on its detokenised text afterwards: a violating
output is dropped and counted, never kept.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from spanaug import artifacts
from spanaug.constraints import violations
from spanaug.data import tokenize
from spanaug.errors import ConfigError

log = logging.getLogger(__name__)

_SPACE_MARKERS = ("▁", "Ġ")


def choose_device(device: str | None = "auto") -> torch.device:
    """The device to run on: CUDA when present, unless the config names one."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def choose_dtype(device: torch.device, dtype: str | None = "auto") -> torch.dtype:
    """bf16 on GPUs that support it (fp16 otherwise), fp32 on CPU, unless the config names one."""
    if dtype not in (None, "auto"):
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def default_batch_size(device: torch.device, mode: str, width: int) -> int:
    """Sentences per batch, so that batch * beams stays near what each device handles well."""
    rows = 2048 if device.type == "cuda" else 128
    return max(1, rows // max(1, width))


def banned_sequences(tokenizer, phrases: Iterable[str]) -> list[tuple[int, ...]]:  # noqa: ANN001
    """Token-id sequences for each phrase, mid-sentence and sentence-initially.

    A phrase is tokenized as it would appear after a space and at the start of the text, and,
    for SentencePiece/byte-level vocabularies, also with the word-boundary marker removed.
    """
    vocab = tokenizer.get_vocab()
    out: set[tuple[int, ...]] = set()
    for phrase in phrases:
        if not phrase.strip():
            continue
        for text in (phrase, " " + phrase):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if not ids:
                continue
            out.add(tuple(ids))
            pieces = tokenizer.convert_ids_to_tokens(ids)
            first = pieces[0]
            if first in _SPACE_MARKERS and len(ids) > 1:
                out.add(tuple(ids[1:]))  # marker tokenized as a piece of its own
            elif first[:1] in _SPACE_MARKERS and first[1:] in vocab:
                out.add((vocab[first[1:]], *ids[1:]))
            elif first[:1] not in _SPACE_MARKERS:
                for marker in _SPACE_MARKERS:
                    if marker + first in vocab:
                        out.add((vocab[marker + first], *ids[1:]))
    special = set(tokenizer.all_special_ids)
    return sorted(seq for seq in out if not (len(seq) == 1 and seq[0] in special))


class PerSentenceBannedSequences:
    """Logits processor banning each sentence's own sequences (``bad_words_ids`` per sentence).

    Rows of the decoder batch belong to sentences in blocks (beams or samples of one input), so
    row ``r`` obeys the constraints of sentence ``r // rows_per_sentence``.
    """

    def __init__(self, banned: Sequence[Sequence[tuple[int, ...]]], vocab_size: int, device: torch.device):
        self.n_sentences = len(banned)
        self.single = torch.zeros(len(banned), vocab_size, dtype=torch.bool, device=device)
        # prefix -> tokens that may not follow it, per sentence; prefixes grouped by length.
        self.by_prefix: list[dict[tuple[int, ...], list[int]]] = []
        self.prefix_lengths: list[list[int]] = []
        for i, seqs in enumerate(banned):
            table: dict[tuple[int, ...], list[int]] = {}
            for seq in seqs:
                if len(seq) == 1:
                    if seq[0] < vocab_size:
                        self.single[i, seq[0]] = True
                else:
                    table.setdefault(tuple(seq[:-1]), []).append(seq[-1])
            self.by_prefix.append(table)
            self.prefix_lengths.append(sorted({len(p) for p in table}))

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        rows = input_ids.shape[0]
        per = rows // self.n_sentences
        mask = self.single.repeat_interleave(per, dim=0)
        if any(self.prefix_lengths):
            history = input_ids.tolist()
            for r, hist in enumerate(history):
                s = r // per
                table = self.by_prefix[s]
                for length in self.prefix_lengths[s]:
                    if length <= len(hist):
                        for tok in table.get(tuple(hist[-length:]), ()):
                            if tok < mask.shape[1]:
                                mask[r, tok] = True
        return scores.masked_fill(mask[:, : scores.shape[1]], float("-inf"))


@dataclasses.dataclass
class DecodeConfig:
    """How to decode: beam search (``beam``) or top-k sampling (``sample``)."""

    mode: str = "beam"
    beam_size: int = 20
    return_top: int = 3
    top_k: int = 20
    num_samples: int = 3
    seed: int = 0
    batch_size: int | None = None
    max_new_tokens: int | None = None
    prefix: str = ""

    def __post_init__(self) -> None:
        if self.mode not in ("beam", "sample"):
            raise ConfigError(f"paraphrase.mode must be 'beam' or 'sample', not {self.mode!r}")
        if self.mode == "beam" and not 1 <= self.return_top <= self.beam_size:
            raise ConfigError("paraphrase.return_top must be between 1 and paraphrase.beam_size")

    @property
    def width(self) -> int:
        return self.beam_size if self.mode == "beam" else self.num_samples


@dataclasses.dataclass
class DecodeStats:
    requests: int = 0
    outputs: int = 0
    violations_dropped: int = 0
    duplicates_dropped: int = 0
    requests_without_output: int = 0


class Paraphraser:
    """A seq2seq paraphraser (``AutoModelForSeq2SeqLM``) decoding under negative constraints."""

    def __init__(self, model, tokenizer, device: torch.device, dtype: torch.dtype):  # noqa: ANN001
        self.model = model.to(device=device, dtype=dtype).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.dtype = dtype

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path, device: str | None = "auto",
                        dtype: str | None = "auto") -> "Paraphraser":
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        dev = choose_device(device)
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path))
        model = AutoModelForSeq2SeqLM.from_pretrained(str(name_or_path))
        return cls(model, tokenizer, dev, choose_dtype(dev, dtype))

    def _encode(self, texts: list[str], prefix: str) -> dict[str, torch.Tensor]:
        enc = self.tokenizer([prefix + t for t in texts], padding=True, truncation=True, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items()}

    @torch.inference_mode()
    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised negative log-likelihood of each output given its source."""
        enc = self._encode(sources, prefix)
        labels = self.tokenizer(text_target=outputs, padding=True, truncation=True, return_tensors="pt")["input_ids"].to(self.device)
        labels = labels.masked_fill(labels == self.tokenizer.pad_token_id, -100)
        logits = self.model(**enc, labels=labels).logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        mask = labels != -100
        token_logp = logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
        return (-(token_logp.sum(-1)) / mask.sum(-1).clamp(min=1)).tolist()

    @torch.inference_mode()
    def _generate_batch(self, requests: list[dict[str, Any]], cfg: DecodeConfig, batch_index: int) -> list[list[str]]:
        enc = self._encode([r["source_text"] for r in requests], cfg.prefix)
        banned = [banned_sequences(self.tokenizer, r["constraints"]) for r in requests]
        processor = PerSentenceBannedSequences(banned, self.model.config.vocab_size, self.device)
        max_new = cfg.max_new_tokens or int(enc["input_ids"].shape[1] * 1.5) + 10
        kwargs: dict[str, Any] = {"max_new_tokens": max_new, "logits_processor": [processor]}
        if cfg.mode == "beam":
            kwargs.update(num_beams=cfg.beam_size, num_return_sequences=cfg.beam_size, do_sample=False,
                          early_stopping=True)
        else:
            torch.manual_seed(cfg.seed * 100003 + batch_index)
            kwargs.update(do_sample=True, top_k=cfg.top_k, num_beams=1, num_return_sequences=cfg.num_samples)
        out = self.model.generate(**enc, **kwargs)
        texts = self.tokenizer.batch_decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        width = cfg.width
        return [texts[i * width : (i + 1) * width] for i in range(len(requests))]

    def paraphrase(self, requests: Sequence[dict[str, Any]], cfg: DecodeConfig, stats: DecodeStats | None = None,
                   progress: bool = True) -> Iterator[dict[str, Any]]:
        """Decode every request; yield PARAPHRASES rows (request keys + beam outputs), in input order."""
        stats = stats if stats is not None else DecodeStats()
        batch_size = cfg.batch_size or default_batch_size(self.device, cfg.mode, cfg.width)
        order = sorted(range(len(requests)), key=lambda i: len(requests[i]["source_tokens"]))
        results: dict[int, list[dict[str, Any]]] = {}
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        for b, idx in enumerate(tqdm(batches, desc="paraphrase", unit="batch", disable=not progress)):
            batch = [requests[i] for i in idx]
            candidates = self._generate_batch(batch, cfg, b)
            keep: list[tuple[int, str]] = []
            for i, req, cands in zip(idx, batch, candidates):
                stats.requests += 1
                seen: set[str] = set()
                kept = []
                for text in cands:
                    text = text.strip()
                    if not text or text in seen:
                        stats.duplicates_dropped += bool(text)
                        continue
                    seen.add(text)
                    if violations(text, req["constraints"]):
                        stats.violations_dropped += 1
                        continue
                    kept.append(text)
                limit = cfg.return_top if cfg.mode == "beam" else cfg.num_samples
                kept = kept[:limit]
                if not kept:
                    stats.requests_without_output += 1
                keep.extend((i, t) for t in kept)
            if not keep:
                continue
            scores = self.score([requests[i]["source_text"] for i, _ in keep], [t for _, t in keep], cfg.prefix)
            for (i, text), score in zip(keep, scores):
                results.setdefault(i, []).append({**requests[i], "paraphrase_text": text,
                                                  "paraphrase_tokens": tokenize(text), "paraphrase_score": float(score)})
                stats.outputs += 1
        for i in range(len(requests)):
            # Rank by the exact score (constraints make the decoder's own scores approximate).
            ranked = sorted(results.get(i, []), key=lambda r: r["paraphrase_score"])
            for rank, row in enumerate(ranked):
                yield {**row, "beam_rank": rank}


def load_paraphraser(backend: str, model: str, device: str | None = "auto", dtype: str | None = "auto") -> Paraphraser:
    if backend not in BACKENDS:
        raise ConfigError(f"paraphraser.backend must be one of {sorted(BACKENDS)}, not {backend!r}")
    return BACKENDS[backend].from_pretrained(model, device=device, dtype=dtype)


def paraphrase_stage(requests_path: Path | str, out: Path | str, model: str, cfg: DecodeConfig,
                     device: str | None = "auto", dtype: str | None = "auto", chunk_rows: int = 4096,
                     stats_path: Path | str | None = None, backend: str = "hf") -> DecodeStats:
    """CLI stage: a REQUESTS shard -> a PARAPHRASES shard, processed in chunks."""
    paraphraser = load_paraphraser(backend, model, device=device, dtype=dtype)
    stats = DecodeStats()
    with artifacts.open_writer(out, artifacts.PARAPHRASES) as writer:
        for table in artifacts.iter_batches(requests_path, artifacts.REQUESTS, chunk_rows):
            rows = list(paraphraser.paraphrase(table.to_pylist(), cfg, stats))
            writer.write(rows)
    log.info("paraphrase %s: %s", requests_path, dataclasses.asdict(stats))
    if stats_path:
        with artifacts.atomic_path(stats_path) as tmp:
            tmp.write_text(json.dumps(dataclasses.asdict(stats), indent=2))
    return stats


# ---------------------------------------------------------------- CTranslate2 backend


class CT2Paraphraser(Paraphraser):
    """The same model converted with CTranslate2; constraints become ``suppress_sequences``.

    CTranslate2 applies ``suppress_sequences`` to a whole ``translate_batch`` call, so requests
    are grouped by identical constraint sets (one call per group, submitted asynchronously) to
    keep every sentence under exactly its own constraints.
    """

    def __init__(self, translator, tokenizer, device: str):  # noqa: ANN001
        self.translator = translator
        self.tokenizer = tokenizer
        self.device = torch.device("cuda" if device == "cuda" else "cpu")

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path, device: str | None = "auto", dtype: str | None = "auto",
                        ct2_dir: str | Path | None = None) -> "CT2Paraphraser":
        try:
            import ctranslate2
        except ImportError:
            raise ConfigError("the ct2 backend needs the ctranslate2 package (pip install 'spanaug[ct2]')") from None
        from transformers import AutoTokenizer

        src = Path(str(name_or_path))
        target = Path(ct2_dir) if ct2_dir else (src / "ctranslate2" if src.is_dir() else Path.home() / ".cache/spanaug/ct2" / str(name_or_path).replace("/", "--"))
        if not (target / "model.bin").is_file():
            ctranslate2.converters.TransformersConverter(str(name_or_path)).convert(str(target), force=True)
        dev = "cuda" if (device in (None, "auto") and ctranslate2.get_cuda_device_count()) or device == "cuda" else "cpu"
        compute = {"auto": "default", None: "default"}.get(dtype, dtype)
        # Requests are decoded in one call per constraint set: on CPU, run those calls side by side.
        threads = {"inter_threads": max(1, os.cpu_count() or 1), "intra_threads": 1} if dev == "cpu" else {}
        translator = ctranslate2.Translator(str(target), device=dev, compute_type=compute or "default", **threads)
        return cls(translator, AutoTokenizer.from_pretrained(str(name_or_path)), dev)

    def _pieces(self, text: str, prefix: str = "") -> list[str]:
        return self.tokenizer.convert_ids_to_tokens(self.tokenizer(prefix + text)["input_ids"])

    def _generate_batch(self, requests: list[dict[str, Any]], cfg: DecodeConfig, batch_index: int) -> list[list[str]]:
        import ctranslate2

        groups: dict[tuple[str, ...], list[int]] = {}
        for i, req in enumerate(requests):
            groups.setdefault(tuple(req["constraints"]), []).append(i)
        if cfg.mode == "sample":
            ctranslate2.set_random_seed(cfg.seed * 100003 + batch_index)
        kwargs: dict[str, Any] = {"max_decoding_length": cfg.max_new_tokens or 256, "asynchronous": True}
        if cfg.mode == "beam":
            kwargs.update(beam_size=cfg.beam_size, num_hypotheses=cfg.beam_size)
        else:
            kwargs.update(beam_size=1, sampling_topk=cfg.top_k, num_hypotheses=cfg.num_samples)
        pending = []
        for constraints, idx in groups.items():
            banned = [self.tokenizer.convert_ids_to_tokens(list(seq)) for seq in banned_sequences(self.tokenizer, constraints)]
            sources = [self._pieces(requests[i]["source_text"], cfg.prefix) for i in idx]
            pending.append((idx, self.translator.translate_batch(sources, suppress_sequences=banned or None, **kwargs)))
        out: list[list[str]] = [[] for _ in requests]
        for idx, results in pending:
            for i, res in zip(idx, results):
                hyps = res.result().hypotheses
                out[i] = [self.tokenizer.convert_tokens_to_string([t for t in h if t not in self.tokenizer.all_special_tokens])
                          for h in hyps]
        return out

    def score(self, sources: list[str], outputs: list[str], prefix: str = "") -> list[float]:
        """Length-normalised NLL from CTranslate2's own scoring of the output (end token included)."""
        src = [self._pieces(s, prefix) for s in sources]
        # CTranslate2 appends the end token to a target itself.
        tgt = [[t for t in self._pieces(o) if t != self.tokenizer.eos_token] for o in outputs]
        results = self.translator.score_batch(src, tgt)
        return [-sum(r.log_probs) / max(1, len(r.log_probs)) for r in results]


BACKENDS = {"hf": Paraphraser, "ct2": CT2Paraphraser}
