"""snippets/pipeline/: the bubble of GPipe, 1F1B and interleaved
schedules, by formula and by a slot-by-slot simulation; what Megatron
tensor parallelism sends per layer, against its compute."""

from itertools import product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snippets.pipeline.bubble import (
    SCHEDULES,
    bubble_fraction,
    interleaved_rounds,
    megatron_ratio,
)
from snippets.pipeline.schedule import (
    KINDS,
    idle_fraction,
    peak_in_flight,
    pipeline_schedule,
)
from snippets.pipeline.schedule import SCHEDULES as SLOT_SCHEDULES
from snippets.pipeline.tensor import tp_bytes_per_layer, tp_layer_seconds
from snippets.walls.walls import FLOPS_PER_PARAM_TOKEN
from tests import lab_inputs as inputs
from tests.lab_inputs import PROFILE, REL, small_count
from tests.lab_rows import STAGE_OF_4, row

F = 989 * 0.40  # TFLOP/s: an H100 at 40% of its dense bf16 peak


@pytest.mark.parametrize(
    ("m", "percent"), [(1, "75.0%"), (4, "42.9%"), (16, "15.8%"), (64, "4.5%")]
)
def test_gpipe_bubble_of_four_stages(m, percent):
    fraction = bubble_fraction(4, m)
    assert f"{fraction:.1%}" == percent
    assert fraction == pytest.approx(3 / (m + 3))


@pytest.mark.parametrize("p", [1, 2, 4, 8])
@pytest.mark.parametrize("m", [1, 4, 16, 64])
def test_1f1b_idles_as_long_as_gpipe(p, m):
    assert bubble_fraction(p, m, "1f1b") == bubble_fraction(p, m, "gpipe")


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("m", [1, 4, 16, 64])
def test_megatron_ratio_is_p_minus_1_over_m(p, m):
    """Megatron-LM 2021 sec. 2.2: bubble / ideal time = (p - 1) / m."""
    ratio = megatron_ratio(bubble_fraction(p, m))
    assert ratio == pytest.approx((p - 1) / m, rel=1e-12)


@pytest.mark.parametrize("v", [1, 2, 4])
@pytest.mark.parametrize("m", [4, 8, 32])
def test_interleaved_ratio_is_p_minus_1_over_v_m(v, m):
    p = 4
    fraction = bubble_fraction(p, m, schedule="interleaved", chunks=v)
    assert megatron_ratio(fraction) == pytest.approx((p - 1) / (v * m))


@pytest.mark.parametrize("m", [9, 11, 13])
def test_interleaved_bubble_needs_whole_rounds(m):
    """torch 2.13: rounds = max(1, m // p), and m % rounds == 0."""
    with pytest.raises(ValueError, match="multiple of the rounds"):
        bubble_fraction(4, m, "interleaved", 2)


@pytest.mark.parametrize(("p", "m"), [(4, 3), (4, 6), (4, 10), (8, 12)])
def test_interleaved_runs_what_torch_runs(p, m):
    """m = 12 on p = 8 runs: one round of 12 (the review's case)."""
    assert 0 < bubble_fraction(p, m, "interleaved", 2) < bubble_fraction(p, m)


def test_one_micro_batch_gains_nothing_from_interleaving():
    assert bubble_fraction(4, 1, "interleaved", 2) == bubble_fraction(4, 1)


def test_interleaved_with_one_chunk_is_gpipe():
    assert bubble_fraction(4, 8, "interleaved", 1) == bubble_fraction(4, 8)


def test_megatron_ratio_edges():
    assert megatron_ratio(0) == 0
    assert megatron_ratio(0.0) == 0
    assert megatron_ratio(0.5) == 1
    assert megatron_ratio(0.75) == pytest.approx(3)


@pytest.mark.parametrize("kind", KINDS)
def test_simulated_schedule_idles_as_the_formula_says(kind):
    """Slot by slot, whatever the forward and backward take, the
    schedule idles exactly (p - 1) / (m + p - 1) of the step."""
    for stages, micro, (fwd, bwd) in product(
        range(1, 7), range(1, 17), ((1, 1), (1, 2), (2, 3))
    ):
        slots = pipeline_schedule(stages, micro, kind, fwd, bwd)
        assert idle_fraction(slots) == pytest.approx(
            bubble_fraction(stages, micro, kind), rel=1e-9
        ), (stages, micro, fwd, bwd)
        assert len(slots) == 2 * stages * micro
        # fill and drain cost p - 1 slots of one forward and backward
        step = max(s.end for s in slots)
        assert step == (micro + stages - 1) * (fwd + bwd)


@pytest.mark.parametrize("kind", KINDS)
def test_schedule_respects_dependencies(kind):
    stages, micro = 4, 6
    slots = pipeline_schedule(stages, micro, kind)
    end = {(s.stage, s.kind, s.micro): s.end for s in slots}
    start = {(s.stage, s.kind, s.micro): s.start for s in slots}
    for stage in range(stages):
        mine = sorted((s.start, s.end) for s in slots if s.stage == stage)
        gaps = zip(mine, mine[1:], strict=False)
        assert all(a[1] <= b[0] for a, b in gaps), "overlap"
        for i in range(micro):
            if stage > 0:
                assert start[(stage, "F", i)] >= end[(stage - 1, "F", i)]
            if stage < stages - 1:
                assert start[(stage, "B", i)] >= end[(stage + 1, "B", i)]
            assert start[(stage, "B", i)] >= end[(stage, "F", i)]


def test_1f1b_keeps_at_most_p_microbatches_in_flight():
    for stages, micro in product(range(1, 9), range(1, 17)):
        gpipe = pipeline_schedule(stages, micro, "gpipe")
        one = pipeline_schedule(stages, micro, "1f1b")
        for stage in range(stages):
            assert peak_in_flight(one, stage) == min(stages - stage, micro)
            assert peak_in_flight(gpipe, stage) == micro
        assert max(peak_in_flight(one, s) for s in range(stages)) <= stages


@pytest.mark.parametrize(
    ("p", "m", "v"),
    [
        (2, 2, 2),
        (2, 4, 3),
        (3, 9, 2),
        (4, 8, 2),
        (4, 16, 2),
        (4, 4, 4),
        (8, 16, 2),
        (4, 8, 1),
        # m not a multiple of p, or below it: torch's order still idles
        # what bubble_fraction says
        (4, 1, 2),
        (4, 3, 2),
        (4, 6, 2),
        (4, 10, 2),
        (8, 12, 2),
        (8, 9, 2),
        (4, 3, 3),
        (8, 4, 4),
        (3, 4, 2),
    ],
)
def test_simulated_interleaved_schedule_idles_as_the_formula_says(p, m, v):
    """Interleaved 1F1B laid out slot by slot, each chunk taking 1/v of
    a stage's time: idle (p - 1) / v slots out of m + (p - 1) / v."""
    slots = pipeline_schedule(p, m, "interleaved", chunks=v)
    assert len(slots) == 2 * p * m * v
    expected = bubble_fraction(p, m, "interleaved", v)
    assert idle_fraction(slots) == pytest.approx(expected, rel=1e-12)
    assert {s.chunk for s in slots} == set(range(v))


def test_interleaving_holds_more_than_1f1b():
    """4 stages, 8 micro-batches, 2 chunks: the first stage holds 11
    half-stage units, 5.5 micro-batches' worth, against 1F1B's 4."""
    slots = pipeline_schedule(4, 8, "interleaved", chunks=2)
    assert [peak_in_flight(slots, s) for s in range(4)] == [11, 9, 7, 5]


@pytest.mark.parametrize(("p", "m"), [(4, 9), (4, 11), (3, 7), (2, 5)])
def test_interleaved_needs_whole_rounds(p, m):
    with pytest.raises(
        ValueError, match=r"microbatches must be a multiple of the rounds"
    ):
        pipeline_schedule(p, m, "interleaved", chunks=2)


def test_twelve_on_eight_stages_holds_every_micro_batch():
    """m = 12 on p = 8 with 2 chunks: one round of 12, so the first
    stage runs all 24 chunk-forwards before its first backward."""
    slots = pipeline_schedule(8, 12, "interleaved", chunks=2)
    assert peak_in_flight(slots, 0) == 24
    assert idle_fraction(slots) == pytest.approx(3.5 / 15.5)


TORCH_CASES = [
    (p, m, v)
    for p in (2, 3, 4, 8)
    for m in range(1, 18)
    for v in (2, 3)
    if m % max(1, m // p) == 0
]


@pytest.mark.slow  # imports torch
def test_interleaved_order_is_torchs():
    """Every rank's work list equals what torch 2.13's
    ScheduleInterleaved1F1B computes for it (its _Action list, without
    the idle slots it pads with), and torch refuses what the lab does."""
    from torch.distributed.pipelining import schedules

    from snippets.pipeline.schedule import _interleaved_order

    def torch_order(p, m, v, rank):
        s = object.__new__(schedules.ScheduleInterleaved1F1B)
        s.pp_group_size, s.n_local_stages, s._n_microbatches = p, v, m
        s.number_of_rounds = max(1, m // p)
        s.microbatches_per_round = m // s.number_of_rounds
        forward = schedules._ComputationType.FORWARD
        return [
            (
                "F" if a.computation_type == forward else "B",
                a.microbatch_index,
                a.stage_index // p,
            )
            for a in s._calculate_single_rank_operations(rank)
            if a is not None
        ]

    for p, m, v in TORCH_CASES:
        for rank in range(p):
            assert _interleaved_order(rank, p, m, v) == torch_order(
                p, m, v, rank
            ), (p, m, v, rank)


def test_schedule_chunks_need_the_interleaved_schedule():
    for schedule in KINDS:
        with pytest.raises(ValueError, match=rf"\bchunks\b.*{schedule}"):
            pipeline_schedule(4, 8, schedule, chunks=2)


def test_one_stage_has_no_bubble():
    for schedule in SCHEDULES:
        assert bubble_fraction(1, 4, schedule) == 0


def test_chunks_need_the_interleaved_schedule():
    for schedule in ("gpipe", "1f1b"):
        with pytest.raises(ValueError, match=rf"\bchunks\b.*{schedule}"):
            bubble_fraction(4, 8, schedule=schedule, chunks=2)


# --- tensor parallelism -----------------------------------------------------


def test_four_ring_all_reduces_of_the_layer_output():
    """Two all-reduces forward and two backward of b x s x h values,
    each rank sending 2 (t - 1) / t of the buffer per all-reduce."""
    buffer = 4096 * 1 * 4096 * 2  # bf16
    assert tp_bytes_per_layer(4096, 1, 4096, 8) == 4 * 1.75 * buffer
    assert tp_bytes_per_layer(4096, 1, 4096, 2) == 4 * 1.0 * buffer
    assert tp_bytes_per_layer(4096, 1, 4096, 1) == 0


def test_full_recomputation_makes_six_all_reduces():
    """The forward pass runs again in the backward pass, all-reduces
    included: 6/4 of the bytes, 8/6 of the compute."""
    four = tp_bytes_per_layer(4096, 1, 4096, 8)
    assert tp_bytes_per_layer(4096, 1, 4096, 8, recompute="full") == 1.5 * four
    plain = tp_layer_seconds(4096, 1, 4096, 8, F, 370)
    full = tp_layer_seconds(4096, 1, 4096, 8, F, 370, recompute="full")
    assert full[0] == pytest.approx(plain[0] * 8 / 6)
    assert full[1] == pytest.approx(plain[1] * 1.5)


def test_seven_b_layer_sends_235_mb_per_rank():
    assert f"{tp_bytes_per_layer(4096, 1, 4096, 8) / 1e6:.1f}" == "234.9"


def test_compute_is_six_flops_per_weight_per_token():
    compute, _ = tp_layer_seconds(4096, 2, 4096, 8, F, 450)
    flops = sum(FLOPS_PER_PARAM_TOKEN.values()) * 12 * 4096**2 * 4096 * 2
    assert compute == pytest.approx(flops / 8 / (F * 1e12))


def test_tensor_parallelism_stays_inside_the_node():
    """On NVLink the all-reduces of a 7B layer take a third of its
    compute; on one 50 GB/s NIC per GPU they take three times it."""
    compute, nvlink = tp_layer_seconds(4096, 1, 4096, 8, F, 450)
    _, nic = tp_layer_seconds(4096, 1, 4096, 8, F, 50)
    assert nvlink < compute / 2
    assert nic > 2 * compute


@pytest.mark.parametrize("t", [2, 4, 8, 16])
@pytest.mark.parametrize("b", [1, 2, 8])
def test_ratio_improves_with_width_not_with_batch(t, b):
    """Compute grows as h^2, traffic as h; both grow as b x s."""
    small = tp_layer_seconds(2048, b, 4096, t, F, 450)
    wide = tp_layer_seconds(2048, b, 8192, t, F, 450)
    assert wide[1] / wide[0] == pytest.approx(small[1] / small[0] / 2)
    one = tp_layer_seconds(2048, 1, 4096, t, F, 450)
    assert small[1] / small[0] == pytest.approx(one[1] / one[0])


# --- for any valid input ---------------------------------------------------


@PROFILE
@given(
    small_count,
    small_count,
    st.sampled_from(SCHEDULES),
    st.integers(min_value=1, max_value=16),
)
def test_bubble_is_a_fraction_that_falls_with_microbatches(p, m, sched, v):
    v = v if sched == "interleaved" else 1
    step = p if sched == "interleaved" else 1  # groups of p micro-batches
    now = bubble_fraction(p, m * step, sched, v)
    more = bubble_fraction(p, (m + 1) * step, sched, v)
    assert 0 <= now < 1
    if p == 1:
        assert now == more == 0
    else:
        assert 0 < more < now


@PROFILE
@given(
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=4),
)
def test_any_interleaved_schedule_idles_as_the_formula_says(p, k, v):
    slots = pipeline_schedule(p, k * p, "interleaved", chunks=v)
    expected = bubble_fraction(p, k * p, "interleaved", v)
    assert idle_fraction(slots) == pytest.approx(expected, rel=1e-12)


@PROFILE
@given(small_count, small_count, st.integers(min_value=1, max_value=16))
def test_interleaving_never_idles_longer(p, k, v):
    m = k * p  # the interleaved schedule runs groups of p micro-batches
    gpipe = bubble_fraction(p, m)
    inter = bubble_fraction(p, m, "interleaved", v)
    assert inter <= gpipe
    assert bubble_fraction(p, m, "1f1b") == gpipe
    if p > 1 and v > 1:
        assert inter < gpipe


@PROFILE
@given(small_count, small_count, st.integers(min_value=1, max_value=16))
def test_megatron_ratio_converts_the_fraction(p, k, v):
    m = k * p
    fraction = bubble_fraction(p, m, "interleaved", v)
    ratio = megatron_ratio(fraction)
    assert ratio == pytest.approx((p - 1) / (v * m), rel=REL, abs=1e-15)
    # ... and back: ratio / (1 + ratio) is the fraction again.
    assert ratio / (1 + ratio) == pytest.approx(fraction, rel=REL, abs=1e-15)


# --- bad input -------------------------------------------------------------

SCHEDULE_BAD = [
    ("GPipe", ValueError),
    ("1F1B", ValueError),
    ("zero-bubble", ValueError),
    ("", ValueError),
    (None, TypeError),
    (1, TypeError),
]
SCHEDULE = inputs.Kind(SCHEDULE_BAD, allowed=SCHEDULES)
SLOT_KIND = inputs.Kind(SCHEDULE_BAD, allowed=SLOT_SCHEDULES)
# a fraction in [0, 1): the bubble fraction
FRACTION = inputs.Kind(
    [
        (-0.1, ValueError),
        (1, ValueError),
        (1.5, ValueError),
        *inputs.NOT_FINITE,
        *inputs.NOT_A_NUMBER,
    ]
)
FOUR_STAGES = pipeline_schedule(4, 8)
BAD_INPUT = [
    row(
        bubble_fraction,
        {"stages": 4, "microbatches": 8, "schedule": "interleaved"},
        schedule=SCHEDULE,
    ),
    row(
        pipeline_schedule,
        {"stages": 4, "microbatches": 8, "schedule": "1f1b"},
        schedule=SLOT_KIND,
        backward=inputs.COUNT,
    ),
    row(idle_fraction, {"slots": FOUR_STAGES}),
    row(
        peak_in_flight,
        {"slots": FOUR_STAGES, "stage": 0},
        stage=STAGE_OF_4,
    ),
    row(
        tp_bytes_per_layer,
        {"seq_len": 4096, "micro_batch": 1, "hidden": 4096, "tp": 8},
        recompute=inputs.choice(("none", "full")),
    ),
    row(
        tp_layer_seconds,
        {
            "seq_len": 4096,
            "micro_batch": 1,
            "hidden": 4096,
            "tp": 8,
            "tflops_per_gpu": F,
            "link_GBps": 450,
        },
        recompute=inputs.choice(("none", "full")),
    ),
    row(megatron_ratio, {"fraction": 0.5}, fraction=FRACTION),
    row(interleaved_rounds, {"stages": 8, "microbatches": 12}),
]


# The rows of snippets/pipeline/zero_bubble*.py are test_zero_bubble.py's
TestBadInput = inputs.bad_input_tests(
    BAD_INPUT, "pipeline", but=("zero_bubble", "zero_bubble_ladder")
)


@PROFILE
@given(st.integers(max_value=0))
def test_any_count_below_one_is_refused(bad):
    with pytest.raises(ValueError, match="stages"):
        bubble_fraction(bad, 4)
    with pytest.raises(ValueError, match="microbatches"):
        bubble_fraction(4, bad)
