"""snippets/comms/: all-reduce time against compute time, and where a
step turns comms-bound."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from snippets.comms.cost import LINKS_GBps, comms_cost
from tests import lab_inputs as inputs
from tests.lab_inputs import PROFILE, REL, many

B7 = 7_000_000_000


def test_seed_compute_time_needs_8192_tokens_per_gpu():
    """Seed: 1.147 s of compute at 300 TFLOP/s, 8192 tokens per GPU."""
    r = comms_cost(B7, 64, tflops_per_gpu=300, interconnect_GBps=450)
    assert round(r["compute_s"], 3) == 1.147
    assert r["compute_s"] == pytest.approx(6 * B7 * 8192 / 300e12)
    # Dividing the 8192 tokens over the 64 ranks instead would give:
    split = comms_cost(B7, 64, 300, 450, tokens_per_gpu=8192 // 64)
    assert split["compute_s"] == pytest.approx(r["compute_s"] / 64)


@pytest.mark.parametrize(
    ("name", "GBps"),
    [
        ("10 Gb/s", 1.25),  # 10 Gb/s / 8 bits
        ("100 Gb/s", 12.5),
        ("NVLink 3", 600 / 2),  # A100's 600 GB/s is both ways together
        ("NVLink 4", 900 / 2),
        ("NDR", 400 / 8),
    ],
)
def test_links_are_one_way(name, GBps):
    assert [bw for n, bw in LINKS_GBps.items() if name in n] == [GBps]


@pytest.mark.parametrize(
    ("link_GBps", "seconds", "digits"),
    [
        (1.25, "22.05", 2),  # real 10 GbE: ~22 s, not the seed's 2.2 s
        (12.5, "2.205", 3),  # what the seed computed: 100 GbE
        (600, "0.046", 3),  # the seed's NVLink figure, a two-way total
        (300, "0.092", 3),  # the same NVLink 3, one way
    ],
)
def test_allreduce_time_of_7b_on_64_ranks(link_GBps, seconds, digits):
    r = comms_cost(B7, 64, tflops_per_gpu=300, interconnect_GBps=link_GBps)
    assert f"{r['comms_s']:.{digits}f}" == seconds
    assert r["comms_s"] == pytest.approx(27.5625 / link_GBps)


def test_verdicts_of_the_seed_example():
    fast = comms_cost(B7, 64, 300, 300)
    slow = comms_cost(B7, 64, 300, 1.25)
    assert fast["verdict"] == "compute-bound"
    assert slow["verdict"] == "comms-bound"
    # 100 GbE: 2.205 s of all-reduce against 1.147 s of compute.
    assert comms_cost(B7, 64, 300, 12.5)["verdict"] == "comms-bound"


def test_crossover_is_where_the_two_times_meet():
    r = comms_cost(B7, 64, 300, 100)
    at = comms_cost(B7, 64, 300, r["crossover_GBps"])
    assert at["comms_s"] == pytest.approx(at["compute_s"])
    assert r["crossover_GBps"] == pytest.approx(27.5625 / r["compute_s"])


def test_accumulation_adds_compute_not_comms():
    one = comms_cost(B7, 64, 300, 12.5)
    four = comms_cost(B7, 64, 300, 12.5, accum_steps=4)
    assert four["compute_s"] == pytest.approx(4 * one["compute_s"])
    assert four["comms_s"] == one["comms_s"]
    assert four["crossover_GBps"] == pytest.approx(one["crossover_GBps"] / 4)
    assert four["verdict"] == "compute-bound"


# --- for any valid input ---------------------------------------------------

# 121 one-way bandwidths from 1e6 down to 1e-6 GB/s, ten per decade.
SWEEP = [10 ** (6 - i / 10) for i in range(121)]


@PROFILE
@given(
    st.integers(min_value=10**6, max_value=10**12),
    many,
    st.floats(min_value=1, max_value=2000),
    st.integers(min_value=1, max_value=1_000_000),
    st.integers(min_value=1, max_value=64),
)
def test_verdict_flips_exactly_once_as_bandwidth_falls(
    psi, n, tflops, tokens, accum
):
    def verdict(bw):
        r = comms_cost(psi, n, tflops, bw, tokens, accum_steps=accum)
        return r["verdict"]

    crossover = comms_cost(psi, n, tflops, 1, tokens, accum_steps=accum)[
        "crossover_GBps"
    ]
    assume(SWEEP[-1] < crossover < SWEEP[0])
    verdicts = [verdict(bw) for bw in SWEEP]
    flips = [i for i in range(1, len(SWEEP)) if verdicts[i] != verdicts[i - 1]]
    assert len(flips) == 1, verdicts
    i = flips[0]
    assert verdicts[0] == "compute-bound"
    assert verdicts[-1] == "comms-bound"
    # The flip is where the bandwidth crosses the reported crossover.
    assert SWEEP[i] <= crossover * (1 + REL)
    assert crossover <= SWEEP[i - 1] * (1 + REL)


@PROFILE
@given(
    st.integers(min_value=10**6, max_value=10**12),
    many,
    st.floats(min_value=1, max_value=2000),
    st.floats(min_value=0.01, max_value=1000),
    st.integers(min_value=1, max_value=64),
)
def test_accumulation_scales_compute_only(psi, n, tflops, bw, accum):
    one = comms_cost(psi, n, tflops, bw)
    acc = comms_cost(psi, n, tflops, bw, accum_steps=accum)
    assert acc["comms_s"] == one["comms_s"]
    assert acc["compute_s"] == pytest.approx(accum * one["compute_s"], rel=REL)


BAD_INPUT = [
    (
        "comms_cost",
        comms_cost,
        {
            "params": B7,
            "world_size": 64,
            "tflops_per_gpu": 300,
            "interconnect_GBps": 12.5,
        },
        {
            "params": inputs.POSITIVE,
            "world_size": inputs.COUNT,
            "tflops_per_gpu": inputs.POSITIVE,
            "interconnect_GBps": inputs.POSITIVE,
            "tokens_per_gpu": inputs.COUNT,
            "bytes_per_grad": inputs.POSITIVE,
            "flops_per_token_per_param": inputs.POSITIVE,
            "accum_steps": inputs.COUNT,
        },
    ),
]


@pytest.mark.parametrize(inputs.FIELDS, inputs.bad_cases(BAD_INPUT))
def test_bad_input_is_refused_by_name(
    function, valid, argument, value, error, allowed
):
    inputs.assert_refused(function, valid, argument, value, error, allowed)


def test_every_argument_has_bad_inputs():
    inputs.assert_every_argument_has_bad_inputs(BAD_INPUT, "comms")
