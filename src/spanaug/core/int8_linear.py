"""Linear layers as dynamic int8 matrix products on CPU (``paraphraser.dtype: int8``).

A paraphraser's decoding on CPU is bound by its matrix products, above all a large vocabulary's
output projection (Gemma 3's 262,144 rows: about 7 ms a beam row in float32 on 2 cores). Each
:class:`Int8Linear` keeps its weight as int8 with one scale per output channel, quantises its input
per row at every call, and multiplies with ``torch._int_mm`` (int8 x int8 -> int32, oneDNN's VNNI
kernels on x86): about 1.7 ms a row for that projection. The logits come back in the model's
dtype, so the negative constraints are applied to them exactly as in float32.

Why not a library: torch's eager ``quantize_dynamic`` is deprecated, and torchao 0.18's
``Int8DynamicActivationInt8WeightConfig`` measured slower than float32 on this CPU (11.9 ms a
row for that projection).
"""

from __future__ import annotations

import torch

from spanaug.core.errors import ConfigError

#: ``paraphraser.dtype``'s name for this compute type.
INT8 = "int8"

_LEVELS = 127.0


def _row_scales(x: torch.Tensor) -> torch.Tensor:
    """One symmetric int8 scale per row of ``x`` (a row of zeros gets a harmless non-zero scale)."""
    return x.abs().amax(dim=-1, keepdim=True).clamp_min(1e-12) / _LEVELS


class Int8Linear(torch.nn.Module):
    """A :class:`torch.nn.Linear`'s product, ``x @ W.T + b``, with ``W`` in int8 per output channel
    and ``x`` quantised per row when called (dynamic quantisation)."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        weight = linear.weight.detach().float()
        scales = _row_scales(weight)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        # [in, out], contiguous: the layout _int_mm's second operand is fastest in
        self.register_buffer("weight_t", torch.round(weight / scales).to(torch.int8).t().contiguous())
        self.register_buffer("scales", scales.squeeze(-1))
        bias = None if linear.bias is None else linear.bias.detach().float()
        self.register_buffer("bias", bias)

    @property
    def weight(self) -> torch.Tensor:
        """The int8 weight, ``[out, in]`` (a view): model code that asks a linear layer its weight's dtype
        (T5's feed-forward, which casts its input to it unless it is int8) sees what it holds."""
        return self.weight_t.t()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).float()
        if rows.shape[0] == 0:
            return x.new_zeros(*x.shape[:-1], self.out_features)
        x_scales = _row_scales(rows)
        quantised = torch.round(rows / x_scales).to(torch.int8)
        y = torch._int_mm(quantised, self.weight_t).float().mul_(x_scales).mul_(self.scales)
        if self.bias is not None:
            y.add_(self.bias)
        return y.to(x.dtype).view(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_linears(model: torch.nn.Module) -> int:
    """Replace every :class:`torch.nn.Linear` in ``model`` (on CPU) by an :class:`Int8Linear`, the
    output projection included; embeddings and norms stay as they are. Returns how many were."""
    found = [(name, module) for name, module in model.named_modules() if type(module) is torch.nn.Linear]
    for name, linear in found:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, Int8Linear(linear))
    return len(found)


def parameter_count(model: torch.nn.Module) -> int:
    """The model's weights as it was loaded: an :class:`Int8Linear`'s int8 weight and bias (buffers,
    which ``parameters()`` leaves out) counted as the linear layer's they were, except an output
    projection tied to the input embeddings (its int8 copy is not another weight of the model's)."""
    config = getattr(model, "config", None)
    tied = bool(getattr(config.get_text_config(), "tie_word_embeddings", False)) if config is not None else False
    head = model.get_output_embeddings() if tied and hasattr(model, "get_output_embeddings") else None
    quantised = sum(
        m.weight_t.numel() + (0 if m.bias is None else m.bias.numel())
        for m in model.modules()
        if isinstance(m, Int8Linear) and m is not head
    )
    return sum(p.numel() for p in model.parameters()) + quantised


def compute_dtype(device: torch.device, dtype: str | None) -> tuple[str | None, bool]:
    """``paraphraser.dtype`` for a torch backend: the dtype to load the model in, and whether its
    linear layers then become int8. int8 is a CPU setting (its kernels are CPU kernels)."""
    if dtype != INT8:
        return dtype, False
    if device.type != "cpu":
        raise ConfigError(
            f"paraphraser.dtype: int8 runs the torch backends' matrix products on CPU, but the paraphraser "
            f"is on {device.type}: set paraphraser.dtype to auto (bf16 on GPUs), or use the ct2 backend, "
            "whose int8 compute type runs on GPUs too"
        )
    return "float32", True
