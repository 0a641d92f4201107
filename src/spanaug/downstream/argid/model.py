"""Argument identification: given a sentence, a trigger span and its frame, label each overt frame
element (FE) span with its role.

Word vectors are an encoder's first-subtoken vectors (frozen and computed once, or fine-tuned),
concatenated with a trigger marker, the word's bucketed distance to the trigger and the frame's
embedding; a BiLSTM reads them. Every span of up to ``max_width`` tokens is scored: its
representation adds projections of its first and last states, the mean of its states, its width
and its place relative to the trigger, and of the trigger's states with the frame embedding; a
hidden layer and a linear layer give the roles + NULL. Roles outside the frame's FEs are masked in
training and decoding; decoding keeps, best first, the spans whose best label is a role, no two
overlapping and each role once unless training showed it repeated in one annotation.
"""

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from spanaug.core import modeldir
from spanaug.core.devices import choose_device, log_device
from spanaug.core.encoders import frozen_encoder, load_encoder, piece_limit, visible_words, windows
from spanaug.core.errors import ConfigError
from spanaug.core.tagging import FallbackTags
from spanaug.downstream.argid.data import NULL, Annotation, Inventory, Span

log = logging.getLogger(__name__)

#: What its saved folder records it holds (core.modeldir): checked before its weights load.
KIND = "argument identifier"

#: Distance buckets of a word or span to the trigger: 0 on it, then 1-7 left and 8-14 right
#: (1, 2, 3, 4, 5-7, 8-15, 16+ words away).
_EDGES = (1, 2, 3, 4, 5, 8, 16)
N_BUCKETS = 1 + 2 * len(_EDGES)


def bucket(distance: int) -> int:
    """The bucket of a signed distance (negative: left of the trigger, 0: on it)."""
    if distance == 0:
        return 0
    size = sum(abs(distance) >= edge for edge in _EDGES)
    return size if distance < 0 else len(_EDGES) + size


def relation(span: Span, trigger: Span) -> int:
    """Where a span sits relative to the trigger: overlapping it (0), or its bucketed distance."""
    if span[1] < trigger[0]:
        return bucket(span[1] - trigger[0])
    if span[0] > trigger[1]:
        return bucket(span[0] - trigger[1])
    return 0


def candidate_spans(n: int, max_width: int) -> list[Span]:
    return [(s, e) for s in range(n) for e in range(s, min(n, s + max_width))]


def constrained_decode(
    scored: Sequence[tuple[float, Span, str]], repeatable: set[str] | frozenset[str]
) -> list[tuple[Span, str]]:
    """Best first: keep a (span, role) unless it overlaps a kept span or its role is already used
    (a role in ``repeatable`` may fill several spans)."""
    kept: list[tuple[Span, str]] = []
    used: set[str] = set()
    for _, span, role in sorted(scored, key=lambda x: (-x[0], x[1])):
        if role in used and role not in repeatable:
            continue
        if any(not (span[1] < s or span[0] > e) for (s, e), _ in kept):
            continue
        kept.append((span, role))
        used.add(role)
    return sorted(kept)


@dataclasses.dataclass
class ArgIdConfig:
    """A trained argument identifier's inventories and sizes (saved as its config.json)."""

    encoder: str
    encoder_dim: int = 0  # the encoder's hidden size, set when the model is built
    finetune: bool = False  # the encoder was tuned (saved in encoder/)
    roles: list[str] = dataclasses.field(default_factory=list)  # index 0 is NULL
    frames: list[str] = dataclasses.field(default_factory=list)  # index 0 is an unseen frame
    pos_tags: list[str] = dataclasses.field(default_factory=list)  # index 0 is unknown
    frame_roles: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    repeatable: list[str] = dataclasses.field(default_factory=list)
    coreness: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    max_width: int = 20
    marker_dim: int = 16
    pos_dim: int = 16
    distance_dim: int = 16
    frame_dim: int = 64
    lstm_hidden: int = 128
    lstm_layers: int = 1
    span_hidden: int = 256
    dropout: float = 0.2
    null_weight: float = 0.5
    max_length: int = 512

    def inventory(self) -> Inventory:
        return Inventory(self.roles, self.frames, self.frame_roles, self.repeatable, self.coreness)


# No `from __future__ import annotations` in this module: the hub mixin reads the type of
# `config` from the signature to rebuild the dataclass on load.
class ArgIdNet(nn.Module, PyTorchModelHubMixin):
    """The trained part over the encoder: BiLSTM over marked words, span representations, role scores."""

    def __init__(self, config: ArgIdConfig):
        super().__init__()
        self.config = cfg = config
        self.marker = nn.Embedding(2, cfg.marker_dim)
        self.distance = nn.Embedding(N_BUCKETS, cfg.distance_dim)
        self.frame = nn.Embedding(max(len(cfg.frames), 1), cfg.frame_dim)
        self.pos = nn.Embedding(max(len(cfg.pos_tags), 1), cfg.pos_dim)
        word_dim = cfg.encoder_dim + cfg.marker_dim + cfg.distance_dim + cfg.frame_dim + cfg.pos_dim
        self.bilstm = nn.LSTM(
            word_dim,
            cfg.lstm_hidden,
            num_layers=cfg.lstm_layers,
            bidirectional=True,
            batch_first=True,
            dropout=cfg.dropout if cfg.lstm_layers > 1 else 0.0,
        )
        states, hid = 2 * cfg.lstm_hidden, cfg.span_hidden
        self.start = nn.Linear(states, hid)
        self.end = nn.Linear(states, hid, bias=False)
        self.mean = nn.Linear(states, hid, bias=False)
        self.width = nn.Embedding(cfg.max_width, hid)
        self.relation = nn.Embedding(N_BUCKETS, hid)
        self.context = nn.Linear(states + cfg.frame_dim, hid, bias=False)  # the trigger's states and the frame
        self.hidden = nn.Linear(hid, hid)
        self.out = nn.Linear(hid, len(cfg.roles))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(
        self,
        words: torch.Tensor,
        marker: torch.Tensor,
        distance: torch.Tensor,
        pos: torch.Tensor,
        frames: torch.Tensor,
        lengths: list[int],
        spans: torch.Tensor,
        relations: torch.Tensor,
    ) -> torch.Tensor:
        """Logits [spans, roles] of ``spans`` ([N, 3]: annotation, start, end) in a padded batch."""
        b, t, _ = words.shape
        frame = self.frame(frames)
        x = torch.cat(
            [
                self.drop(words),
                self.marker(marker),
                self.distance(distance),
                self.pos(pos),
                frame[:, None].expand(b, t, -1),
            ],
            -1,
        )
        packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
        states, _ = self.bilstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=t)
        states = self.drop(states)
        on = marker.float()[..., None]
        trigger = (states * on).sum(1) / on.sum(1).clamp(min=1)
        context = self.context(torch.cat([trigger, frame], -1))
        # Span means from cumulative sums of the projected states: one pass for every span.
        projected = self.mean(states)
        cum = torch.cat([projected.new_zeros(b, 1, projected.shape[-1]), projected.cumsum(1)], 1)
        i, s, e = spans[:, 0], spans[:, 1], spans[:, 2]
        width = e - s
        mean = (cum[i, e + 1] - cum[i, s]) / (width + 1).float()[:, None]
        h = self.start(states)[i, s] + self.end(states)[i, e] + mean
        h = torch.relu(h + self.width(width) + self.relation(relations) + context[i])
        h = torch.relu(self.hidden(self.drop(h)))
        return self.out(self.drop(h))


class ArgumentIdentifier:
    """Encoder + trained network; ``save_pretrained``/``from_pretrained`` a directory (with a manifest)."""

    def __init__(
        self,
        cfg: ArgIdConfig,
        device: str | None = "auto",
        net: ArgIdNet | None = None,
        encoder_path: str | None = None,
    ):
        self.cfg = cfg
        self.device = choose_device(device)
        log_device(self.device, torch.float32)
        if cfg.finetune:
            self.tokenizer, self.encoder = load_encoder(encoder_path or cfg.encoder)
            self.encoder.to(self.device)
        else:
            self.tokenizer, self.encoder = frozen_encoder(encoder_path or cfg.encoder, self.device)
        dim = self.encoder.config.hidden_size
        if cfg.encoder_dim not in (0, dim):
            raise ConfigError(
                f"the model was trained on a {cfg.encoder_dim}-dimensional encoder; {cfg.encoder} has {dim}"
            )
        cfg.encoder_dim = dim
        self.net = (net or ArgIdNet(cfg)).to(self.device)
        self.inventory = cfg.inventory()
        self._role_index = {r: i for i, r in enumerate(cfg.roles)}
        self._frame_index = {f: i for i, f in enumerate(cfg.frames)}
        self._pos_index = {p: i for i, p in enumerate(cfg.pos_tags)}
        self._tags = FallbackTags()
        self._repeatable = frozenset(cfg.repeatable)
        self._allowed: dict[str, torch.Tensor] = {}
        self._cache: dict[tuple[str, ...], torch.Tensor] = {}
        self.windowed = 0  # sentences over the encoder's limit, encoded in windows

    # -- persistence
    def save_pretrained(self, out: Path | str) -> None:
        with modeldir.atomic_dir(out, kind=KIND) as tmp:
            self.net.save_pretrained(tmp, config=self.cfg)
            if self.cfg.finetune:  # the tuned encoder travels with the model
                self.encoder.save_pretrained(tmp / modeldir.ENCODER_DIR)
                self.tokenizer.save_pretrained(tmp / modeldir.ENCODER_DIR)

    @classmethod
    def from_pretrained(cls, path: Path | str, device: str | None = "auto") -> "ArgumentIdentifier":
        net = modeldir.load_head(ArgIdNet, path, choose_device(device), KIND)
        tuned = Path(path) / modeldir.ENCODER_DIR
        encoder = str(tuned) if net.config.finetune and (tuned / modeldir.CONFIG_FILE).is_file() else None
        if net.config.finetune and encoder is None:
            raise ConfigError(f"{path}: a fine-tuned argument identifier without its {modeldir.ENCODER_DIR}/ folder")
        model = cls(net.config, device=device, net=net, encoder_path=encoder)
        model.encoder.eval()
        return model

    # -- encoding
    def parameters(self) -> list[dict]:
        """Optimizer groups: the network, and the encoder when it is tuned (its own rate is set by training)."""
        groups = [{"params": list(self.net.parameters())}]
        if self.cfg.finetune:
            groups.append({"params": list(self.encoder.parameters()), "encoder": True})
        return groups

    def encode(self, annotations: Sequence[Annotation]) -> None:
        """Cache the frozen encoder's word vectors of each sentence (nothing to cache when tuned)."""
        if self.cfg.finetune:
            return
        todo = sorted({tuple(a.tokens) for a in annotations} - self._cache.keys(), key=len)
        with torch.no_grad():
            for first in range(0, len(todo), 32):
                batch = todo[first : first + 32]
                for key, vecs in zip(batch, self._word_vectors([list(k) for k in batch])):
                    self._cache[key] = vecs

    def _word_vectors(self, sentences: list[list[str]]) -> list[torch.Tensor]:
        """Each word's first-piece vector; a sentence over the encoder's limit is encoded in windows."""
        limit = piece_limit(self.tokenizer, self.encoder, self.cfg.max_length)
        words, _, lengths = visible_words(self.tokenizer, sentences)
        out: list[torch.Tensor | None] = [None] * len(sentences)
        fit = [k for k, n in enumerate(lengths) if n <= limit]
        for k, vecs in zip(fit, self._first_pieces([words[k] for k in fit], limit)):
            out[k] = vecs
        for k in (k for k, n in enumerate(lengths) if n > limit):
            self.windowed += 1
            parts = [self._first_pieces([words[k][a:b]], limit)[0] for a, b in windows(self.tokenizer, words[k], limit)]
            out[k] = torch.cat(parts)
        return out  # type: ignore[return-value]

    def _first_pieces(self, batch: list[list[str]], limit: int) -> list[torch.Tensor]:
        if not batch:
            return []
        enc = self.tokenizer(
            batch, is_split_into_words=True, truncation=True, max_length=limit, padding=True, return_tensors="pt"
        )
        keep = ("input_ids", "attention_mask", "token_type_ids")
        hidden = self.encoder(**{k: v.to(self.device) for k, v in enc.items() if k in keep}).last_hidden_state
        out = []
        for row, toks in enumerate(batch):
            first: dict[int, int] = {}
            for piece, word in enumerate(enc.word_ids(row)):
                if word is not None:
                    first.setdefault(word, piece)
            index = torch.tensor([first[w] for w in range(len(toks))], device=hidden.device)
            out.append(hidden[row, index].float())
        return out

    def _pos(self, annotation: Annotation) -> list[str]:
        """The input's POS column, else the offline lexicon tagger's tags (memoised)."""
        return self._tags(annotation.tokens, annotation.pos)

    def _allowed_mask(self, frame: str) -> torch.Tensor:
        """True for NULL and the frame's roles (memoised per frame)."""
        if frame not in self._allowed:
            mask = torch.zeros(len(self.cfg.roles), dtype=torch.bool, device=self.device)
            mask[0] = True
            mask[[self._role_index[r] for r in self.inventory.allowed(frame)]] = True
            self._allowed[frame] = mask
        return self._allowed[frame]

    # -- scoring
    def _logits(self, batch: Sequence[Annotation]) -> tuple[torch.Tensor, list[list[Span]], list[int]]:
        """Masked logits of every candidate span of each annotation, its spans, and the spans' annotation index."""
        lengths = [len(a.tokens) for a in batch]
        t = max(lengths)
        if self.cfg.finetune:
            # Each sentence once per step, however many of its triggers the batch holds.
            unique = list(dict.fromkeys(tuple(a.tokens) for a in batch))
            encoded = dict(zip(unique, self._word_vectors([list(u) for u in unique])))
            vectors = [encoded[tuple(a.tokens)] for a in batch]
        else:
            self.encode(batch)
            vectors = [self._cache[tuple(a.tokens)] for a in batch]
        words = torch.zeros(len(batch), t, self.cfg.encoder_dim, device=self.device)
        marker = torch.zeros(len(batch), t, dtype=torch.long)
        distance = torch.zeros(len(batch), t, dtype=torch.long)
        pos = torch.zeros(len(batch), t, dtype=torch.long)
        spans, flat, rel, owner = [], [], [], []
        for k, (a, vecs) in enumerate(zip(batch, vectors)):
            words[k, : lengths[k]] = vecs
            s0, e0 = a.trigger
            marker[k, s0 : e0 + 1] = 1
            pos[k, : lengths[k]] = torch.tensor([self._pos_index.get(p, 0) for p in self._pos(a)])
            distance[k, : lengths[k]] = torch.tensor(
                [bucket(j - s0 if j < s0 else max(0, j - e0)) for j in range(lengths[k])]
            )
            cands = candidate_spans(lengths[k], self.cfg.max_width)
            spans.append(cands)
            flat += [(k, s, e) for s, e in cands]
            rel += [relation(c, a.trigger) for c in cands]
            owner += [k] * len(cands)
        frames = torch.tensor([self._frame_index.get(a.frame, 0) for a in batch], device=self.device)
        logits = self.net(
            words,
            marker.to(self.device),
            distance.to(self.device),
            pos.to(self.device),
            frames,
            lengths,
            torch.tensor(flat, device=self.device),
            torch.tensor(rel, device=self.device),
        )
        allowed = torch.stack([self._allowed_mask(a.frame) for a in batch])[torch.tensor(owner, device=self.device)]
        return logits.masked_fill(~allowed, torch.finfo(logits.dtype).min), spans, owner

    def loss(self, batch: Sequence[Annotation]) -> torch.Tensor:
        logits, spans, _ = self._logits(batch)
        gold = []
        for a, cands in zip(batch, spans):
            roles = {span: self._role_index.get(role, 0) for span, role in a.fes}
            gold += [roles.get(c, 0) for c in cands]
        weight = torch.ones(len(self.cfg.roles), device=self.device)
        weight[0] = self.cfg.null_weight
        return nn.functional.cross_entropy(logits, torch.tensor(gold, device=self.device), weight=weight)

    @torch.no_grad()
    def predict(self, annotations: Sequence[Annotation], batch_size: int = 32) -> list[list[tuple[Span, str]]]:
        """Each annotation's FEs as (span, role) pairs, constrained (see :func:`constrained_decode`)."""
        self.net.eval()
        self.encoder.eval()
        order = sorted(range(len(annotations)), key=lambda i: len(annotations[i].tokens))
        out: dict[int, list[tuple[Span, str]]] = {}
        for first in range(0, len(order), batch_size):
            idx = order[first : first + batch_size]
            logits, spans, owner = self._logits([annotations[i] for i in idx])
            probs = torch.softmax(logits, -1)
            best_p, best = probs.max(-1)
            hits = (best != 0).nonzero()[:, 0].tolist()
            offsets = [0]
            for cands in spans:
                offsets.append(offsets[-1] + len(cands))
            scored: list[list[tuple[float, Span, str]]] = [[] for _ in idx]
            best_p, best = best_p.tolist(), best.tolist()
            for row in hits:
                k = owner[row]
                scored[k].append((best_p[row], spans[k][row - offsets[k]], self.cfg.roles[best[row]]))
            for k, i in enumerate(idx):
                out[i] = constrained_decode(scored[k], self._repeatable)
        return [out[i] for i in range(len(annotations))]


def build_config(
    annotations: Sequence[Annotation],
    encoder: str,
    release: dict[str, dict[str, str]] | None = None,
    finetune: bool = False,
    max_width: int = 20,
    null_weight: float = 0.5,
) -> ArgIdConfig:
    """The inventories of the training annotations (and of a FrameNet release's frames)."""
    inv = Inventory.build(annotations, release)
    if len(inv.roles) < 2:
        raise ConfigError("the training annotations hold no frame element: nothing to learn")
    return ArgIdConfig(
        encoder=encoder,
        finetune=finetune,
        roles=inv.roles,
        frames=inv.frames,
        pos_tags=["<unk>", *sorted({p for a in annotations for p in (a.pos or [])})],
        frame_roles=inv.frame_roles,
        repeatable=inv.repeatable,
        coreness=inv.coreness,
        max_width=max_width,
        null_weight=null_weight,
    )


__all__ = ["NULL", "ArgIdConfig", "ArgIdNet", "ArgumentIdentifier", "build_config", "constrained_decode"]
