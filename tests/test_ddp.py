"""snippets/ddp/: what one rank sends in a ring all-reduce."""

import pytest
from hypothesis import given

from snippets.ddp.allreduce import allreduce_bytes
from tests import lab_inputs as inputs
from tests.lab_inputs import (
    PROFILE,
    REL,
    byte_size,
    not_a_size,
    params,
    world,
)
from tests.lab_rows import row

B7 = 7_000_000_000


@pytest.mark.slow  # imports torch
@pytest.mark.parametrize(
    ("autocast", "dtype", "bytes_per_grad"),
    [(True, "float32", 4), (False, "bfloat16", 2)],
)
def test_ddp_all_reduces_the_dtype_of_the_parameters(
    tmp_path, autocast, dtype, bytes_per_grad
):
    """A real DDP (gloo, one rank): under torch.autocast the parameters
    stay fp32 and DDP's buckets hold 4 bytes per parameter; only a bf16
    model gives the 2 bytes the labs assume."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        model = torch.nn.Linear(64, 64)
        if not autocast:
            model = model.to(torch.bfloat16)
        ddp = DistributedDataParallel(model)
        buckets = []

        def record(state, bucket):
            buckets.append(bucket.buffer())
            done = torch.futures.Future()
            done.set_result(bucket.buffer())
            return done

        ddp.register_comm_hook(None, record)
        x = torch.randn(4, 64, dtype=next(model.parameters()).dtype)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            y = ddp(x)
        assert y.dtype == torch.bfloat16
        y.float().sum().backward()
    finally:
        dist.destroy_process_group()
    params = sum(p.numel() for p in model.parameters())
    sent = sum(b.numel() * b.element_size() for b in buckets)
    assert {str(b.dtype) for b in buckets} == {f"torch.{dtype}"}
    assert sent == bytes_per_grad * params


@pytest.mark.parametrize(
    ("world_size", "factor", "sent_GB"),
    [(8, 1.75, 24.5), (64, 1.96875, 27.5625), (2, 1.0, 14.0), (1, 0.0, 0)],
)
def test_allreduce_7b_bf16(world_size, factor, sent_GB):
    r = allreduce_bytes(B7, bytes_per_grad=2, world_size=world_size)
    assert r["grad_GB"] == 14.0
    assert r["factor"] == factor
    assert r["sent_per_rank_GB"] == pytest.approx(sent_GB, abs=1e-12)


def test_allreduce_defaults_are_bf16_on_eight_ranks():
    assert allreduce_bytes(B7) == allreduce_bytes(B7, 2, 8)


def test_allreduce_fp32_gradients_double_every_figure():
    bf16 = allreduce_bytes(B7, bytes_per_grad=2)
    fp32 = allreduce_bytes(B7, bytes_per_grad=4)
    assert fp32["grad_GB"] == 2 * bf16["grad_GB"]
    assert fp32["sent_per_rank_GB"] == 2 * bf16["sent_per_rank_GB"]
    assert fp32["factor"] == bf16["factor"]


@PROFILE
@given(params, byte_size, world)
def test_allreduce_factor_below_two_and_rising(psi, b, n):
    now = allreduce_bytes(psi, b, n)
    more = allreduce_bytes(psi, b, n + 1)
    assert 0 <= now["factor"] < 2
    assert now["factor"] < more["factor"]
    assert now["sent_per_rank_GB"] == pytest.approx(
        now["factor"] * now["grad_GB"], rel=REL
    )
    assert now["sent_per_rank_GB"] < 2 * now["grad_GB"]


BAD_INPUT = [
    row(allreduce_bytes, {"params": B7, "bytes_per_grad": 2, "world_size": 8}),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "ddp")


@PROFILE
@given(not_a_size)
def test_any_non_positive_size_is_refused(bad):
    with pytest.raises(ValueError, match="params"):
        allreduce_bytes(bad)
