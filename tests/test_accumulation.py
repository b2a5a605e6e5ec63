"""snippets/accumulation/: the effective batch of micro-batches,
accumulation steps and ranks."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snippets.accumulation.batch import effective_batch
from tests import lab_inputs as inputs
from tests.lab_inputs import PROFILE, REL, small_count


def test_effective_batch_of_the_pages():
    small = effective_batch(micro_batch=2, accum_steps=16, world_size=8)
    assert small == {
        "effective_batch": 256,
        "optimizer_steps_per_1M_samples": 3906.25,
    }
    large = effective_batch(1, 32, 64, seq_len=4096)
    assert large["effective_batch"] == 2048
    assert large["tokens_per_step"] == 8_388_608
    assert large["optimizer_steps_per_1M_samples"] == pytest.approx(488.28125)


def test_halving_micro_batch_and_doubling_accumulation_keeps_the_batch():
    assert (
        effective_batch(1, 32, 8)["effective_batch"]
        == effective_batch(2, 16, 8)["effective_batch"]
    )


def test_no_seq_len_no_tokens():
    assert "tokens_per_step" not in effective_batch(2, 16, 8)


@PROFILE
@given(small_count, small_count, small_count, small_count)
def test_effective_batch_is_multiplicative(mb, accum, n, k):
    batch = effective_batch(mb, accum, n)["effective_batch"]
    assert batch == mb * accum * n
    assert effective_batch(mb * k, accum, n)["effective_batch"] == k * batch
    assert effective_batch(accum, n, mb)["effective_batch"] == batch
    steps = effective_batch(mb, accum, n)["optimizer_steps_per_1M_samples"]
    assert steps * batch == pytest.approx(1_000_000, rel=REL)


@PROFILE
@given(small_count, small_count, small_count, st.integers(1, 1 << 20))
def test_tokens_per_step_is_batch_times_sequence(mb, accum, n, seq):
    r = effective_batch(mb, accum, n, seq_len=seq)
    assert r["tokens_per_step"] == r["effective_batch"] * seq


BAD_INPUT = [
    (
        "effective_batch",
        effective_batch,
        {"micro_batch": 2, "accum_steps": 16, "world_size": 8},
        {
            "micro_batch": inputs.COUNT,
            "accum_steps": inputs.COUNT,
            "world_size": inputs.COUNT,
            "seq_len": inputs.OPTIONAL_COUNT,
        },
    ),
]


@pytest.mark.parametrize(inputs.FIELDS, inputs.bad_cases(BAD_INPUT))
def test_bad_input_is_refused_by_name(
    function, valid, argument, value, error, allowed
):
    inputs.assert_refused(function, valid, argument, value, error, allowed)


def test_every_argument_has_bad_inputs():
    inputs.assert_every_argument_has_bad_inputs(BAD_INPUT, "accumulation")
