"""Downstream Frame ID (§6.3): find every trigger span (contiguous, up to 3 tokens) and its frame.

Word vectors concatenate a frozen encoder's first-subtoken vector, a character CNN, a POS
embedding and optional GloVe-format vectors; a stacked BiLSTM reads the sentence and a
unidirectional LSTM reads each candidate span's states; a linear layer scores frames + NULL.
Training uses cross-entropy with label smoothing 0.2 on the NULL (negative) spans. Full-text
sentences supply negatives; exemplar and augmented sentences contribute only their triggers.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import torch
from torch import nn
from tqdm import tqdm

from spanaug import artifacts
from spanaug.errors import ConfigError, InputError
from spanaug.hub import frozen_encoder
from spanaug.paraphrase import choose_device

log = logging.getLogger(__name__)

NULL = "NULL"
MAX_SPAN = 3
Span = tuple[int, int]


@dataclasses.dataclass
class Sentence:
    """Tokens with gold triggers; ``full`` when every trigger is annotated (negatives are known)."""

    tokens: list[str]
    triggers: dict[Span, str]
    pos: list[str] | None = None
    full: bool = True


# ---------------------------------------------------------------- data


def sentences_from_rows(rows: Iterable[dict[str, Any]], full: bool | None = None) -> list[Sentence]:
    """Group one-annotation-per-row SENTENCES rows into sentences (by document and tokens)."""
    grouped: dict[tuple, Sentence] = {}
    for row in rows:
        key = (row.get("document"), tuple(row["tokens"]))
        is_full = full if full is not None else row.get("corpus_part") in ("fulltext", "conll")
        sent = grouped.setdefault(key, Sentence(list(row["tokens"]), {}, row.get("pos_tags"), is_full))
        sent.triggers[(row["span_start"], row["span_end"])] = row["frame"]
    return list(grouped.values())


def read_training_file(path: Path | str) -> list[Sentence]:
    """Open-SESAME CoNLL, or Parquet: imported sentences (SENTENCES), augmented outputs or an
    augmenter's examples (EXAMPLES)."""
    from spanaug.data import read_conll

    path = Path(path)
    if path.suffix != ".parquet":
        return sentences_from_rows(read_conll(path))
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    if "output_id" in names:  # augmented outputs: only their aligned triggers
        table = artifacts.read_table(path, artifacts.AUGMENTED)
        return [Sentence(list(r["paraphrase_tokens"]), {(r["aligned_start"], r["aligned_end"]): r["frame"]}, None, False)
                for r in table.to_pylist() if r["aligned_start"] is not None]
    if "augmenter" in names:  # an augmenter's examples: only their triggers
        from spanaug.augmenters import examples_to_sentences

        return examples_to_sentences(artifacts.read_table(path, artifacts.EXAMPLES).to_pylist())
    if "sentence_id" in names:
        return sentences_from_rows(artifacts.read_table(path, artifacts.SENTENCES).to_pylist())
    raise InputError(path, None, "not imported sentences, augmented outputs or examples "
                                 "(no sentence_id/output_id/augmenter column)")


def candidate_spans(n: int, max_len: int = MAX_SPAN) -> list[Span]:
    return [(s, s + k) for s in range(n) for k in range(max_len) if s + k < n]


def split_conll(path: Path | str, out_dir: Path | str, dev_share: float = 0.1, test_share: float = 0.2) -> dict[str, int]:
    """Train/dev/test CoNLL files by contiguous sentence ranges (documents stay mostly whole).

    The open-SESAME files number sentences in document order but do not mark documents, so
    contiguous ranges stand in for held-out documents: the last ``test_share`` of sentences is
    the test split, the ``dev_share`` before it the dev split.
    """
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                current.append(line)
            elif current:
                blocks.append((current[0].split("\t")[6], current))
                current = []
    if current:
        blocks.append((current[0].split("\t")[6], current))
    sent_ids = list(dict.fromkeys(s for s, _ in blocks))
    n_test, n_dev = round(len(sent_ids) * test_share), round(len(sent_ids) * dev_share)
    part = {s: ("train" if i < len(sent_ids) - n_test - n_dev else "dev" if i < len(sent_ids) - n_test else "test")
            for i, s in enumerate(sent_ids)}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name in ("train", "dev", "test"):
        with artifacts.atomic_path(out_dir / f"{name}.conll", ".conll") as tmp, open(tmp, "w", encoding="utf-8") as out:
            for sid, lines in blocks:
                if part[sid] == name:
                    out.writelines(lines)
                    out.write("\n")
        counts[name] = sum(1 for s in sent_ids if part[s] == name)
    return counts


def split_sentences(path: Path | str, out_dir: Path | str, dev_share: float = 0.1, test_share: float = 0.2,
                    parts: Sequence[str] = ("exemplar", "fulltext")) -> dict[str, int]:
    """Train/dev/test Parquet from the imported sentences of ``parts``, whole documents (full text)
    or sentences (exemplars) at a time, ordered by a stable hash so that no frame's exemplars
    cluster in one split."""
    import hashlib

    import pyarrow.compute as pc

    table = artifacts.read_table(path, artifacts.SENTENCES)
    table = table.filter(pc.is_in(table.column("corpus_part"), value_set=pa.array(list(parts))))
    if not table.num_rows:
        raise InputError(path, None, f"no sentences of the parts {list(parts)} to split")
    rows = table.select(["tokens", "corpus_part", "document"]).to_pylist()
    groups = [r["document"] if r["corpus_part"] == "fulltext" and r["document"] else " ".join(r["tokens"])
              for r in rows]
    order = sorted(dict.fromkeys(groups), key=lambda g: hashlib.md5(g.encode()).hexdigest())
    n_test, n_dev = round(len(order) * test_share), round(len(order) * dev_share)
    part = {g: ("test" if i < n_test else "dev" if i < n_test + n_dev else "train") for i, g in enumerate(order)}
    counts = {}
    for name in ("train", "dev", "test"):
        keep = [part[g] == name for g in groups]
        counts[name] = artifacts.write_table(table.filter(keep), Path(out_dir) / f"{name}.parquet", artifacts.SENTENCES)
    return counts


# ---------------------------------------------------------------- metrics and the lexicon baseline


def triple_scores(gold: Sequence[Sentence], pred: Sequence[dict[Span, str]]) -> dict[str, float | int]:
    """Precision, recall and F1 over (sentence, span, frame) triples: span and frame must both match."""
    tp = n_pred = n_gold = 0
    for sent, p in zip(gold, pred, strict=True):
        n_gold += len(sent.triggers)
        n_pred += len(p)
        tp += sum(1 for span, frame in p.items() if sent.triggers.get(span) == frame)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    return {"precision": precision, "recall": recall,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
            "n_gold": n_gold, "n_pred": n_pred}


def non_overlapping(scored: Iterable[tuple[float, Span, str]]) -> dict[Span, str]:
    """Greedy by score: keep a predicted trigger unless it overlaps a better one."""
    kept: dict[Span, str] = {}
    for _, span, frame in sorted(scored, key=lambda x: -x[0]):
        if all(span[1] < s or span[0] > e for s, e in kept):
            kept[span] = frame
    return kept


class LexiconBaseline:
    """Most frequent label of each trigger string in training, NULL included (from full-text
    sentences, where a string's untagged occurrences are known negatives)."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter] = defaultdict(Counter)

    def fit(self, sentences: Sequence[Sentence]) -> "LexiconBaseline":
        for sent in sentences:
            for span, frame in sent.triggers.items():
                self.counts[_key(sent.tokens, span)][frame] += 1
        for sent in sentences:
            if sent.full:
                for span in candidate_spans(len(sent.tokens)):
                    key = _key(sent.tokens, span)
                    if key in self.counts and span not in sent.triggers:
                        self.counts[key][NULL] += 1
        return self

    def predict(self, sentences: Sequence[Sentence]) -> list[dict[Span, str]]:
        out = []
        for sent in sentences:
            scored = []
            for span in candidate_spans(len(sent.tokens)):
                counts = self.counts.get(_key(sent.tokens, span))
                if counts:
                    frame, n = counts.most_common(1)[0]
                    if frame != NULL:
                        scored.append((n / sum(counts.values()) + 1e-3 * (span[1] - span[0]), span, frame))
            out.append(non_overlapping(scored))
        return out


def _key(tokens: Sequence[str], span: Span) -> str:
    return " ".join(tokens[span[0] : span[1] + 1]).lower()


@functools.lru_cache(maxsize=65536)
def _lemmas(word: str) -> tuple[str, ...]:
    from lemminflect import getAllLemmas

    return tuple(dict.fromkeys(lemma.lower() for forms in getAllLemmas(word).values() for lemma in forms))


def span_keys(tokens: Sequence[str], span: Span) -> set[str]:
    """The span's lowercased text and its variants with one word lemmatised (``gave up`` -> ``give up``)."""
    words = [t.lower() for t in tokens[span[0] : span[1] + 1]]
    keys = {" ".join(words)}
    for i, word in enumerate(words):
        keys.update(" ".join(words[:i] + [lemma] + words[i + 1 :]) for lemma in _lemmas(word))
    return keys


def lu_lemmas(lexical_unit: str) -> set[str]:
    """Lemma strings of a FrameNet LU: ``launch (into).v`` -> {launch, launch into}; ``aid [act].n`` -> {aid}."""
    lemma = re.sub(r"\[[^\]]*\]", "", lexical_unit.rsplit(".", 1)[0]).lower()
    variants = {re.sub(r"\([^)]*\)", "", lemma), lemma.replace("(", "").replace(")", "")}
    return {" ".join(v.replace("_", " ").split()) for v in variants} - {""}


class FrameLexicon:
    """Which frames a span may evoke: lexicon LUs matched by lemma, plus the training triggers.

    Restricting each span's softmax to its candidate frames is what lets a model trained on a few
    hundred sentences label triggers it never saw, and spans with no candidate are never scored.
    """

    def __init__(self, entries: dict[str, Sequence[str]]):
        self.entries = {k: sorted(v) for k, v in entries.items()}

    @classmethod
    def build(cls, sentences: Sequence[Sentence], lexicon: dict[str, set[str]]) -> "FrameLexicon":
        entries: dict[str, set[str]] = defaultdict(set)
        for frame, lus in lexicon.items():
            for lu in lus:
                for lemma in lu_lemmas(lu):
                    entries[lemma].add(frame)
        for sent in sentences:
            for span, frame in sent.triggers.items():
                for key in span_keys(sent.tokens, span):
                    entries[key].add(frame)
        return cls(entries)

    def frames(self) -> set[str]:
        return {f for frames in self.entries.values() for f in frames}

    def candidates(self, tokens: Sequence[str], span: Span) -> set[str]:
        return {f for key in span_keys(tokens, span) for f in self.entries.get(key, ())}


# ---------------------------------------------------------------- the model


@dataclasses.dataclass
class FrameIdConfig:
    encoder: str = "bert-base-cased"
    frames: list[str] = dataclasses.field(default_factory=list)  # index 0 is NULL
    pos_tags: list[str] = dataclasses.field(default_factory=list)  # index 0 is unknown
    chars: list[str] = dataclasses.field(default_factory=list)  # index 0 pad, 1 unknown
    glove: str | None = None
    glove_dim: int = 0
    char_dim: int = 16
    char_filters: int = 32
    pos_dim: int = 16
    lstm_hidden: int = 128
    lstm_layers: int = 2
    span_hidden: int = 128
    label_smoothing: float = 0.2
    max_length: int = 512
    # Lemma -> frames, when a lexicon restricts each span to its candidate frames (FrameLexicon).
    frame_lexicon: dict[str, list[str]] | None = None


def read_glove(path: Path | str, vocab: set[str] | None = None) -> dict[str, torch.Tensor]:
    """GloVe-format vectors (``word v1 v2 ...`` per line), optionally only for ``vocab``."""
    vectors = {}
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            parts = line.rstrip().split(" ")
            if len(parts) < 2:
                continue
            if vocab is None or parts[0] in vocab or parts[0].lower() in vocab:
                try:
                    vectors[parts[0]] = torch.tensor([float(x) for x in parts[1:]])
                except ValueError:
                    raise InputError(path, lineno, "expected 'word' followed by numbers") from None
    dims = {v.shape[0] for v in vectors.values()}
    if len(dims) > 1:
        raise InputError(path, None, f"vectors of different sizes {sorted(dims)}")
    return vectors


def glove_dimension(path: Path | str) -> int:
    """The vector size of a GloVe-format file, from its first vector line."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip().split(" ")
            if len(parts) >= 2:
                return len(parts) - 1
    raise InputError(path, None, "no vectors in the file")


class FrameIdNet(nn.Module):
    def __init__(self, cfg: FrameIdConfig, encoder_dim: int):
        super().__init__()
        self.char_emb = nn.Embedding(len(cfg.chars), cfg.char_dim, padding_idx=0)
        self.char_cnn = nn.Conv1d(cfg.char_dim, cfg.char_filters, kernel_size=3, padding=1)
        self.pos_emb = nn.Embedding(max(len(cfg.pos_tags), 1), cfg.pos_dim)
        word_dim = encoder_dim + cfg.char_filters + cfg.pos_dim + cfg.glove_dim
        self.bilstm = nn.LSTM(word_dim, cfg.lstm_hidden, num_layers=cfg.lstm_layers, bidirectional=True,
                              batch_first=True, dropout=0.1 if cfg.lstm_layers > 1 else 0.0)
        self.span_lstm = nn.LSTM(2 * cfg.lstm_hidden, cfg.span_hidden, batch_first=True)
        self.out = nn.Linear(cfg.span_hidden, len(cfg.frames))
        # A score shared by every frame logit (still one linear layer to frames + NULL): it carries
        # "this span is a trigger" to frames the training data never showed as positives.
        self.trigger = nn.Linear(cfg.span_hidden, 1)

    def forward(self, words: torch.Tensor, chars: torch.Tensor, pos: torch.Tensor, spans: list[list[Span]],
                lengths: list[int]) -> torch.Tensor:
        """Logits [total spans, frames] for a padded batch of sentences."""
        b, t, c = chars.shape
        char_vecs = self.char_cnn(self.char_emb(chars.view(b * t, c)).transpose(1, 2)).max(-1).values.view(b, t, -1)
        x = torch.cat([words, char_vecs, self.pos_emb(pos)], dim=-1)
        packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
        states, _ = self.bilstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=t)
        # Every span of up to MAX_SPAN tokens, gathered into [spans, MAX_SPAN, 2H] and read by one
        # LSTM call; positions past a span's end repeat its last token and are masked by packing.
        flat = [(i, s, e) for i, sent_spans in enumerate(spans) for s, e in sent_spans]
        if not flat:
            return states.new_zeros(0, self.out.out_features)
        index = torch.tensor(flat, device=states.device)
        offsets = torch.arange(MAX_SPAN, device=states.device)
        positions = torch.minimum(index[:, 1:2] + offsets, index[:, 2:3])
        gathered = states[index[:, 0:1].expand(-1, MAX_SPAN), positions]
        span_len = (index[:, 2] - index[:, 1] + 1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(gathered, span_len, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.span_lstm(packed)
        logits = self.out(h[-1])
        return torch.cat([logits[:, :1], logits[:, 1:] + self.trigger(h[-1])], dim=-1)


class FrameIdentifier:
    """Frozen encoder + trained Frame ID network; ``save_pretrained``/``from_pretrained`` a directory."""

    CONFIG = "frameid_config.json"
    WEIGHTS = "frameid.pt"

    def __init__(self, cfg: FrameIdConfig, device: str | None = "auto"):
        self.cfg = cfg
        self.device = choose_device(device)
        self.tokenizer, self.encoder = frozen_encoder(cfg.encoder, self.device)
        # Only the vectors of words actually seen are read from the GloVe file (see _load_glove).
        self.glove: dict[str, torch.Tensor] = {}
        self._glove_checked: set[str] = set()
        self.lexicon = FrameLexicon(cfg.frame_lexicon) if cfg.frame_lexicon is not None else None
        self.net = FrameIdNet(cfg, self.encoder.config.hidden_size).to(self.device)
        self._frame_index = {f: i for i, f in enumerate(cfg.frames)}
        self._pos_index = {p: i for i, p in enumerate(cfg.pos_tags)}
        self._char_index = {ch: i for i, ch in enumerate(cfg.chars)}
        self._cache: dict[tuple[str, ...], torch.Tensor] = {}
        self._tags: dict[tuple[str, ...], list[str]] = {}
        self._allowed: dict[tuple[str, ...], dict[Span, set[int]]] = {}

    # -- persistence
    def save_pretrained(self, out: Path | str) -> None:
        artifacts.save_model_dir(out, self.WEIGHTS, self.net.state_dict(), self.CONFIG, dataclasses.asdict(self.cfg))

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto") -> "FrameIdentifier":
        model = cls(FrameIdConfig(**artifacts.read_model_config(path, cls.CONFIG, "Frame ID model")), device=device)
        model.net.load_state_dict(artifacts.load_weights(Path(path) / cls.WEIGHTS, model.device))
        model.net.eval()
        return model

    # -- inputs
    @torch.no_grad()
    def _encode(self, sentences: Sequence[Sentence]) -> None:
        """First-subtoken encoder vectors of each sentence, computed once (the encoder is frozen)."""
        todo = [s for s in dict.fromkeys(tuple(x.tokens) for x in sentences) if s not in self._cache]
        todo.sort(key=len)
        for i in range(0, len(todo), 32):
            batch = todo[i : i + 32]
            enc = self.tokenizer([list(b) for b in batch], is_split_into_words=True, truncation=True,
                                 max_length=self.cfg.max_length, padding=True, return_tensors="pt")
            hidden = self.encoder(**{k: v.to(self.device) for k, v in enc.items()
                                     if k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state
            for row, toks in enumerate(batch):
                vecs = hidden.new_zeros(len(toks), hidden.shape[-1])
                seen = set()
                for piece, word in enumerate(enc.word_ids(row)):
                    if word is not None and word not in seen:
                        seen.add(word)
                        vecs[word] = hidden[row, piece]
                self._cache[toks] = vecs.float()

    def _load_glove(self, sentences: Sequence[Sentence]) -> None:
        """Read the GloVe vectors of words not looked up yet, in one pass over the file."""
        if not self.cfg.glove:
            return
        new = {w for s in sentences for t in s.tokens for w in (t, t.lower())} - self._glove_checked
        if new:
            self.glove.update(read_glove(self.cfg.glove, new))
            self._glove_checked |= new

    def _pos(self, sent: Sentence) -> list[str]:
        """The input's POS column, else the offline lexicon tagger's tags (memoised)."""
        if sent.pos:
            return sent.pos
        key = tuple(sent.tokens)
        if key not in self._tags:
            from spanaug.evaluate import LexiconTagger

            self._tags[key] = LexiconTagger().tag(sent.tokens)
        return self._tags[key]

    def _batch(self, sentences: Sequence[Sentence]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        self._encode(sentences)
        self._load_glove(sentences)
        lengths = [len(s.tokens) for s in sentences]
        t = max(lengths)
        longest = max(len(w) for s in sentences for w in s.tokens)
        enc_dim = self.encoder.config.hidden_size
        words = torch.zeros(len(sentences), t, enc_dim + self.cfg.glove_dim, device=self.device)
        chars = torch.zeros(len(sentences), t, min(longest, 30), dtype=torch.long, device=self.device)
        pos = torch.zeros(len(sentences), t, dtype=torch.long, device=self.device)
        for i, sent in enumerate(sentences):
            words[i, : lengths[i], :enc_dim] = self._cache[tuple(sent.tokens)]
            for j, (word, tag) in enumerate(zip(sent.tokens, self._pos(sent))):
                if self.glove:
                    vec = self.glove.get(word, self.glove.get(word.lower()))
                    if vec is not None:
                        words[i, j, enc_dim:] = vec
                pos[i, j] = self._pos_index.get(tag, 0)
                for k, ch in enumerate(word[: chars.shape[2]]):
                    chars[i, j, k] = self._char_index.get(ch, 1)
        return words, chars, pos, lengths

    def _spans(self, sent: Sentence, training: bool) -> tuple[list[Span], list[set[int]] | None]:
        """The spans to score and, with a lexicon, each span's candidate frame indices."""
        spans = ([s for s in sent.triggers if s[1] - s[0] < MAX_SPAN] if training and not sent.full
                 else candidate_spans(len(sent.tokens)))
        if self.lexicon is None:
            return spans, None
        candidates = self._candidates(sent.tokens)
        kept = [span for span in spans if span in candidates]
        return kept, [candidates[span] for span in kept]

    def _candidates(self, tokens: Sequence[str]) -> dict[Span, set[int]]:
        """Each span's candidate frame indices (spans with none left out), memoised: training asks
        for the same sentences every epoch."""
        key = tuple(tokens)
        if key not in self._allowed:
            found = {span: {self._frame_index[f] for f in self.lexicon.candidates(tokens, span) if f in self._frame_index}
                     for span in candidate_spans(len(tokens))}
            self._allowed[key] = {span: frames for span, frames in found.items() if frames}
        return self._allowed[key]

    def _logits(self, sentences: Sequence[Sentence], training: bool) -> tuple[torch.Tensor, list[list[Span]]]:
        """Scores of each sentence's spans, frames outside a span's candidates masked out."""
        both = [self._spans(s, training) for s in sentences]
        spans = [ss for ss, _ in both]
        logits = self.net(*self._batch(sentences)[:3], spans, [len(s.tokens) for s in sentences])
        if self.lexicon is not None and logits.shape[0]:
            mask = torch.zeros_like(logits, dtype=torch.bool)
            rows = [(r, f) for r, frames in enumerate(a for _, allowed in both for a in allowed) for f in frames]
            if rows:
                index = torch.tensor(rows, device=logits.device)
                mask[index[:, 0], index[:, 1]] = True
            mask[:, 0] = True
            logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        return logits, spans

    # -- training and prediction
    def loss(self, sentences: Sequence[Sentence]) -> torch.Tensor:
        logits, spans = self._logits(sentences, training=True)
        gold = torch.tensor([self._frame_index.get(sent.triggers.get(sp, NULL), 0)
                             for sent, ss in zip(sentences, spans) for sp in ss], device=self.device, dtype=torch.long)
        logp = torch.log_softmax(logits, -1)
        gold_logp = logp.gather(1, gold[:, None])[:, 0]
        negative = gold == 0
        # Trigger spans are a few percent of the candidates: averaging the two classes separately
        # keeps their gradient from being drowned by the NULL spans.
        loss = logits.new_zeros(())
        if negative.any():
            # Label smoothing on negatives, spread over the span's allowed labels only.
            allowed = logits[negative] > torch.finfo(logits.dtype).min
            uniform = torch.where(allowed, logp[negative], 0.0).sum(-1) / allowed.sum(-1)
            eps = self.cfg.label_smoothing
            loss = loss - ((1 - eps) * gold_logp[negative] + eps * uniform).mean()
        if (~negative).any():
            loss = loss - gold_logp[~negative].mean()
        return loss

    @torch.no_grad()
    def predict(self, sentences: Sequence[Sentence], batch_size: int = 32) -> list[dict[Span, str]]:
        self.net.eval()
        self._load_glove(sentences)
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].tokens))
        results: dict[int, dict[Span, str]] = {}
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            logits, spans = self._logits([sentences[i] for i in idx], training=False)
            probs = torch.softmax(logits, -1).cpu()
            offset = 0
            for i, ss in zip(idx, spans):
                scored = []
                for row, span in enumerate(ss):
                    p, label = probs[offset + row].max(-1)
                    if int(label) != 0:
                        scored.append((float(p), span, self.cfg.frames[int(label)]))
                offset += len(ss)
                results[i] = non_overlapping(scored)
        return [results[i] for i in range(len(sentences))]


@dataclasses.dataclass
class FrameIdTrainConfig:
    epochs: int = 10
    batch_size: int = 16
    learning_rate: float = 1e-3
    seed: int = 0


def build_config(sentences: Sequence[Sentence], encoder: str, glove: str | None = None,
                 lexicon: dict[str, set[str]] | None = None) -> FrameIdConfig:
    """Label, POS and character inventories of the training data (and the lexicon's frames)."""
    frame_lexicon = FrameLexicon.build(sentences, lexicon) if lexicon is not None else None
    frames = {f for s in sentences for f in s.triggers.values()} | (frame_lexicon.frames() if frame_lexicon else set())
    tags = sorted({t for s in sentences for t in (s.pos or [])} | set(_universal_tags()))
    chars = sorted({ch for s in sentences for w in s.tokens for ch in w})
    return FrameIdConfig(encoder=encoder, frames=[NULL, *sorted(frames)], pos_tags=["<unk>", *tags],
                         chars=["<pad>", "<unk>", *chars], glove=glove, glove_dim=glove_dimension(glove) if glove else 0,
                         frame_lexicon=frame_lexicon.entries if frame_lexicon else None)


def _universal_tags() -> list[str]:
    return "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()


def train_frameid(train: Sequence[Sentence], encoder: str, tcfg: FrameIdTrainConfig, dev: Sequence[Sentence] | None = None,
                  glove: str | None = None, device: str | None = "auto", progress: bool = True,
                  lexicon: dict[str, set[str]] | None = None) -> tuple[FrameIdentifier, dict[str, Any]]:
    """Train with Adam; with ``dev``, keep the epoch with the best dev F1; with ``lexicon`` (frame
    -> LUs), each span chooses among the frames its lemma can evoke."""
    if not train:
        raise ConfigError("no training sentences")
    torch.manual_seed(tcfg.seed)
    rng = random.Random(tcfg.seed)
    model = FrameIdentifier(build_config(train, encoder, glove, lexicon), device=device)
    model._load_glove(train)
    opt = torch.optim.Adam(model.net.parameters(), lr=tcfg.learning_rate)
    order = list(train)
    history, best = [], (-1.0, None)
    for epoch in range(tcfg.epochs):
        model.net.train()
        rng.shuffle(order)
        total = 0.0
        for start in tqdm(range(0, len(order), tcfg.batch_size), desc=f"frameid {epoch + 1}", disable=not progress,
                          leave=False):
            loss = model.loss(order[start : start + tcfg.batch_size])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.item()
        entry: dict[str, Any] = {"epoch": epoch + 1, "loss": total / max(1, -(-len(order) // tcfg.batch_size))}
        if dev:
            entry["dev"] = triple_scores(dev, model.predict(dev))
            if entry["dev"]["f1"] > best[0]:
                best = (entry["dev"]["f1"], {k: v.detach().clone() for k, v in model.net.state_dict().items()})
        history.append(entry)
        log.info("frameid epoch %d: %s", epoch + 1, entry)
    if best[1] is not None:
        model.net.load_state_dict(best[1])
    model.net.eval()
    return model, {"train_sentences": len(train), "history": history, "best_dev_f1": best[0] if dev else None}
