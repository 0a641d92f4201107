"""Downstream Frame ID (§6.3): find every trigger span (contiguous, up to 3 tokens) and its frame.

Word vectors concatenate a frozen encoder's first-subtoken vector, a character CNN, a POS
embedding and optional GloVe-format vectors; a stacked BiLSTM reads the sentence and a
unidirectional LSTM reads each candidate span's states; a linear layer scores frames + NULL.
Training uses cross-entropy with label smoothing 0.2 on the NULL (negative) spans. Full-text
sentences supply negatives; exemplar and augmented sentences contribute only their triggers.
"""

import dataclasses
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from spanaug.core import modeldir
from spanaug.core.devices import choose_device, log_device
from spanaug.core.encoders import frozen_encoder, piece_limit, visible_words, windows
from spanaug.core.errors import InputError
from spanaug.core.files import iter_lines
from spanaug.core.tagging import FallbackTags
from spanaug.downstream.frameid.baseline import non_overlapping
from spanaug.downstream.frameid.data import MAX_SPAN, NULL, Sentence, Span, candidate_spans
from spanaug.downstream.frameid.lexicon import FrameLexicon

log = logging.getLogger(__name__)

#: What its saved folder records it holds (core.modeldir): checked before its weights load.
KIND = "Frame ID model"


@dataclasses.dataclass
class FrameIdConfig:
    """A trained Frame ID model's inventories and sizes (saved as its config.json)."""

    encoder: str
    encoder_dim: int = 0  # the encoder's hidden size, set when the model is built
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
    # Span text or lemma -> its candidate frames (FrameLexicon: training triggers, plus the lexicon's
    # LUs when one is given). None (models saved before candidates were always built): every span
    # chooses among all frames.
    frame_lexicon: dict[str, list[str]] | None = None


def _glove_fields(line: str) -> list[str]:
    return line.rstrip().split(" ")


def _is_header(parts: list[str]) -> bool:
    """word2vec's text format opens with ``count dimension``; GloVe's has no header."""
    return len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts)


def read_glove(path: Path | str, vocab: set[str] | None = None, dim: int | None = None) -> dict[str, torch.Tensor]:
    """GloVe-format vectors (``word v1 v2 ...`` per line), optionally only for ``vocab``; every
    vector read must have ``dim`` finite numbers (default: as many as the first)."""
    vectors = {}
    for lineno, line in iter_lines(path):
        parts = _glove_fields(line)
        if len(parts) < 2 or (lineno == 1 and _is_header(parts)):
            continue
        if vocab is None or parts[0] in vocab or parts[0].lower() in vocab:
            try:
                values = [float(x) for x in parts[1:]]
            except ValueError:
                raise InputError(path, lineno, "expected 'word' followed by numbers") from None
            if not all(math.isfinite(v) for v in values):
                raise InputError(path, lineno, "a vector holds NaN or infinity (expected finite numbers)")
            dim = dim if dim is not None else len(values)
            if len(values) != dim:
                raise InputError(
                    path,
                    lineno,
                    f"a vector of {len(values)} numbers (expected {dim}, as in the first vector of the file)",
                )
            vectors[parts[0]] = torch.tensor(values)
    return vectors


def glove_dimension(path: Path | str) -> int:
    """The vector size of a GloVe-format file, from its first vector line."""
    for lineno, line in iter_lines(path):
        parts = _glove_fields(line)
        if len(parts) >= 2 and not (lineno == 1 and _is_header(parts)):
            return len(parts) - 1
    raise InputError(path, None, "no vectors in the file")


# No `from __future__ import annotations` in this module: the hub mixin reads the type of
# `config` from the signature to rebuild the dataclass on load.
class FrameIdNet(nn.Module, PyTorchModelHubMixin):
    """The trained part of Frame ID: character CNN, POS embedding, BiLSTM, span LSTM, frame scores."""

    def __init__(self, config: FrameIdConfig):
        super().__init__()
        self.config = cfg = config
        self.char_emb = nn.Embedding(len(cfg.chars), cfg.char_dim, padding_idx=0)
        self.char_cnn = nn.Conv1d(cfg.char_dim, cfg.char_filters, kernel_size=3, padding=1)
        self.pos_emb = nn.Embedding(max(len(cfg.pos_tags), 1), cfg.pos_dim)
        word_dim = cfg.encoder_dim + cfg.char_filters + cfg.pos_dim + cfg.glove_dim
        self.bilstm = nn.LSTM(
            word_dim,
            cfg.lstm_hidden,
            num_layers=cfg.lstm_layers,
            bidirectional=True,
            batch_first=True,
            dropout=0.1 if cfg.lstm_layers > 1 else 0.0,
        )
        self.span_lstm = nn.LSTM(2 * cfg.lstm_hidden, cfg.span_hidden, batch_first=True)
        self.out = nn.Linear(cfg.span_hidden, len(cfg.frames))
        # A score shared by every frame logit (still one linear layer to frames + NULL): it carries
        # "this span is a trigger" to frames the training data never showed as positives.
        self.trigger = nn.Linear(cfg.span_hidden, 1)

    def forward(
        self, words: torch.Tensor, chars: torch.Tensor, pos: torch.Tensor, spans: list[list[Span]], lengths: list[int]
    ) -> torch.Tensor:
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

    def __init__(self, cfg: FrameIdConfig, device: str | None = "auto", net: FrameIdNet | None = None):
        self.cfg = cfg
        self.device = choose_device(device)
        log_device(self.device, torch.float32)  # the job log names its device (float32 throughout)
        self.tokenizer, self.encoder = frozen_encoder(cfg.encoder, self.device)
        cfg.encoder_dim = self.encoder.config.hidden_size
        # Only the vectors of words actually seen are read from the GloVe file (see load_glove).
        self.glove: dict[str, torch.Tensor] = {}
        self._glove_checked: set[str] = set()
        self.lexicon = FrameLexicon(cfg.frame_lexicon) if cfg.frame_lexicon is not None else None
        self.net = (net or FrameIdNet(cfg)).to(self.device)
        self._frame_index = {f: i for i, f in enumerate(cfg.frames)}
        self._pos_index = {p: i for i, p in enumerate(cfg.pos_tags)}
        self._char_index = {ch: i for i, ch in enumerate(cfg.chars)}
        self._cache: dict[tuple[str, ...], torch.Tensor] = {}
        self._tags = FallbackTags()
        self._allowed: dict[tuple[str, ...], dict[Span, set[int]]] = {}
        self.windowed = 0  # sentences over the encoder's limit, encoded in windows (see encode)

    # -- persistence
    def save_pretrained(self, out: Path | str) -> None:
        with modeldir.atomic_dir(out, kind=KIND) as tmp:
            self.net.save_pretrained(tmp, config=self.cfg)

    @staticmethod
    def check_folder(path: Path | str) -> None:
        """That ``path`` holds a Frame ID model, from its own records (no weights read)."""
        modeldir.check_head(FrameIdNet, path, KIND)

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto") -> "FrameIdentifier":
        net = modeldir.load_head(FrameIdNet, path, choose_device(device), KIND)
        return cls(net.config, device=device, net=net)

    # -- inputs
    @torch.no_grad()
    def encode(self, sentences: Sequence[Sentence]) -> None:
        """First-subtoken encoder vectors of each sentence, computed once (the encoder is frozen).

        Every word gets a vector: a word the tokenizer drops is read as the unknown token, and a
        sentence longer than the encoder's limit is encoded in windows (counted in ``windowed``)
        instead of being cut, which would leave its last words with zero vectors.
        """
        todo = [s for s in dict.fromkeys(tuple(x.tokens) for x in sentences) if s not in self._cache]
        todo.sort(key=len)
        limit = piece_limit(self.tokenizer, self.encoder, self.cfg.max_length)
        for i in range(0, len(todo), 32):
            batch = todo[i : i + 32]
            words, _, lengths = visible_words(self.tokenizer, [list(b) for b in batch])
            fit = [k for k, n in enumerate(lengths) if n <= limit]
            if fit:
                vectors = self._first_pieces([words[k] for k in fit], limit)
                for k, vecs in zip(fit, vectors):
                    self._cache[batch[k]] = vecs
            long = [k for k, n in enumerate(lengths) if n > limit]
            if long:
                self.windowed += len(long)
                log.warning(
                    "%d sentence(s) longer than the encoder's %d word pieces: encoded in windows", len(long), limit
                )
            for k in long:
                parts = [
                    self._first_pieces([words[k][start:end]], limit)[0]
                    for start, end in windows(self.tokenizer, words[k], limit)
                ]
                self._cache[batch[k]] = torch.cat(parts)

    def _first_pieces(self, batch: list[list[str]], limit: int) -> list[torch.Tensor]:
        """Each word's first-piece vector, for inputs that fit ``limit`` pieces."""
        enc = self.tokenizer(
            batch, is_split_into_words=True, truncation=True, max_length=limit, padding=True, return_tensors="pt"
        )
        hidden = self.encoder(
            **{k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        ).last_hidden_state
        out = []
        for row, toks in enumerate(batch):
            vecs = hidden.new_zeros(len(toks), hidden.shape[-1])
            seen = set()
            for piece, word in enumerate(enc.word_ids(row)):
                if word is not None and word not in seen:
                    seen.add(word)
                    vecs[word] = hidden[row, piece]
            out.append(vecs.float())
        return out

    def load_glove(self, sentences: Sequence[Sentence]) -> None:
        """Read the GloVe vectors of words not looked up yet, in one pass over the file."""
        if not self.cfg.glove:
            return
        new = {w for s in sentences for t in s.tokens for w in (t, t.lower())} - self._glove_checked
        if new:
            self.glove.update(read_glove(self.cfg.glove, new, self.cfg.glove_dim))
            self._glove_checked |= new

    def _pos(self, sent: Sentence) -> list[str]:
        """The input's POS column, else the offline lexicon tagger's tags (memoised)."""
        return self._tags(sent.tokens, sent.pos)

    def _batch(self, sentences: Sequence[Sentence]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
        self.encode(sentences)
        self.load_glove(sentences)
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
        spans = (
            [s for s in sent.triggers if s[1] - s[0] < MAX_SPAN]
            if training and not sent.full
            else candidate_spans(len(sent.tokens))
        )
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
            found = {
                span: {self._frame_index[f] for f in self.lexicon.candidates(tokens, span) if f in self._frame_index}
                for span in candidate_spans(len(tokens))
            }
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
        gold = torch.tensor(
            [self._frame_index.get(sent.triggers.get(sp, NULL), 0) for sent, ss in zip(sentences, spans) for sp in ss],
            device=self.device,
            dtype=torch.long,
        )
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
        self.load_glove(sentences)
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
