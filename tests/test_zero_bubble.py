"""snippets/pipeline/zero_bubble.py: 1F1B, ZB-H1, ZB-H2 and ZBV pass by
pass, against torch 2.13's own schedule orders, the Zero Bubble paper
(Qi et al. 2023) and DeepSeek-V3's table of bubbles."""

from itertools import product
from types import SimpleNamespace

import pytest
from torch.distributed.pipelining.schedules import (
    ScheduleInterleavedZeroBubble,
    ScheduleZBVZeroBubble,
)

from snippets.pipeline.schedule import idle_fraction, pipeline_schedule
from snippets.pipeline.zero_bubble import (
    PUBLISHED,
    SCHEDULES,
    _orders,
    p2p_per_device,
    peak_held,
    published_bubble,
    steady_idle_fraction,
    zero_bubble_schedule,
)
from snippets.pipeline.zero_bubble_ladder import pick_schedule
from tests import lab_inputs as inputs
from tests.lab_rows import STAGE_OF_4, row

SHAPES = [(2, 2), (2, 5), (3, 9), (4, 4), (4, 8), (4, 12), (8, 16), (8, 24)]
TIMES = [(1, 1, 1), (2, 2, 1), (1, 2, 1), (2, 1, 1), (3, 2, 2), (2, 3, 2)]
TORCH_NAMES = {"FORWARD": "F", "BACKWARD_INPUT": "B", "BACKWARD_WEIGHT": "W"}


def torch_order(schedule_class, fake, rank, chunk_of):
    ops = schedule_class._calculate_single_rank_operations(fake, rank)
    return [
        (TORCH_NAMES[a.computation_type.name], a.microbatch_index, chunk_of(a))
        for a in ops
        if a is not None
    ]


@pytest.mark.parametrize(("p", "m"), SHAPES)
def test_zb_h1_is_torchs_zero_bubble_schedule_with_one_stage_per_rank(p, m):
    """ScheduleInterleavedZeroBubble with one stage per rank is ZB1P,
    the paper's ZB-H1: 1F1B's warm-up, then each W delayed by the
    rank's number of B passes."""
    rounds = max(1, m // p)
    fake = SimpleNamespace(
        n_local_stages=1,
        pp_group_size=p,
        _n_microbatches=m,
        microbatches_per_round=m // rounds,
    )
    mine = _orders(p, m, "zb-h1")
    for rank in range(p):
        theirs = torch_order(
            ScheduleInterleavedZeroBubble, fake, rank, lambda a: 0
        )
        assert theirs == mine[rank], (p, m, rank)


@pytest.mark.parametrize(("p", "m"), [*SHAPES, (4, 3), (4, 7), (3, 2)])
def test_zbv_is_torchs_schedule(p, m):
    fake = SimpleNamespace(
        pp_group_size=p, _n_microbatches=m, num_stages=2 * p
    )
    mine = _orders(p, m, "zbv")
    for rank in range(p):
        theirs = torch_order(
            ScheduleZBVZeroBubble,
            fake,
            rank,
            lambda a, rank=rank: 0 if a.stage_index == rank else 1,
        )
        assert theirs == mine[rank], (p, m, rank)


@pytest.mark.parametrize(("f", "b", "w"), TIMES)
@pytest.mark.parametrize(("p", "m"), SHAPES)
def test_1f1b_is_the_schedule_labs_1f1b(p, m, f, b, w):
    """With B and W run as one backward pass the zero-bubble lab lays
    out exactly the slots of the pipeline page's 1F1B."""
    ours = zero_bubble_schedule(p, m, "1f1b", f, b, w)
    assert ours == pipeline_schedule(p, m, "1f1b", f, b + w)


@pytest.mark.parametrize(("f", "b", "w"), TIMES)
@pytest.mark.parametrize(("p", "m"), SHAPES)
def test_idle_time_is_deepseeks_table(p, m, f, b, w):
    """DeepSeek-V3 Table 2 (B = the whole backward pass): 1F1B idles
    (p-1)(F+B) per device, ZB1P (p-1)(F+B-2W); the latter holds while a
    W is no longer than an F, as in every row here."""
    work = m * (f + b + w)
    for schedule, published in (("1f1b", "1f1b"), ("zb-h1", "zb1p")):
        slots = zero_bubble_schedule(p, m, schedule, f, b, w)
        idle = max(s.end for s in slots) - work
        assert idle == published_bubble(p, published, f, b + w, w)


def test_a_w_longer_than_an_f_leaves_more_bubble_than_the_formula():
    """The formula assumes the delayed W passes fit the gaps; when a W
    outlasts an F they do not, and the simulation idles longer."""
    p, m, f, b, w = 4, 8, 1, 1, 2
    slots = zero_bubble_schedule(p, m, "zb-h1", f, b, w)
    idle = max(s.end for s in slots) - m * (f + b + w)
    assert idle > published_bubble(p, "zb1p", f, b + w, w)


@pytest.mark.parametrize(("p", "m"), SHAPES)
def test_zb_h1_has_a_third_of_1f1bs_bubble(p, m):
    """Qi et al. sec. 2.1: at equal F, B and W times, ZB-H1's bubble is
    a third of 1F1B's, at 1F1B's peak memory: p micro-batches held."""
    one = zero_bubble_schedule(p, m, "1f1b")
    zb = zero_bubble_schedule(p, m, "zb-h1")
    work = 3 * m
    assert 3 * (max(s.end for s in zb) - work) == max(s.end for s in one) - (
        work
    )
    assert max(peak_held(zb, s) for s in range(p)) == min(p, m)
    assert all(peak_held(zb, s) == min(p, m) for s in range(p))
    assert max(peak_held(one, s) for s in range(p)) == min(p, m)


@pytest.mark.parametrize(("p", "m"), [s for s in SHAPES if s[1] >= 2 * s[0]])
def test_zb_h2_and_zbv_reach_zero_bubble_once_post_validated(p, m):
    """ZB-H2 holds up to 2p - 1 micro-batches (Qi et al. sec. 2.2) and
    ZBV 1F1B's p (sec. 6): both leave no idle time inside a stage's
    span, so nothing when each stage starts its next step at once."""
    h2 = zero_bubble_schedule(p, m, "zb-h2")
    zbv = zero_bubble_schedule(p, m, "zbv")
    assert steady_idle_fraction(h2) == 0
    assert steady_idle_fraction(zbv) == 0
    assert max(peak_held(h2, s) for s in range(p)) == 2 * p - 1
    assert max(peak_held(zbv, s) for s in range(p)) == p
    # in one isolated step the slanted edges still cost something
    assert idle_fraction(h2) > 0 and idle_fraction(zbv) > 0


def test_post_validation_changes_nothing_for_1f1b():
    slots = zero_bubble_schedule(4, 8, "1f1b")
    assert steady_idle_fraction(slots) == idle_fraction(slots)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("p", "m"), SHAPES)
def test_every_pass_runs_once_and_waits_for_what_it_needs(schedule, p, m):
    slots = zero_bubble_schedule(p, m, schedule, 2, 3, 1)
    chunks = 2 if schedule == "zbv" else 1
    last = chunks * p - 1

    def virtual(s):
        return s.stage if s.chunk == 0 else last - s.stage

    end = {(virtual(s), s.kind, s.micro): s.end for s in slots}
    start = {(virtual(s), s.kind, s.micro): s.start for s in slots}
    kinds = "FB" if schedule == "1f1b" else "FBW"
    assert len(slots) == len(end) == len(kinds) * m * chunks * p
    for d in range(p):
        mine = sorted((s.start, s.end) for s in slots if s.stage == d)
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:], strict=False))
    for v, i in product(range(last + 1), range(m)):
        if v > 0:
            assert start[v, "F", i] >= end[v - 1, "F", i]
        after = (v + 1, "B", i) if v < last else (v, "F", i)
        assert start[v, "B", i] >= end[after]
        if "W" in kinds:
            assert start[v, "W", i] >= end[v, "B", i]


@pytest.mark.parametrize(("p", "m"), SHAPES)
def test_messages_per_device(p, m):
    """Each boundary between devices carries an activation forward and
    a gradient back per micro-batch. Interleaving v chunks multiplies
    the boundaries to v p - 1 (Megatron-LM 2021 sec. 2.2: v times the
    communication); ZBV's are twice 1F1B's (the Zero Bubble authors'
    comparison table), less one local turn."""
    base = p2p_per_device(p, m)
    assert base * p == 2 * m * (p - 1)
    for v in (1, 2, 4):
        inter = p2p_per_device(p, m, "interleaved", v)
        assert inter * p == 2 * m * (v * p - 1)
    assert p2p_per_device(p, m, "zbv") == 2 * base


def test_dualpipe_row():
    """DeepSeek-V3 Table 2's DualPipe row on 8 stages with F = 1,
    B = 2, W = 1 and a fully overlapped F&B of 3: (8/2 - 1)(3 + 2 - 3),
    against 1F1B's 7 x 3 and ZB1P's 7 x 1."""
    assert published_bubble(8, "dualpipe", 1, 2, 1, overlapped=3) == 6
    assert published_bubble(8, "1f1b", 1, 2, 1) == 21
    assert published_bubble(8, "zb1p", 1, 2, 1) == 7


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"stages": 3, "schedule": "dualpipe", "overlapped": 3}, "even"),
        ({"stages": 8, "schedule": "dualpipe"}, "overlapped must be given"),
        ({"stages": 8, "schedule": "zb1p", "weight": 2}, "weight must be <"),
    ],
)
def test_published_bubble_refuses(kwargs, words):
    args = {"forward": 1, "backward": 2, "weight": 1, **kwargs}
    with pytest.raises(ValueError, match=words):
        published_bubble(**args)


def test_chunks_only_for_interleaving():
    with pytest.raises(ValueError, match="chunks must be 1"):
        p2p_per_device(4, 8, "zbv", 2)


def test_the_ladders_choice():
    """With 1F1B's memory the V wins; without ZB's split backward in the
    budget (a budget below 1F1B's peak) nothing fits."""
    best, fits = pick_schedule(8, 32, 8, post_validated=False)
    assert best == "zbv" and "zb-h2" not in fits
    assert fits["zb-h1"][0] < fits["1f1b"][0]
    best, fits = pick_schedule(8, 32, 15, post_validated=True)
    assert fits["zb-h2"] == (0, 15) and best == "zbv"
    with pytest.raises(ValueError, match="max_held must be at least"):
        pick_schedule(8, 32, 7, post_validated=True)


# --- bad input -------------------------------------------------------------

SCHEDULE = inputs.choice(SCHEDULES)
FOUR = zero_bubble_schedule(4, 8, "zbv")
BAD_INPUT = [
    row(
        zero_bubble_schedule,
        {"stages": 4, "microbatches": 8, "schedule": "zb-h1"},
        schedule=SCHEDULE,
        backward_input=inputs.COUNT,
        backward_weight=inputs.COUNT,
    ),
    row(steady_idle_fraction, {"slots": FOUR}),
    row(peak_held, {"slots": FOUR, "stage": 0}, stage=STAGE_OF_4),
    row(
        published_bubble,
        {
            "stages": 8,
            "schedule": "dualpipe",
            "forward": 1,
            "backward": 2,
            "weight": 1,
            "overlapped": 3,
        },
        schedule=inputs.choice(PUBLISHED),
        forward=inputs.POSITIVE,
        backward=inputs.POSITIVE,
        weight=inputs.POSITIVE,
        # None means "not given" (every schedule but DualPipe)
        overlapped=inputs.Kind(
            [c for c in inputs.POSITIVE.bad if c[0] is not None]
        ),
    ),
    row(
        p2p_per_device,
        {"stages": 4, "microbatches": 8, "schedule": "interleaved"},
        schedule=inputs.choice(("1f1b", "interleaved", "zbv")),
    ),
    row(
        pick_schedule,
        {
            "stages": 4,
            "microbatches": 8,
            "max_held": 8,
            "post_validated": True,
        },
        max_held=inputs.Kind([*inputs.COUNT.bad, (3, ValueError)]),
        post_validated=inputs.FLAG,
    ),
]

TestBadInput = inputs.bad_input_tests(
    BAD_INPUT, "pipeline", only=("zero_bubble", "zero_bubble_ladder")
)
