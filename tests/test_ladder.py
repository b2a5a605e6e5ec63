"""snippets/ladder/planner.py: exercise 6's planner, its memory rung
from plan and its risk from the ring bandwidth of the nodes."""

import inspect

import pytest

from snippets.comms.links import ring_bandwidth_GBps, ring_latency_s
from snippets.ladder.comms_wall import first_comms_bound
from snippets.ladder.planner import FLOPS, NVLINK_GBps, plan_at_scale
from snippets.ladder.split import which_split
from snippets.strategy.plan import plan, shape_from_params
from tests import lab_inputs as inputs
from tests.lab_rows import row

BATCH = 2**22
F = 989 * 0.40


def ratio_by_hand(params, n, ring_GBps, flops, traffic=1.0, latency=0.0):
    compute = flops * params * (BATCH // n) / (F * 1e12)
    comms = 2 * (n - 1) / n * 2 * params / (ring_GBps * 1e9)
    return (traffic * comms + latency) / compute


def zero3_latency(billions, n, micro):
    """3 collectives per layer and micro-batch, each a ring's latency."""
    layers = shape_from_params(billions * 10**9)[0]
    return 3 * layers * micro * ring_latency_s("all_gather", n, 8)


@pytest.mark.parametrize(
    ("nics", "ring", "own", "risk"),
    [(8, 368, 46, "low to high"), (1, 46, 5.75, "high")],
)
def test_400b_on_1024_gpus_depends_on_the_nics(nics, ring, own, risk):
    """ZeRO-3 with full recomputation; 4096 tokens per GPU. Eight NDR
    NICs per node give a flat ring 368 GB/s (what NCCL reaches), one
    gives 46; each GPU on its own share of them gets 46 or 5.75. The
    ring's latency is paid 3 x 127 times."""
    p = plan_at_scale(400 * 10**9, 1024, BATCH, nics)
    assert p["rung"] == "zero3"
    assert p["recompute"] == "full"
    assert p["interconnect_GBps"] == ring
    assert p["own_nic_GBps"] == own
    latency = zero3_latency(400, 1024, 1)
    for key, bw in (
        ("comms_over_compute", ring),
        ("comms_over_compute_own_nic", own),
    ):
        expected = ratio_by_hand(400 * 10**9, 1024, bw, 8, 1.5, latency)
        assert p[key] == pytest.approx(expected)
    assert p["risk"] == risk


def test_one_node_runs_on_nvlink_whatever_the_nics():
    for nics in (1, 8):
        p = plan_at_scale(7 * 10**9, 8, BATCH, nics)
        assert p["interconnect_GBps"] == NVLINK_GBps == 370
        assert p["rung"] == "zero1"


def test_bandwidth_is_the_ring_model():
    for nics, nic in ((8, 50), (1, 50), (4, 25), (1, 12.5)):
        p = plan_at_scale(13 * 10**9, 32, BATCH, nics, nic)
        assert p["interconnect_GBps"] == ring_bandwidth_GBps(
            32, 8, NVLINK_GBps, nics, nic
        )


def test_recomputation_only_when_nothing_fits_without_it():
    stored = plan_at_scale(13 * 10**9, 32, BATCH)
    assert stored["recompute"] == "none"
    assert stored["rung"] == plan(13 * 10**9, 32, 80)["strategy"]
    full = plan_at_scale(70 * 10**9, 128, BATCH)
    assert plan(70 * 10**9, 128, 80)["strategy"] == "tensor/pipeline"
    assert full["recompute"] == "full"
    assert (
        full["rung"] == plan(70 * 10**9, 128, 80, recompute="full")["strategy"]
    )
    assert FLOPS == {"none": 6, "full": 8}


@pytest.mark.parametrize(("micro", "medium"), [(1, (0.6,)), (4, ()), (64, ())])
def test_medium_means_the_last_backward_pass_can_hide_the_all_reduce(
    micro, medium
):
    """DDP's all-reduce hides at most behind the backward pass of the
    step's last micro-batch, 4 of its 6 FLOPs: with one micro-batch a
    ratio between 2/3 and 1 is high, not medium; with more, the window
    shrinks by their number."""
    batch = 16 * 4096 * micro
    base = plan_at_scale(10**9, 16, batch, 1, tflops_per_gpu=1)
    assert base["rung"] == "ddp" and base["recompute"] == "none"
    per_tflop = base["comms_over_compute"]
    for ratio in (0.1, 0.4, 0.6, 0.8):
        p = plan_at_scale(
            10**9, 16, batch, 1, tflops_per_gpu=ratio / per_tflop
        )
        assert p["comms_over_compute"] == pytest.approx(ratio)
        want = (
            "low" if ratio < 0.5 else "medium" if ratio in medium else "high"
        )
        # the flat ring's risk; each GPU on its own NIC share is worse
        assert p["risk"].split(" to ")[0] == want


@pytest.mark.parametrize(
    ("billions", "gpus", "rung", "micro", "traffic"),
    [
        (13, 32, "zero2", 32, (32 + 1) / 2),  # a reduce-scatter each
        (70, 128, "zero3", 8, 3 * 8 / 2),  # three collectives each
        (400, 1024, "zero3", 1, 1.5),  # one micro-batch: the paper's 1.5
    ],
)
def test_sharded_rungs_pay_for_every_micro_batch(
    billions, gpus, rung, micro, traffic
):
    """4096-token micro-batches: the batch gives each GPU `micro` of
    them per step, and ZeRO-2/3 communicate for each one."""
    p = plan_at_scale(billions * 10**9, gpus, BATCH, 1)
    assert p["rung"] == rung
    assert BATCH // gpus // 4096 == micro
    flops = FLOPS[p["recompute"]]
    latency = zero3_latency(billions, gpus, micro) if rung == "zero3" else 0
    expected = ratio_by_hand(
        billions * 10**9, gpus, 46, flops, traffic, latency
    )
    assert p["comms_over_compute"] == pytest.approx(expected)


def test_zero3_overlaps_in_both_passes():
    base = plan_at_scale(70 * 10**9, 128, BATCH, 1, tflops_per_gpu=1)
    per_tflop = base["comms_over_compute"]
    p = plan_at_scale(
        70 * 10**9, 128, BATCH, 1, tflops_per_gpu=0.9 / per_tflop
    )
    assert p["rung"] == "zero3" and p["risk"].startswith("medium")


def test_no_rung_leaves_the_risk_to_the_layout():
    p = plan_at_scale(1000 * 10**9, 64, BATCH)
    assert p["rung"] == "tensor/pipeline"
    assert p["comms_over_compute"] is None
    # 16 bytes over 64 GPUs, and FSDP's two gathered layers and one
    # layer's gradient (h = 128 L)
    hidden = shape_from_params(1000 * 10**9)[1]
    assert p["per_gpu_GB"] == pytest.approx(250 + 6 * 12 * hidden**2 / 1e9)


def test_batch_must_split_into_whole_sequences():
    with pytest.raises(ValueError, match=r"batch_tokens=.*seq_len=4096"):
        plan_at_scale(10**9, 8, 4096 * 8 + 8)
    with pytest.raises(ValueError, match="world_size"):
        plan_at_scale(10**9, 3, BATCH)


def test_the_batch_ceiling_sends_jobs_to_model_parallelism():
    split, _ = which_split("more GPUs than the batch has micro-batches")
    assert split == "tensor or pipeline parallel"
    assert which_split("one layer too big")[0] == "tensor parallel"


def test_the_comms_wall_is_looked_for_below_the_ceiling():
    """64 sequences: with 8 NICs per node no N up to 64 is comms-bound;
    with one NIC per node the wall is at 64."""
    tokens, tflops = 2**18, 989 * 0.40
    assert first_comms_bound(7e9, tokens, tflops, 368, 64) is None
    assert first_comms_bound(7e9, tokens, tflops, 46, 64) == 64


BAD_INPUT = [
    row(
        plan_at_scale,
        {"params": 10**9, "world_size": 64, "batch_tokens": BATCH},
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT)


def test_every_argument_of_the_planner_has_bad_inputs():
    named = set(inspect.signature(plan_at_scale).parameters)
    assert named == set(BAD_INPUT[0][3])
    for kind in BAD_INPUT[0][3].values():
        assert len(kind.bad) >= inputs.FEWEST_BAD_VALUES
