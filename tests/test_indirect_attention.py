"""Self-attention through the beam ancestry table (the static backend's cache that is never reordered):
the reference against attention over explicitly reordered histories, the Triton kernel against the
reference (in Triton's interpreter on the CPU, and on CUDA when there is one)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from spanaug.pipeline.paraphraser import indirect_attention

pytestmark = pytest.mark.usefixtures("one_torch_thread")
REPO = Path(__file__).resolve().parents[1]


def _case(seed: int, dim: int = 16, dtype=torch.float32, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    rows, heads, max_len, beams = 12, 3, 40, 4
    keys = torch.randn((rows, heads, max_len, dim), generator=gen)
    values = torch.randn((rows, heads, max_len, dim), generator=gen)
    q = torch.randn((rows, heads, dim), generator=gen)
    ancestry = torch.randint(0, beams, (rows, max_len), generator=gen, dtype=torch.int32)
    bias = torch.randn((heads, max_len), generator=gen)
    return [
        x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype)
        for x in (q, keys, values, ancestry, bias)
    ], beams


@pytest.mark.parametrize("t", [0, 1, 17, 39])
@pytest.mark.parametrize("with_bias", [True, False])
def test_reference_attends_to_each_rows_history_as_the_ancestry_names_it(t, with_bias):
    """Row r's position j comes from the row of its sentence that ancestry[r, j] names: the same as
    softmax attention over that history gathered position by position."""
    (q, keys, values, ancestry, bias), beams = _case(t)
    bias = bias if with_bias else None
    got = indirect_attention.reference_attention(q, keys, values, ancestry, t, beams, bias, 0.5)
    for r in range(q.shape[0]):
        src = [r // beams * beams + int(ancestry[r, j]) for j in range(t + 1)]
        k = torch.stack([keys[s, :, j] for j, s in enumerate(src)], dim=1)  # [H, t + 1, d]
        v = torch.stack([values[s, :, j] for j, s in enumerate(src)], dim=1)
        scores = torch.einsum("hd,hjd->hj", q[r] * 0.5, k) + (bias[:, : t + 1] if with_bias else 0)
        want = torch.einsum("hj,hjd->hd", torch.softmax(scores, dim=-1), v)
        torch.testing.assert_close(got[r], want)


INTERPRETED = """
import sys, torch
from spanaug.pipeline.paraphraser import indirect_attention as ia
sys.path.insert(0, {tests!r})
from test_indirect_attention import _case
for seed, dim in ((0, 64), (1, 48), (2, 8)):
    (q, keys, values, ancestry, bias), beams = _case(seed, dim)
    for t in (0, 5, 31, 32, 39):
        for b in (bias, None):
            got = ia.kernel_attention(q, keys, values, ancestry, torch.tensor(t), beams, b, 0.125)
            want = ia.reference_attention(q, keys, values, ancestry, t, beams, b, 0.125)
            err = ((got - want).norm() / want.norm()).item()
            assert err < 1e-5, (dim, t, b is None, err)
print("kernel agrees")
"""


@pytest.mark.skipif(indirect_attention.triton is None, reason="Triton is not installed")
def test_the_kernel_refuses_values_laid_out_unlike_the_keys():
    """The kernel reads keys and values at the same offsets: values of other strides would be read
    wrongly, so they are refused before any launch."""
    keys = torch.zeros(4, 2, 8, 16)
    values = torch.zeros(4, 8, 2, 16).transpose(1, 2)  # the same shape, other strides
    ancestry = torch.zeros(4, 8, dtype=torch.int32)
    with pytest.raises(ValueError, match="same shape and strides"):
        indirect_attention.kernel_attention(
            torch.zeros(4, 2, 16), keys, values, ancestry, torch.tensor(3), 2, None, 1.0
        )


@pytest.mark.skipif(indirect_attention.triton is None, reason="Triton is not installed")
@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the kernel itself is tested (below)")
def test_the_kernel_equals_the_reference_in_tritons_interpreter():
    """The Triton kernel's arithmetic, run by Triton's interpreter on the CPU (head sizes that are
    and are not powers of two, positions at and across block edges, with and without a bias)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETED.format(tests=str(REPO / "tests"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kernel agrees" in done.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_on_cuda_the_kernel_runs_and_equals_the_reference(dtype):
    cuda = torch.device("cuda")
    assert indirect_attention.kernel_available(cuda, dtype)
    (q, keys, values, ancestry, bias), beams = _case(3, 64, dtype, cuda)
    for t in (0, 20, 39):
        got = indirect_attention.kernel_attention(
            q, keys, values, ancestry, torch.tensor(t, device=cuda), beams, bias, 1.0
        )
        want = indirect_attention.reference_attention(q, keys, values, ancestry, t, beams, bias, 1.0)
        assert ((got.float() - want.float()).norm() / want.float().norm()).item() < (
            1e-5 if dtype == torch.float32 else 2e-2
        )
