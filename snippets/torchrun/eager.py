"""How many more bytes eager PyTorch's element-wise kernels move than
torch.compile's, in one layer's forward and backward pass: counted on
real PyTorch, on the CPU, for the two layers the planner's rows run.

Eager PyTorch runs each operator as its own kernel, which reads its
inputs from memory and writes its output back; torch.compile (Inductor)
fuses chains of element-wise operators into one kernel. The count is
of bytes, not seconds: each eager operator's tensors in and out, seen
by a dispatch mode, and each compiled kernel's buffers read and
written, as Inductor's own metrics report them. Matrix multiplies and
attention are left out of both; they are the same kernels either way.

- `llama`: torchtitan's Llama 3 layer as its benchmarks ran it (2024):
  RMSNorm written out in fp32, rotary embeddings through complex
  numbers, SwiGLU, keys and values repeated for each query head.
- `gpt`: the course's own block (snippets/torchrun/model.py): PyTorch's
  LayerNorm and GELU, one kernel each even in eager mode.
"""

# --8<-- [start:eager]
import logging
import warnings
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from snippets.torchrun.model import Block

# A layer with Llama 3 8B's proportions, a hundredth of its width: an
# MLP 3.5 times the width, a KV head for every four query heads. The
# element-wise bytes grow with tokens x width on both sides, so their
# ratio does not depend on the scale.
WIDTH, HEADS, KV_HEADS, MLP, BATCH, SEQ = 256, 8, 2, 896, 2, 128
# Kernels that are not element-wise: matrix multiplies and attention.
NOT_ELEMENTWISE = ("mm", "addmm", "bmm", "linear", "scaled_dot_product")


class RMSNorm(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)
        return x32.type_as(x) * self.weight


def rotary(x, angles):
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * angles).flatten(3).type_as(x)


class LlamaLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = WIDTH // HEADS
        self.wq = nn.Linear(WIDTH, WIDTH, bias=False)
        self.wk = nn.Linear(WIDTH, KV_HEADS * self.head, bias=False)
        self.wv = nn.Linear(WIDTH, KV_HEADS * self.head, bias=False)
        self.wo = nn.Linear(WIDTH, WIDTH, bias=False)
        self.w1 = nn.Linear(WIDTH, MLP, bias=False)
        self.w2 = nn.Linear(MLP, WIDTH, bias=False)
        self.w3 = nn.Linear(WIDTH, MLP, bias=False)
        self.attention_norm, self.ffn_norm = RMSNorm(WIDTH), RMSNorm(WIDTH)
        step = torch.arange(0, self.head, 2).float() / self.head
        angle = torch.outer(torch.arange(SEQ).float(), 10000.0**-step)
        self.angles = torch.polar(torch.ones_like(angle), angle)[:, None]

    def forward(self, x):
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q = rotary(self.wq(h).view(b, s, HEADS, self.head), self.angles)
        k = rotary(self.wk(h).view(b, s, KV_HEADS, self.head), self.angles)
        v = self.wv(h).view(b, s, KV_HEADS, self.head)
        k, v = (  # repeat_kv
            t[:, :, :, None]
            .expand(b, s, KV_HEADS, HEADS // KV_HEADS, self.head)
            .reshape(b, s, HEADS, self.head)
            for t in (k, v)
        )
        o = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            is_causal=True,
        )
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, WIDTH))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def gpt_layer():
    shape = dict(d_model=WIDTH, n_heads=HEADS, d_ff=4 * WIDTH, experts=0)
    return Block(SimpleNamespace(**shape))


LAYERS = {"llama": LlamaLayer, "gpt": gpt_layer}


class EagerBytes(TorchDispatchMode):
    """Bytes in and out of every element-wise operator that runs."""

    def __init__(self):
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.__name__
        moves = not (
            func.is_view
            or name.startswith(("_unsafe_view", "detach"))
            or any(k in name for k in NOT_ELEMENTWISE)
        )
        if moves:
            tensors = tree_leaves((args, kwargs, out))
            self.bytes += sum(
                t.numel() * t.element_size()
                for t in tensors
                if isinstance(t, torch.Tensor)
            )
        return out


def compiled_bytes(layer, x, grad):
    """Bytes Inductor's element-wise kernels read and write: its
    per-kernel metrics, less the kernels it calls out to for matrix
    multiplies and attention (and the views it calls out to)."""
    from torch._inductor import metrics
    from torch._inductor.compile_fx import inductor_metrics_log
    from torch._inductor.scheduler import ExternKernelSchedulerNode

    torch._dynamo.reset()
    metrics.reset()
    level = inductor_metrics_log.level
    inductor_metrics_log.setLevel(logging.INFO)  # counts, prints nothing
    # Compiled afresh: a cached kernel reports no metrics. Scalar C++
    # kernels move the same bytes as vectorized ones and compile in
    # about half the time.
    settings = {"fx_graph_cache": False, "cpp.vec_isa_ok": False}
    try:
        with (
            torch._inductor.config.patch(settings),
            torch._functorch.config.patch(enable_autograd_cache=False),
            warnings.catch_warnings(),
        ):
            # it runs the rotary's complex products as eager kernels
            warnings.filterwarnings("ignore", "Torchinductor does not support")
            torch.compile(layer)(x).backward(grad)
    finally:
        inductor_metrics_log.setLevel(level)
    total = 0
    for node, elements in metrics.nodes_num_elem:
        if isinstance(node, ExternKernelSchedulerNode):
            kernel = str(getattr(node.node, "python_kernel_name", ""))
            if any(
                k in kernel for k in (*NOT_ELEMENTWISE, "view_as", "_conj")
            ):
                continue
        total += 4 * elements  # Inductor keeps bytes / 4
    return total


def element_bytes(kind):
    """(eager bytes, compiled bytes) of the element-wise kernels of one
    forward and backward pass of a layer of `kind`, in bf16."""
    torch.manual_seed(0)
    layer = LAYERS[kind]().to(torch.bfloat16)
    x = torch.randn(BATCH, SEQ, WIDTH, dtype=torch.bfloat16)
    grad = torch.randn_like(x)
    count = EagerBytes()
    with count:
        layer(x.requires_grad_()).backward(grad)
    compiled = compiled_bytes(layer, x.detach().requires_grad_(), grad)
    return count.bytes, compiled


# --8<-- [end:eager]

if __name__ == "__main__":
    for kind in LAYERS:
        eager, compiled = element_bytes(kind)
        print(
            f"{kind}: eager {eager / 1e6:.2f} MB, compiled "
            f"{compiled / 1e6:.2f} MB: {eager / compiled:.2f} times"
        )
