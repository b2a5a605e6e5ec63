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

B7 = 7_000_000_000


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
    (
        "allreduce_bytes",
        allreduce_bytes,
        {"params": B7, "bytes_per_grad": 2, "world_size": 8},
        {
            "params": inputs.POSITIVE,
            "bytes_per_grad": inputs.POSITIVE,
            "world_size": inputs.COUNT,
        },
    ),
]


@pytest.mark.parametrize(inputs.FIELDS, inputs.bad_cases(BAD_INPUT))
def test_bad_input_is_refused_by_name(
    function, valid, argument, value, error, allowed
):
    inputs.assert_refused(function, valid, argument, value, error, allowed)


def test_every_argument_has_bad_inputs():
    inputs.assert_every_argument_has_bad_inputs(BAD_INPUT, "ddp")


@PROFILE
@given(not_a_size)
def test_any_non_positive_size_is_refused(bad):
    with pytest.raises(ValueError, match="params"):
        allreduce_bytes(bad)
