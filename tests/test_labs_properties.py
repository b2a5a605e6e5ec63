"""Properties the labs must keep for any valid input, not just the
worked examples: checked with hypothesis.

Every test uses the PROFILE below: derandomized (the examples come from
a fixed seed, so two runs try the same inputs), no example database,
no deadline (a test never asserts a time) and a modest example count.
One caveat: Hypothesis also mixes in constants it finds in the
project's modules already imported, so running this file alone and
inside the whole suite may try different (each time the same) inputs.
"""

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from snippets.accumulation.batch import effective_batch
from snippets.comms.cost import comms_cost
from snippets.ddp.allreduce import allreduce_bytes
from snippets.pipeline.bubble import bubble_fraction, megatron_ratio
from snippets.strategy.plan import plan
from snippets.zero.memory import SHARDED, memory_per_gpu

PROFILE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=80,
    suppress_health_check=[HealthCheck.too_slow],
)
RUNGS = list(SHARDED)  # ddp, zero1, zero2, zero3: the order plan climbs
REL = 1e-9

# Sizes across the range the course talks about, and well beyond it.
params = st.one_of(
    st.integers(min_value=1, max_value=10**13),
    st.floats(min_value=1e-3, max_value=1e13, allow_nan=False),
)
world = st.integers(min_value=1, max_value=100_000)
many = st.integers(min_value=2, max_value=100_000)
byte_size = st.sampled_from([1, 2, 4, 8]) | st.floats(0.125, 64)
optim_bytes = st.sampled_from([0, 4, 8, 12, 16]) | st.floats(0, 64)
small_count = st.integers(min_value=1, max_value=512)


# --- ZeRO memory -----------------------------------------------------------


@PROFILE
@given(params, world, byte_size, byte_size, optim_bytes)
def test_zero3_times_n_is_ddp(psi, n, bp, bg, bo):
    per_gpu = memory_per_gpu("zero3", psi, n, bp, bg, bo)
    whole = memory_per_gpu("ddp", psi, n, bp, bg, bo)
    assert per_gpu * n == pytest.approx(whole, rel=REL)
    assert memory_per_gpu("fsdp", psi, n, bp, bg, bo) == per_gpu


@PROFILE
@given(params, many, byte_size, byte_size, optim_bytes)
def test_each_stage_holds_no_more_than_the_one_before(psi, n, bp, bg, bo):
    row = [memory_per_gpu(s, psi, n, bp, bg, bo) for s in RUNGS]
    for before, after in zip(row, row[1:], strict=False):
        assert after <= before * (1 + REL)
    # Sharding something that has a size saves memory (when it is not
    # lost in the rounding of the sum: a 1e-284-byte optimizer is).
    assert row[3] < row[0]
    if bo > 1e-6 * (bp + bg):
        assert row[1] < row[0]


@PROFILE
@given(params, byte_size, byte_size, optim_bytes)
def test_one_rank_shards_nothing(psi, bp, bg, bo):
    row = {memory_per_gpu(s, psi, 1, bp, bg, bo) for s in RUNGS}
    assert max(row) == pytest.approx(min(row), rel=REL)


@PROFILE
@given(params, world, st.integers(min_value=2, max_value=1000))
def test_memory_is_linear_in_the_parameters(psi, n, k):
    for s in RUNGS:
        assert memory_per_gpu(s, psi * k, n) == pytest.approx(
            k * memory_per_gpu(s, psi, n), rel=REL
        )


# --- pipeline bubble -------------------------------------------------------


@PROFILE
@given(
    small_count,
    small_count,
    st.sampled_from(["gpipe", "1f1b", "interleaved"]),
    st.integers(min_value=1, max_value=16),
)
def test_bubble_is_a_fraction_that_falls_with_microbatches(p, m, sched, v):
    v = v if sched == "interleaved" else 1
    now = bubble_fraction(p, m, sched, v)
    more = bubble_fraction(p, m + 1, sched, v)
    assert 0 <= now < 1
    if p == 1:
        assert now == more == 0
    else:
        assert 0 < more < now


@PROFILE
@given(small_count, small_count, st.integers(min_value=1, max_value=16))
def test_interleaving_never_idles_longer(p, m, v):
    gpipe = bubble_fraction(p, m)
    inter = bubble_fraction(p, m, "interleaved", v)
    assert inter <= gpipe
    assert bubble_fraction(p, m, "1f1b") == gpipe
    if p > 1 and v > 1:
        assert inter < gpipe


@PROFILE
@given(small_count, small_count, st.integers(min_value=1, max_value=16))
def test_megatron_ratio_converts_the_fraction(p, m, v):
    fraction = bubble_fraction(p, m, "interleaved", v)
    ratio = megatron_ratio(fraction)
    assert ratio == pytest.approx((p - 1) / (v * m), rel=REL, abs=1e-15)
    # ... and back: ratio / (1 + ratio) is the fraction again.
    assert ratio / (1 + ratio) == pytest.approx(fraction, rel=REL, abs=1e-15)


# --- all-reduce ------------------------------------------------------------


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


# --- compute-bound or comms-bound ------------------------------------------

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


# --- plan ------------------------------------------------------------------


@PROFILE
@given(
    params,
    world,
    st.floats(min_value=1, max_value=1000),
    st.floats(min_value=0.05, max_value=1),
    byte_size,
    optim_bytes,
)
def test_plan_recommends_the_lowest_rung_that_fits(
    psi, n, gpu, usable, bg, bo
):
    p = plan(psi, n, gpu, usable, bytes_grad=bg, bytes_optim=bo)
    budget = gpu * usable
    assert p["budget_GB"] == pytest.approx(budget, rel=REL)
    need = {
        s: memory_per_gpu(s, psi, n, bytes_grad=bg, bytes_optim=bo)
        for s in RUNGS
    }
    assert p["per_gpu_GB"] == pytest.approx(need, rel=REL)
    fitting = [s for s in RUNGS if need[s] <= p["budget_GB"]]
    if fitting:
        chosen = p["strategy"]
        assert chosen == fitting[0]
        assert need[chosen] <= p["budget_GB"]  # never one that does not fit
        for lower in RUNGS[: RUNGS.index(chosen)]:
            assert need[lower] > p["budget_GB"]
    else:
        assert p["strategy"] == "tensor/pipeline"


# --- effective batch -------------------------------------------------------


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


# --- inputs outside the domain ---------------------------------------------


@PROFILE
@given(
    st.floats(max_value=0, allow_nan=False)
    | st.integers(max_value=0)
    | st.sampled_from([math.nan, math.inf, -math.inf])
)
def test_any_non_positive_size_is_refused(bad):
    with pytest.raises(ValueError, match="params"):
        memory_per_gpu("zero3", bad, 8)
    with pytest.raises(ValueError, match="param_count"):
        allreduce_bytes(bad)


@PROFILE
@given(st.integers(max_value=0))
def test_any_world_size_below_one_is_refused(bad):
    with pytest.raises(ValueError, match="world_size"):
        memory_per_gpu("ddp", 1e9, bad)
    with pytest.raises(ValueError, match="stages"):
        bubble_fraction(bad, 4)
    with pytest.raises(ValueError, match="microbatches"):
        bubble_fraction(4, bad)
