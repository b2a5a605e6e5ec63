"""snippets/walls/: the memory wall (model state) and the time wall
(training days)."""

import pytest

from snippets.walls.walls import state_GB, training_days
from tests import lab_inputs as inputs

B7 = 7_000_000_000


def test_state_of_7b_mixed_precision_adam_is_112_gb():
    assert state_GB(B7) == 112
    assert state_GB(B7, bytes_per_param=18) == 126  # DeepSpeed's convention


def test_training_days_is_six_flops_per_param_per_token():
    tokens, peak, mfu = 2_000_000_000_000, 989, 0.40
    one = training_days(B7, tokens, 1, peak, mfu)
    expected_s = 6 * B7 * tokens / (peak * 1e12 * mfu)
    assert one == pytest.approx(expected_s / 86_400, rel=1e-12)
    assert training_days(B7, tokens, 64, peak, mfu) == pytest.approx(one / 64)
    assert training_days(B7, tokens, 1, peak, 1) == pytest.approx(one * mfu)


def test_7b_on_2t_tokens_takes_2457_6_days_on_one_h100():
    """The page's figures: 1, 64 and 1024 H100s at 40% MFU."""
    days = [training_days(B7, 2 * 10**12, n, 989, 0.4) for n in (1, 64, 1024)]
    assert [f"{d:.1f}" for d in days] == ["2457.6", "38.4", "2.4"]


BAD_INPUT = [
    (
        "state_GB",
        state_GB,
        {"params": B7, "bytes_per_param": 16},
        {"params": inputs.POSITIVE, "bytes_per_param": inputs.POSITIVE},
    ),
    (
        "training_days",
        training_days,
        {
            "params": B7,
            "tokens": 2 * 10**12,
            "world_size": 64,
            "peak_tflops": 989,
            "mfu": 0.4,
        },
        {
            "params": inputs.POSITIVE,
            "tokens": inputs.POSITIVE,
            "world_size": inputs.COUNT,
            "peak_tflops": inputs.POSITIVE,
            "mfu": inputs.SHARE,
        },
    ),
]


@pytest.mark.parametrize(inputs.FIELDS, inputs.bad_cases(BAD_INPUT))
def test_bad_input_is_refused_by_name(
    function, valid, argument, value, error, allowed
):
    inputs.assert_refused(function, valid, argument, value, error, allowed)


def test_every_argument_has_bad_inputs():
    inputs.assert_every_argument_has_bad_inputs(BAD_INPUT, "walls")
