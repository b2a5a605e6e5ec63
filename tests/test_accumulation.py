"""snippets/accumulation/: the effective batch of micro-batches,
accumulation steps and ranks."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snippets.accumulation.batch import effective_batch
from snippets.accumulation.tokens import NORMALISE, accumulate, big_batch
from tests import lab_inputs as inputs
from tests.lab_inputs import PROFILE, REL, small_count
from tests.lab_rows import row


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


# --- a token-level loss over micro-batches of unequal length ---------------

SHORT = [(2.0, 3.0)] * 2  # gradient -4 per token at w = 0.5
LONG = [(1.0, 1.0)] * 8  # gradient -0.5 per token


def test_per_micro_batch_mean_is_wrong_for_unequal_lengths():
    """Big batch: (2 x -4 + 8 x -0.5) / 10 = -1.2. Per micro-batch mean
    over A = 2: (-4 + -0.5) / 2 = -2.25, the short sequence's tokens
    weighted four times as much as the long one's."""
    batches = [SHORT, LONG]
    assert big_batch(batches, 0.5)["grad"] == pytest.approx(-1.2)
    wrong = accumulate(batches, 0.5, "micro_batch_mean")
    assert wrong["grad"] == pytest.approx(-2.25)
    right = accumulate(batches, 0.5, "total_tokens")
    assert right == pytest.approx(big_batch(batches, 0.5))
    assert wrong["loss"] != pytest.approx(right["loss"])


def test_total_tokens_is_the_default():
    batches = [SHORT, LONG]
    assert accumulate(batches, 0.5) == accumulate(batches, 0.5, "total_tokens")


token = st.tuples(
    st.floats(-100, 100, allow_nan=False),
    st.floats(-100, 100, allow_nan=False),
)
micro = st.lists(token, min_size=1, max_size=12)


@PROFILE
@given(st.lists(micro, min_size=1, max_size=6), st.floats(-10, 10))
def test_dividing_by_all_tokens_always_matches_the_big_batch(batches, w):
    whole = big_batch(batches, w)
    got = accumulate(batches, w, "total_tokens")
    assert got["loss"] == pytest.approx(whole["loss"], rel=1e-9, abs=1e-6)
    assert got["grad"] == pytest.approx(whole["grad"], rel=1e-9, abs=1e-6)


@PROFILE
@given(st.integers(1, 12), st.integers(1, 6), st.data(), st.floats(-10, 10))
def test_equal_micro_batches_agree_either_way(length, a, data, w):
    batches = [
        data.draw(st.lists(token, min_size=length, max_size=length))
        for _ in range(a)
    ]
    means = accumulate(batches, w, "micro_batch_mean")
    totals = accumulate(batches, w, "total_tokens")
    for key in ("loss", "grad"):
        assert means[key] == pytest.approx(totals[key], rel=1e-9, abs=1e-6)


# micro-batches of (x, y) tokens
MICRO_BATCHES = inputs.Kind(
    [
        ([], TypeError),
        ([[]], TypeError),
        (None, TypeError),
        ([(1.0, 2.0)], TypeError),  # tokens, not micro-batches
        ([[(1.0,)]], TypeError),
        ([[(1.0, "2")]], TypeError),
        ([[(1.0, math.nan)]], ValueError),
        ([[(math.inf, 1.0)]], ValueError),
    ]
)
FINITE = inputs.Kind([*inputs.NOT_FINITE, *inputs.NOT_A_NUMBER])

BAD_INPUT = [
    row(
        effective_batch,
        {"micro_batch": 2, "accum_steps": 16, "world_size": 8},
        seq_len=inputs.OPTIONAL_COUNT,
    ),
    row(
        big_batch,
        {"micro_batches": [SHORT, LONG], "weight": 0.5},
        micro_batches=MICRO_BATCHES,
        weight=FINITE,
    ),
    row(
        accumulate,
        {"micro_batches": [SHORT, LONG], "weight": 0.5},
        micro_batches=MICRO_BATCHES,
        weight=FINITE,
        normalise=inputs.choice(NORMALISE),
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "accumulation")
