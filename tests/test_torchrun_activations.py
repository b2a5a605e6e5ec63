"""course/instruments/activations.py measures the bytes that
snippets/measured/activation_terms.py predicts: they must be equal.

CPU only; run with CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1. Nothing
here depends on values or timing, only on what autograd saves.
"""

import pytest
import torch

from course.instruments.activations import (
    SavedTensors,
    is_weight,
    record,
    saved_bytes,
    saved_bytes_per_block,
)
from snippets.measured.activation_terms import (
    Bytes,
    block_terms,
    predicted_bytes_per_block,
    predicted_bytes_per_model,
)
from snippets.torchrun.config import ModelConfig, TrainConfig
from snippets.torchrun.model import Block, batch, build_model

pytestmark = pytest.mark.slow  # torchrun launches

# (seq_len, micro_batch, d_model, n_heads, d_ff): heads 1 and 4, seq_len
# 16 and 64, micro-batch 1 and 3, d_ff = 4 x d_model and not.
SHAPES = [
    (16, 1, 32, 1, 128),
    (16, 3, 32, 4, 48),
    (64, 1, 64, 4, 96),
    (64, 3, 48, 1, 256),
    (64, 4, 256, 4, 1024),  # the page's model
]
PAGE = ModelConfig()  # vocab 512, seq_len 64, d_model 256, 4 heads ...
SMALL = ModelConfig(
    vocab=64, seq_len=16, d_model=32, n_heads=2, n_layers=2, d_ff=64
)
BF16 = torch.bfloat16


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


def block_and_input(s, b, h, a, f, dtype=torch.float32):
    cfg = ModelConfig(seq_len=s, d_model=h, n_heads=a, d_ff=f)
    x = torch.randn(b, s, h, dtype=dtype, requires_grad=True)
    return Block(cfg).to(dtype), x


@pytest.mark.parametrize("shape", SHAPES)
def test_fp32_block_saves_what_the_formula_says(shape):
    measured = saved_bytes_per_block(*block_and_input(*shape))
    assert measured == predicted_bytes_per_block(*shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_autocast_bf16_keeps_the_residual_stream_in_fp32(shape):
    """Matmul inputs and outputs are bf16; LayerNorm runs in fp32 on the
    fp32 residual stream, so its input and statistics keep 4 bytes."""
    block, x = block_and_input(*shape)
    with torch.autocast("cpu", dtype=BF16):
        measured = saved_bytes_per_block(block, x)
    assert measured == predicted_bytes_per_block(
        *shape, bytes_per_value=2, residual=4
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_pure_bf16_on_cpu_differs_only_in_layernorm_statistics(shape):
    """Parameters and input in bf16, as FSDP2's policy makes them. The
    CPU LayerNorm returns bf16 mean and rstd; the CUDA kernel returns
    fp32 ones. The formula with fp32 statistics is off by exactly that
    term: 2 norms x (mean, rstd) x b x s x 2 bytes."""
    s, b = shape[:2]
    measured = saved_bytes_per_block(*block_and_input(*shape, dtype=BF16))
    cpu = predicted_bytes_per_block(*shape, bytes_per_value=2, stats=2)
    cuda = predicted_bytes_per_block(*shape, bytes_per_value=2)
    assert measured == cpu
    assert cuda.total - measured.total == 2 * 2 * b * s * 2


def test_each_term_is_needed():
    """Leave out any one term and the formula no longer matches."""
    shape = SHAPES[1]
    measured = saved_bytes_per_block(*block_and_input(*shape))
    terms = block_terms(*shape)
    for left_out in range(len(terms)):
        rest = terms[:left_out] + terms[left_out + 1 :]
        partial = Bytes.add_up((f, n) for f, _, n in rest)
        assert partial != measured, terms[left_out]


def tensors_in_graph(out):
    """Every tensor the autograd graph of `out` holds as `_saved_*`:
    a second way of looking, independent of the hooks."""
    seen, todo, found = set(), [out.grad_fn], []
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            value = getattr(node, name) if name.startswith("_saved_") else 0
            if isinstance(value, torch.Tensor):
                found.append(value)
        todo += [next_node for next_node, _ in node.next_functions]
    return found


@pytest.mark.parametrize("autocast", [False, True])
def test_the_hooks_see_every_tensor_the_graph_keeps(autocast):
    block, x = block_and_input(*SHAPES[1])
    saver = SavedTensors(block)
    hooks = torch.autograd.graph.saved_tensors_hooks(saver.pack, lambda t: t)
    with torch.autocast("cpu", dtype=BF16, enabled=autocast), saver, hooks:
        out = block(x)
    in_graph = tensors_in_graph(out)
    storages = {
        t.untyped_storage().data_ptr()
        for t in in_graph
        if not is_weight(t, block)
    }
    assert storages == set(saver.kept)
    # x, 2 x (mean, rstd), qkv's input and output, y, logsumexp, norm2's
    # input, mlp[0]'s input, GELU's input and output
    assert len(storages) == 13
    weights = [t for t in in_graph if is_weight(t, block)]
    assert len(weights) == 8  # 2 x (weight, bias) of norms, 4 matmuls


@pytest.mark.parametrize("cfg, b", [(PAGE, 4), (SMALL, 2)])
@pytest.mark.parametrize("autocast", [False, True])
def test_whole_model(cfg, b, autocast):
    model = build_model(cfg, seed=0)
    idx = torch.randint(0, cfg.vocab, (b, cfg.seq_len))
    with torch.autocast("cpu", dtype=BF16, enabled=autocast):
        measured = saved_bytes(model, idx)
    kw = {"bytes_per_value": 2, "residual": 4} if autocast else {}
    assert measured == predicted_bytes_per_model(cfg, b, **kw)


def test_token_ids_sliced_from_longer_rows_keep_the_whole_rows():
    """batch() returns x = seq[:, :-1], a view of (b, s + 1) ids: the
    embedding keeps that storage, b x 8 bytes more than b x s ids."""
    b = 2
    model = build_model(SMALL, seed=0)
    x, _ = batch(SMALL, 0, 1, 0, b, slice(0, b))
    measured = saved_bytes(model, x)
    predicted = predicted_bytes_per_model(SMALL, b)
    assert measured.total - predicted.total == b * 8


def test_page_figures():
    """The numbers on the page (fp32, one micro-batch of 4)."""
    block = predicted_bytes_per_block(64, 4, 256, 4, 1024)
    assert block.total == 4_202_496
    assert predicted_bytes_per_model(PAGE, 4).total == 17_338_880
    bf16 = predicted_bytes_per_block(64, 4, 256, 4, 1024, 2, residual=4)
    assert bf16.total == 2_367_488


@pytest.mark.parametrize("mixed", [False, True])
def test_record_as_train_py_calls_it(mixed):
    cfg = TrainConfig(model=SMALL, micro_batch=3)
    model = build_model(SMALL, seed=0)
    before = [p.clone() for p in model.parameters()]
    figures = record(model, cfg, torch.device("cpu"), mixed)
    assert figures["block"] == figures["block_predicted"]
    assert figures["model"] == figures["model_predicted"]
    assert figures["n_layers"] == SMALL.n_layers
    after = model.parameters()
    assert all(torch.equal(p, q) for p, q in zip(before, after, strict=True))
