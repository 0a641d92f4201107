"""One decoder step of a transformers seq2seq model over a static cache, for beam search.

transformers' ``generate`` keeps one copy of the cross-attention keys and values per beam and
reorders every layer's self- and cross-attention cache at every step. Here the decoder step is
computed from the model's own modules (its projections, norms, feed-forward blocks, embeddings
and LM head), with two differences in how the state is kept:

* the cross-attention keys and values are computed once per *sentence* (``[B, H, S, d]``) and
  never copied or reordered: the beams of a sentence attend to them as ``W`` query positions of
  one batch element (``[B, H, W, d]`` queries), which is the same arithmetic;
* the self-attention keys and values live in a preallocated tensor
  ``[layers, 2, rows, H, max_len, d]`` (a static cache); a step writes position ``t`` and attends
  to ``[0, t]``, and a beam reorder gathers positions ``[0, t]`` of all layers, in one kernel,
  into a second such tensor, which then serves as the cache (the two swap: no copy back; a CUDA
  graph, whose addresses are fixed, is captured once for each direction).

The families are T5 (and mT5) and the BART family (BART, mBART, Pegasus, Marian). Each adapter's
arithmetic is checked against the model's own forward pass by :func:`check_against_model` (the
tests run it for every family; the engine runs it once when it loads a model).
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from spanaug.pipeline.paraphraser import indirect_attention

#: model_type -> pre-norm (True) or post-norm (False) decoder layers, for the BART family.
BART_FAMILY_PRE_NORM = {"bart": False, "marian": False, "mbart": True, "pegasus": True}
T5_FAMILY = {"t5", "mt5"}
SUPPORTED = sorted(T5_FAMILY | set(BART_FAMILY_PRE_NORM))


class UnsupportedModel(ValueError):
    """The model's family has no static decoder step (use the hf backend)."""


@dataclasses.dataclass
class StepState:
    """What a batch's decoding keeps on the device between steps."""

    cross_k: list[torch.Tensor]  # per layer [B, H, S, d]
    cross_v: list[torch.Tensor]
    cross_bias: torch.Tensor  # [B, 1, 1, S] additive mask over the source
    self_kv: torch.Tensor  # [L, 2, rows, H, max_len, d]: the cache the next step reads and writes
    spare: torch.Tensor  # the same shape: what a reorder writes into (then the two swap)
    beams: int
    #: ``[rows, max_len]`` int32, or None: which beam of its sentence holds each row's history at
    #: each position (:mod:`.indirect_attention`); the cache is then never reordered, only this.
    ancestry: torch.Tensor | None = None

    @property
    def sentences(self) -> int:
        return self.cross_bias.shape[0]

    def gather_into_spare(self, rows: torch.Tensor, upto: int) -> None:
        """Row ``r`` of the spare buffer becomes row ``rows[r]``'s history ``[0, upto)``, for every
        layer, in one gather; :meth:`swap` then makes it the cache (no copy back)."""
        n = rows.shape[0]
        torch.index_select(self.self_kv[:, :, :, :, :upto], 2, rows, out=self.spare[:, :, :n, :, :upto])

    def swap(self) -> None:
        self.self_kv, self.spare = self.spare, self.self_kv

    def _gather_rows(self, rows: torch.Tensor, upto: int) -> None:
        self.gather_into_spare(rows, upto)
        self.swap()

    def reorder(self, rows: torch.Tensor, upto: int) -> None:
        """Beam ``r`` continues beam ``rows[r]``."""
        self.reorder_in_graph(rows, upto)
        self.after_graph_step()

    def reorder_in_graph(self, rows: torch.Tensor, span: int) -> None:
        """What a reorder does inside a step replayed from a CUDA graph: the ancestry in place, or the
        cache's positions ``[0, span)`` into the spare buffer (:meth:`after_graph_step` swaps them in)."""
        if self.ancestry is not None:
            self.ancestry.copy_(self.ancestry.index_select(0, rows))
        else:
            self.gather_into_spare(rows, span)

    def after_graph_step(self) -> None:
        if self.ancestry is None:
            self.swap()

    def keep(self, sentences: torch.Tensor, upto: int) -> None:
        """Keep only ``sentences`` (indices into the current batch), in that order, for the next steps."""
        rows = (sentences[:, None] * self.beams + torch.arange(self.beams, device=sentences.device)).reshape(-1)
        self._gather_rows(rows, upto)
        if self.ancestry is not None:  # whole sentences move: their beams' indices stay valid
            self.ancestry = self.ancestry.index_select(0, rows)
        self.cross_k = [k.index_select(0, sentences) for k in self.cross_k]
        self.cross_v = [v.index_select(0, sentences) for v in self.cross_v]
        self.cross_bias = self.cross_bias.index_select(0, sentences)


@dataclasses.dataclass
class Position:
    """Where a step writes and what it reads: position ``t`` and the cache positions it attends to.

    Eager steps take ``t`` as an int and attend to ``[0, t]``. A step captured in a CUDA graph must
    have the same shapes at every replay: ``t`` is then a 0-d tensor on the device and the step
    attends to a fixed ``span`` of positions, those after ``t`` masked out (exp(-inf) = 0, so the
    result is the eager one's)."""

    t: int | torch.Tensor
    span: int | None = None

    @property
    def keys(self) -> int:
        return self.t + 1 if self.span is None else self.span

    def index(self) -> torch.Tensor:
        return self.t.view(1)

    def mask(self, device, dtype) -> torch.Tensor | None:
        """``[1, 1, 1, span]``: 0 up to ``t``, -inf after; None for an eager step."""
        if self.span is None:
            return None
        after = torch.arange(self.span, device=device) > self.t
        return torch.zeros(self.span, device=device, dtype=dtype).masked_fill(after, float("-inf"))[None, None, None]


def _linear_heads(linear: torch.nn.Linear, x: torch.Tensor, heads: int) -> torch.Tensor:
    """``[N, T, D] -> [N, H, T, d]``."""
    y = linear(x)
    n, t, _ = y.shape
    return y.view(n, t, heads, -1).transpose(1, 2)


class FusedProjections:
    """A layer's query, key and value projections as one matrix product (one kernel, not three)."""

    def __init__(self, *linears: torch.nn.Linear):
        self.weight = torch.cat([lin.weight for lin in linears])
        biases = [lin.bias for lin in linears]
        self.bias = torch.cat(biases) if all(b is not None for b in biases) else None

    def __call__(self, x: torch.Tensor, heads: int) -> list[torch.Tensor]:
        """``[N, 1, D]`` -> query, key and value ``[N, H, 1, d]``."""
        y = F.linear(x, self.weight, self.bias)
        n = y.shape[0]
        return [part.view(n, 1, heads, -1).transpose(1, 2) for part in y.chunk(3, dim=-1)]


class DecoderStep:
    """The family-independent part: encoding, the cross-attention state, the LM head."""

    def __init__(self, model):
        self.model = model
        self.config = model.config
        self.decoder = model.get_decoder()
        self.heads = self._heads()
        self.layers = len(self._layers())

    # -- what each family defines
    def _layers(self):
        raise NotImplementedError

    def _heads(self) -> int:
        raise NotImplementedError

    def _cross_projections(self, layer) -> tuple[torch.nn.Linear, torch.nn.Linear]:
        raise NotImplementedError

    def _embed(self, tokens: torch.Tensor, pos: Position) -> torch.Tensor:
        raise NotImplementedError

    def _layer(self, i: int, layer, h: torch.Tensor, pos: Position, state: StepState) -> torch.Tensor:
        raise NotImplementedError

    def _final(self, h: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # -- shared
    @property
    def head_dim(self) -> int:
        return self._cross_projections(self._layers()[0])[0].out_features // self.heads

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def start(
        self, encoded: torch.Tensor, attention_mask: torch.Tensor, beams: int, max_len: int, ancestry: bool = False
    ) -> StepState:
        """The state of a batch: cross-attention keys and values per sentence, an empty self cache
        (read through a beam ancestry table with ``ancestry``, :mod:`.indirect_attention`)."""
        ks, vs = [], []
        for layer in self._layers():
            k_proj, v_proj = self._cross_projections(layer)
            ks.append(_linear_heads(k_proj, encoded, self.heads).contiguous())
            vs.append(_linear_heads(v_proj, encoded, self.heads).contiguous())
        bias = torch.zeros(attention_mask.shape, dtype=encoded.dtype, device=encoded.device)
        bias = bias.masked_fill(attention_mask == 0, torch.finfo(encoded.dtype).min)[:, None, None, :]
        rows = encoded.shape[0] * beams
        shape = (self.layers, 2, rows, self.heads, max_len, self.head_dim)
        # Zeros, not empty: a graphed step reads masked positions too, and 0 x NaN would be NaN.
        cache = torch.zeros(shape, dtype=encoded.dtype, device=encoded.device)
        table = torch.zeros((rows, max_len), dtype=torch.int32, device=encoded.device) if ancestry else None
        return StepState(ks, vs, bias, cache, torch.zeros_like(cache), beams, table)

    def __call__(self, tokens: torch.Tensor, t: int | Position, state: StepState) -> torch.Tensor:
        """Float32 logits ``[rows, vocab]`` of the next token after ``tokens`` (the tokens at position ``t``)."""
        pos = t if isinstance(t, Position) else Position(t)
        if state.ancestry is not None:  # this step's keys and values are the row's own
            own = torch.arange(tokens.shape[0], device=tokens.device, dtype=torch.int32) % state.beams
            if pos.span is None:
                state.ancestry[:, pos.t] = own
            else:
                state.ancestry.index_copy_(1, pos.index(), own[:, None])
        else:
            self._step_mask = pos.mask(tokens.device, state.self_kv.dtype)
        h = self._embed(tokens, pos)[:, None, :]  # [rows, 1, D]
        for i, layer in enumerate(self._layers()):
            h = self._layer(i, layer, h, pos, state)
        return self._final(h)[:, 0, :].float()

    # -- attention over the static cache and the per-sentence cross state
    def _self_attention(self, i, q, k, v, pos: Position, state, bias=None, scale=None) -> torch.Tensor:
        rows = q.shape[0]
        cache = state.self_kv
        if pos.span is None:
            cache[i, 0, :rows, :, pos.t] = k[:, :, 0]
            cache[i, 1, :rows, :, pos.t] = v[:, :, 0]
        else:  # the position is a device tensor: written without a host round-trip
            cache[i, 0, :rows].index_copy_(2, pos.index(), k)
            cache[i, 1, :rows].index_copy_(2, pos.index(), v)
        if state.ancestry is not None:
            out = indirect_attention.attend(
                q[:, :, 0],
                cache[i, 0, :rows],
                cache[i, 1, :rows],
                state.ancestry,
                pos.t,
                state.beams,
                self._ancestry_bias,
                q.shape[-1] ** -0.5 if scale is None else scale,
            )
            return out.reshape(rows, 1, -1)
        keys, values = cache[i, 0, :rows, :, : pos.keys], cache[i, 1, :rows, :, : pos.keys]
        out = self.attend(q, keys, values, bias, scale)
        return out.transpose(1, 2).reshape(rows, 1, -1)

    def _cross_attention(self, i, q, state, scale=None) -> torch.Tensor:
        """``q`` ``[rows, H, 1, d]``: the beams of a sentence become query positions of its element."""
        rows = q.shape[0]
        b, w = state.sentences, state.beams
        q = q.view(b, w, self.heads, -1).transpose(1, 2)  # [B, H, W, d]
        out = self.attend(q, state.cross_k[i], state.cross_v[i], state.cross_bias, scale)  # [B, H, W, d]
        return out.transpose(1, 2).reshape(rows, 1, -1)

    #: The self-attention bias ``[H, max_len]`` of this step's query when reading through the ancestry.
    _ancestry_bias: torch.Tensor | None = None
    #: This step's additive self-attention bias or mask over the cache positions it attends to.
    _step_bias: torch.Tensor | None = None
    _step_mask: torch.Tensor | None = None

    #: How attention is computed: "matmul" (two batched products over the cache's strided views,
    #: softmax in float32 as transformers' eager attention) or "sdpa" (torch's fused kernels).
    attention: str = "matmul"

    def attend(self, q, k, v, bias, scale) -> torch.Tensor:
        """``softmax(q k^T * scale + bias) v`` for ``q`` ``[N, H, Q, d]``, ``k``, ``v`` ``[N, H, T, d]``."""
        if self.attention == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale)
        if scale is None:
            scale = q.shape[-1] ** -0.5
        if scale != 1.0:
            q = q * scale
        scores = torch.matmul(q, k.transpose(-1, -2))
        if bias is not None:
            scores = scores + bias
        return torch.matmul(torch.softmax(scores.float(), dim=-1).to(v.dtype), v)


class T5Step(DecoderStep):
    """T5 and mT5: pre-norm RMS layers, unscaled attention, relative position bias in self-attention."""

    def __init__(self, model):
        super().__init__(model)
        self._bias_module = self._layers()[0].layer[0].SelfAttention
        self._bias_cache: torch.Tensor | None = None
        # transformers 5: T5 scales the decoder's output by d_model^-0.5 when its config says so
        # (scale_decoder_outputs: with tied embeddings unless told); mT5 never does, tied or not.
        scale = getattr(self.config, "scale_decoder_outputs", None)
        tied = self.config.tie_word_embeddings if scale is None else scale
        self.scale_output = tied and self.config.model_type != "mt5"
        self.qkv = [
            FusedProjections(b.layer[0].SelfAttention.q, b.layer[0].SelfAttention.k, b.layer[0].SelfAttention.v)
            for b in self._layers()
        ]

    def _layers(self):
        return self.decoder.block

    def _heads(self) -> int:
        return self.config.num_heads

    def _cross_projections(self, layer):
        attn = layer.layer[1].EncDecAttention
        return attn.k, attn.v

    def position_bias(self, max_len: int, device, dtype) -> torch.Tensor:
        """``[H, max_len, max_len]``: the bias of query position q over key position k (computed once
        per model, device and dtype, for the longest batch so far)."""
        cache = self._bias_cache
        if cache is None or cache.shape[-1] < max_len or cache.device != device or cache.dtype != dtype:
            length = max(max_len, 0 if cache is None else cache.shape[-1])
            self._bias_cache = self._bias_module.compute_bias(length, length, device=device)[0].to(dtype)
        return self._bias_cache

    def __call__(self, tokens, t, state):
        # The position bias of step t is the same in every layer: sliced once per step.
        pos = t if isinstance(t, Position) else Position(t)
        table = self.position_bias(state.self_kv.shape[4], tokens.device, state.self_kv.dtype)
        if state.ancestry is not None:  # the kernel reads positions [0, t] of the query's row
            self._ancestry_bias = table[:, pos.t] if pos.span is None else table.index_select(1, pos.index())[:, 0]
        elif pos.span is None:
            self._step_bias = table[None, :, pos.t : pos.t + 1, : pos.t + 1]
        else:
            mask = pos.mask(tokens.device, table.dtype)
            self._step_bias = table.index_select(1, pos.index())[None, :, :, : pos.span] + mask
        return super().__call__(tokens, pos, state)

    def _embed(self, tokens, pos):
        return self.decoder.embed_tokens(tokens)

    @staticmethod
    def _norm(norm, h: torch.Tensor) -> torch.Tensor:
        """T5LayerNorm (RMS, no bias) as one fused kernel."""
        return F.rms_norm(h, (h.shape[-1],), norm.weight, norm.variance_epsilon)

    def _layer(self, i, block, h, pos, state):
        self_layer, cross_layer, ff = block.layer[0], block.layer[1], block.layer[-1]
        q, k, v = self.qkv[i](self._norm(self_layer.layer_norm, h), self.heads)
        attended = self._self_attention(i, q, k, v, pos, state, bias=self._step_bias, scale=1.0)
        h = h + self_layer.SelfAttention.o(attended)
        cross = cross_layer.EncDecAttention
        q = _linear_heads(cross.q, self._norm(cross_layer.layer_norm, h), self.heads)
        h = h + cross.o(self._cross_attention(i, q, state, scale=1.0))
        return h + ff.DenseReluDense(self._norm(ff.layer_norm, h))

    def _final(self, h):
        h = self._norm(self.decoder.final_layer_norm, h)
        if self.scale_output:
            h = h * (self.config.d_model**-0.5)
        return self.model.lm_head(h)


class BartFamilyStep(DecoderStep):
    """BART, mBART, Pegasus and Marian: learned or sinusoidal positions, pre- or post-norm layers."""

    def __init__(self, model):
        super().__init__(model)
        self.pre_norm = BART_FAMILY_PRE_NORM[self.config.model_type]
        embed = self.decoder.embed_tokens
        # BART's embedding scales itself; Pegasus and Marian scale in the decoder.
        self.embed_scale = 1.0 if hasattr(embed, "embed_scale") else getattr(self.decoder, "embed_scale", 1.0)
        self._positions: torch.Tensor | None = None
        self.qkv = [
            FusedProjections(layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj)
            for layer in self._layers()
        ]

    def _layers(self):
        return self.decoder.layers

    def _heads(self) -> int:
        return self.config.decoder_attention_heads

    def _cross_projections(self, layer):
        return layer.encoder_attn.k_proj, layer.encoder_attn.v_proj

    def positions(self, max_len: int, device) -> torch.Tensor:
        """The decoder's position embeddings of positions ``[0, max_len)``, through its own module."""
        if self._positions is None or self._positions.shape[0] < max_len or self._positions.device != device:
            module = self.decoder.embed_positions
            shape = torch.Size((1, max_len))
            try:  # sinusoidal (Pegasus, Marian): called with the ids' shape
                table = module(shape, 0)
            except (TypeError, AttributeError, IndexError):  # learned (BART, mBART): called with the ids
                table = module(torch.zeros(shape, dtype=torch.long, device=device), 0)
            self._positions = table.reshape(max_len, -1).to(device)
        return self._positions

    def _embed(self, tokens, pos):
        h = self.decoder.embed_tokens(tokens) * self.embed_scale
        # The whole table at once, so that a graphed step never builds it while being captured.
        table = self.positions(max(pos.keys, self.config.max_position_embeddings), h.device)
        h = h + (table[pos.t] if pos.span is None else table.index_select(0, pos.index())).to(h.dtype)
        norm = getattr(self.decoder, "layernorm_embedding", None)
        return norm(h) if norm is not None else h

    def _block(self, h, norm, fn):
        if self.pre_norm:
            return h + fn(norm(h))
        return norm(h + fn(h))

    def _layer(self, i, layer, h, pos, state):
        attn, cross = layer.self_attn, layer.encoder_attn

        def self_block(x):
            q, k, v = self.qkv[i](x, self.heads)
            return attn.out_proj(self._self_attention(i, q, k, v, pos, state, bias=self._step_mask))

        def cross_block(x):
            return cross.out_proj(self._cross_attention(i, _linear_heads(cross.q_proj, x, self.heads), state))

        def ff_block(x):
            return layer.fc2(layer.activation_fn(layer.fc1(x)))

        h = self._block(h, layer.self_attn_layer_norm, self_block)
        h = self._block(h, layer.encoder_attn_layer_norm, cross_block)
        return self._block(h, layer.final_layer_norm, ff_block)

    def _final(self, h):
        norm = getattr(self.decoder, "layer_norm", None)
        if norm is not None:
            h = norm(h)
        logits = self.model.lm_head(h)
        bias = getattr(self.model, "final_logits_bias", None)
        return logits + bias.to(logits.dtype) if bias is not None else logits


def for_model(model) -> DecoderStep:
    """The decoder step of ``model``'s family; :class:`UnsupportedModel` for other families."""
    kind = getattr(model.config, "model_type", None)
    if kind in T5_FAMILY:
        return T5Step(model)
    if kind in BART_FAMILY_PRE_NORM:
        return BartFamilyStep(model)
    raise UnsupportedModel(f"no static decoder step for model type {kind!r} (supported: {', '.join(SUPPORTED)})")


@torch.inference_mode()
def check_against_model(
    step: DecoderStep, input_ids, attention_mask, decoder_ids, span: int | None = None, ancestry: bool = False
) -> float:
    """Largest difference between the step's logits and the model's own forward pass, relative to
    the largest logit, feeding ``decoder_ids`` ``[B, T]`` one token at a time (one beam per sentence).
    With ``span`` each step is fed as a CUDA graph replays it: its position a device tensor, the
    cache read over a fixed ``span`` of positions (later ones masked), or through a beam ancestry
    table with ``ancestry``."""
    model = step.model
    ref = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_ids).logits.float()
    encoded = step.encode(input_ids, attention_mask)
    steps = decoder_ids.shape[1]
    state = step.start(encoded, attention_mask, beams=1, max_len=max(steps, span or 0), ancestry=ancestry)
    worst = 0.0
    for t in range(steps):
        pos: int | Position = t
        if span is not None:
            pos = Position(torch.tensor(t, dtype=torch.long, device=decoder_ids.device), span)
        logits = step(decoder_ids[:, t], pos, state)
        worst = max(worst, (logits - ref[:, t]).abs().max().item())
    return worst / max(1.0, ref.abs().max().item())
