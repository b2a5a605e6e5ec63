"""Activation memory of the decoder in model.py, measured, beside the
prediction of activation_terms.py.

Measured: one forward pass runs under `saved_tensors_hooks`, which sees
every tensor autograd keeps for backward. Parameters (and views or
autocast copies of them) are left out, and each storage counts once: q,
k and v are three views of one qkv output, one allocation.
"""

import copy
from contextlib import nullcontext

import torch
from torch.overrides import TorchFunctionMode

from snippets.measured.activation_terms import (
    Bytes,
    predicted_bytes_per_block,
    predicted_bytes_per_model,
)


# --8<-- [start:measure]
def is_weight(t, module):
    """A parameter of `module`, or a view or autocast copy of one: the
    same size for any batch, so not an activation."""
    node = t.grad_fn  # e.g. TBackward0 -> ToCopyBackward0 -> AccumulateGrad
    while node is not None and len(node.next_functions) == 1:
        node = node.next_functions[0][0]
    source = getattr(node, "variable", t)  # AccumulateGrad holds the leaf
    weights = {p.untyped_storage().data_ptr() for p in module.parameters()}
    return source.untyped_storage().data_ptr() in weights


class SavedTensors(TorchFunctionMode):
    """Notes each storage autograd saves, and the function that saved it."""

    def __init__(self, module):
        super().__init__()
        self.module, self.calling, self.kept = module, "other", {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        outer, self.calling = self.calling, getattr(func, "__name__", "?")
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.calling = outer

    def pack(self, t):
        if not is_weight(t, self.module):
            storage = t.untyped_storage()  # q, k, v: one storage
            # Holding the storage keeps its address from being reused.
            self.kept.setdefault(storage.data_ptr(), (self.calling, storage))
        return t


def saved_bytes(module, *inputs):
    """Bytes autograd saves for backward in `module(*inputs)`."""
    saver = SavedTensors(module)
    hooks = torch.autograd.graph.saved_tensors_hooks(saver.pack, lambda t: t)
    with saver, hooks:
        module(*inputs)
    return Bytes.add_up((f, s.nbytes()) for f, s in saver.kept.values())


def saved_bytes_per_block(block, x):
    """One Block's activations for input x (batch, seq_len, d_model)."""
    return saved_bytes(block, x)


# --8<-- [end:measure]


# --8<-- [start:record]
def record(model, cfg, device, mixed):
    """The figures train.py reports: one micro-batch, in the run's dtype.

    Call on rank 0 before the model is wrapped. A copy runs, so the
    model is untouched; the values of the input do not matter.
    """
    m, b = cfg.model, cfg.micro_batch
    model = copy.deepcopy(model).to(device)
    x = torch.zeros(b, m.seq_len, m.d_model, device=device)
    amp, kw = nullcontext(), {}
    ddp = cfg.strategy == "ddp" and cfg.tp == cfg.pp == 1
    if mixed and ddp:  # autocast keeps x in fp32
        amp = torch.autocast(device.type, dtype=torch.bfloat16)
        kw = {"bytes_per_value": 2, "residual": 4}
    elif mixed:  # FSDP2 casts parameters and inputs to bf16
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
        kw = {"bytes_per_value": 2}  # fp32 mean and rstd, as on CUDA
    idx = torch.zeros(b, m.seq_len, dtype=torch.long, device=device)
    with amp:
        block = saved_bytes_per_block(model.blocks["0"], x.requires_grad_())
        whole = saved_bytes(model, idx)
    shape = m.seq_len, b, m.d_model, m.n_heads, m.d_ff
    return {
        "block_by_function": block.by_function,
        "block": block.total,
        "block_predicted": predicted_bytes_per_block(*shape, **kw).total,
        "n_layers": m.n_layers,
        "model": whole.total,  # n_layers blocks, Embed and Head
        "model_predicted": predicted_bytes_per_model(m, b, **kw).total,
    }


# --8<-- [end:record]
