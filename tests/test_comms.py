"""snippets/comms/: all-reduce time against compute time, and where a
step turns comms-bound; ring bandwidth across nodes, the data-parallel
crossover in tokens per GPU, and DDP's overlap with the backward."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from snippets.comms.alphabeta import (
    COLLECTIVES,
    busbw_GBps,
    fit,
    latency_bound_below,
    ring_seconds,
    ring_terms,
)
from snippets.comms.cost import LINKS_GBps, comms_cost
from snippets.comms.law import crossover_tokens_per_gpu
from snippets.comms.links import (
    NETWORK_HOP_US,
    NVLINK_HOP_US,
    REACHED_GBps,
    ring_bandwidth_GBps,
    ring_latency_s,
)
from snippets.comms.overlap import MiB, ddp_step_time
from snippets.ddp.allreduce import allreduce_bytes
from tests import lab_inputs as inputs
from tests.lab_inputs import PROFILE, REL, many
from tests.lab_rows import row

B7 = 7_000_000_000
F = 989 * 0.40  # TFLOP/s: an H100 at 40% of its dense bf16 peak


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


# --- ring bandwidth --------------------------------------------------------


def test_one_node_runs_at_nvlink_speed():
    for n in (2, 4, 8):
        assert ring_bandwidth_GBps(n, 8, 450, 8, 50) == 450
        assert ring_bandwidth_GBps(n, 8, 450, 1, 12.5) == 450


def test_dgx_h100_rings_use_every_nic():
    """One ring per NIC: eight 400 Gb/s NICs give 8 x 50 = 400 GB/s,
    below NVLink's 450; at the 46-48 GB/s measured per NDR NIC
    (nccl-tests issue #290) that is 368-384 GB/s, and 4 such nodes
    measured 365.84 GB/s (nccl-tests issue #309)."""
    assert ring_bandwidth_GBps(64, 8, 450, 8, 50) == 400
    assert ring_bandwidth_GBps(64, 8, 450, 8, 48) == 384
    assert ring_bandwidth_GBps(32, 8, 450, 8, 46) == 368


def test_one_nic_per_node_is_that_nic():
    """Eight GPUs behind one 200 Gb/s HDR NIC: about 24 GB/s of bus
    bandwidth across nodes (NVIDIA/nccl issue #412), not an eighth."""
    assert ring_bandwidth_GBps(96, 8, 300, 1, 24) == 24
    assert ring_bandwidth_GBps(64, 8, 450, 1, 50) == 50


def test_nvlink_caps_many_nics():
    assert ring_bandwidth_GBps(64, 8, 300, 8, 50) == 300


@pytest.mark.parametrize("n", [1, 2, 8, 9, 16, 64, 1024])
@pytest.mark.parametrize("nics", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("nic", [1.25, 12.5, 25, 50, 100])
def test_ring_never_beats_nvlink_and_grows_with_nics(n, nics, nic):
    bw = ring_bandwidth_GBps(n, 8, 450, nics, nic)
    assert bw <= 450
    assert ring_bandwidth_GBps(n, 8, 450, nics + 1, nic) >= bw
    if n > 8:
        assert bw <= nics * nic


def test_seven_b_all_reduce_on_64_dgx_h100s():
    sent = allreduce_bytes(B7, 2, 64)["sent_per_rank_GB"]
    assert f"{sent / ring_bandwidth_GBps(64, 8, 450, 8, 50):.3f}" == "0.069"
    assert f"{sent / ring_bandwidth_GBps(64, 8, 450, 1, 50):.3f}" == "0.551"


# --- the crossover ---------------------------------------------------------


def test_crossover_of_ndr_is_about_5200_tokens():
    tokens = crossover_tokens_per_gpu(F, 50, 64)
    assert tokens == pytest.approx(2 / 6 * 2 * 63 / 64 * F * 1e12 / 50e9)
    assert f"{tokens:,.0f}" == "5,192"


@pytest.mark.parametrize("params", [10**9, B7, 70 * 10**9, 10**12])
@pytest.mark.parametrize("n", [2, 8, 64, 1024])
@pytest.mark.parametrize("link", list(LINKS_GBps))
def test_crossover_is_where_comms_cost_flips(params, n, link):
    """At the crossover compute equals the all-reduce for any P."""
    bw = LINKS_GBps[link]
    tokens = crossover_tokens_per_gpu(F, bw, n)
    r = comms_cost(params, n, F, bw, tokens_per_gpu=1)
    assert r["compute_s"] * tokens == pytest.approx(r["comms_s"])
    above = comms_cost(params, n, F, bw, tokens_per_gpu=int(tokens) + 1)
    assert above["verdict"] == "compute-bound"
    if tokens >= 2:
        below = comms_cost(params, n, F, bw, tokens_per_gpu=int(tokens) - 1)
        assert below["verdict"] == "comms-bound"


def test_fp32_gradients_double_the_crossover():
    bf16 = crossover_tokens_per_gpu(F, 50, 64)
    assert crossover_tokens_per_gpu(F, 50, 64, bytes_per_grad=4) == (
        pytest.approx(2 * bf16)
    )


def test_one_rank_never_waits():
    assert crossover_tokens_per_gpu(F, 50, 1) == 0


# --- overlap ---------------------------------------------------------------


def test_ndr_hides_all_but_the_last_bucket():
    r = ddp_step_time(B7, 64, F, 50)
    bucket = 25 * MiB / (2 * B7)
    assert r["last_bucket_s"] == pytest.approx(r["comms_s"] * bucket)
    assert r["exposed_s"] == r["last_bucket_s"]
    assert r["step_s"] == pytest.approx(r["compute_s"] + r["last_bucket_s"])


def test_slow_link_exposes_what_outlasts_the_backward():
    r = ddp_step_time(B7, 64, F, 25)
    assert r["backward_s"] == pytest.approx(r["compute_s"] * 2 / 3)
    assert r["comms_s"] > r["backward_s"]
    assert r["exposed_s"] == pytest.approx(r["comms_s"] - r["backward_s"])


@pytest.mark.parametrize("link", list(LINKS_GBps))
@pytest.mark.parametrize("n", [1, 2, 8, 64])
@pytest.mark.parametrize("bucket", [1, 25, 10**6])
def test_step_lies_between_perfect_and_no_overlap(link, n, bucket):
    r = ddp_step_time(B7, n, F, LINKS_GBps[link], bucket_MB=bucket)
    assert max(r["compute_s"], r["comms_s"]) <= r["step_s"] * (1 + 1e-12)
    assert r["step_s"] <= (r["compute_s"] + r["comms_s"]) * (1 + 1e-12)
    assert r["exposed_s"] >= r["last_bucket_s"]


def test_one_bucket_hides_nothing():
    r = ddp_step_time(B7, 64, F, 50, bucket_MB=10**6)
    assert r["exposed_s"] == r["comms_s"]


def test_backward_share_above_one_is_refused():
    with pytest.raises(ValueError, match=r"\bbackward_share\b"):
        ddp_step_time(B7, 64, F, 50, backward_share=1.5)


# --- for any valid input ---------------------------------------------------

# 121 one-way bandwidths from 1e6 down to 1e-6 GB/s, ten per decade.
SWEEP = [10 ** (6 - i / 10) for i in range(121)]
# parameters, ranks and TFLOP/s per GPU of a job
JOB = (st.integers(10**6, 10**12), many, st.floats(1, 2000))
ACCUM = st.integers(min_value=1, max_value=64)


@PROFILE
@given(*JOB, st.integers(min_value=1, max_value=1_000_000), ACCUM)
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
@given(*JOB, st.floats(min_value=0.01, max_value=1000), ACCUM)
def test_accumulation_scales_compute_only(psi, n, tflops, bw, accum):
    one = comms_cost(psi, n, tflops, bw)
    acc = comms_cost(psi, n, tflops, bw, accum_steps=accum)
    assert acc["comms_s"] == one["comms_s"]
    assert acc["compute_s"] == pytest.approx(accum * one["compute_s"], rel=REL)


BAD_INPUT = [
    row(
        comms_cost,
        {
            "params": B7,
            "world_size": 64,
            "tflops_per_gpu": 300,
            "interconnect_GBps": 12.5,
        },
    ),
    row(
        ring_bandwidth_GBps,
        {
            "world_size": 64,
            "gpus_per_node": 8,
            "nvlink_GBps": 450,
            "nics_per_node": 8,
            "nic_GBps": 50,
        },
        # a divisor of gpus_per_node, at most world_size; None: flat
        per_node=inputs.Kind(
            [
                *inputs.OPTIONAL_COUNT.bad,
                (3, ValueError),
                (16, ValueError),
            ]
        ),
    ),
    row(
        ring_latency_s,
        {"kind": "all_gather", "world_size": 1024, "per_node": 8},
        kind=inputs.choice(COLLECTIVES),
        world_size=inputs.Kind([(1, ValueError), *inputs.COUNT.bad]),
        per_node=inputs.COUNT,
    ),
    row(
        crossover_tokens_per_gpu,
        {"tflops_per_gpu": F, "interconnect_GBps": 50, "world_size": 64},
    ),
    row(
        ddp_step_time,
        {
            "params": B7,
            "world_size": 64,
            "tflops_per_gpu": F,
            "interconnect_GBps": 50,
        },
        bucket_MB=inputs.POSITIVE,
        backward_share=inputs.POSITIVE,
        embedding_params=inputs.NON_NEGATIVE,
    ),
]


# --- the alpha-beta model of a ring (alphabeta.py) -------------------------


@pytest.mark.parametrize("kind", COLLECTIVES)
@pytest.mark.parametrize("n", [2, 4, 8, 64])
def test_ring_terms_are_nccl_tests_bus_factors(kind, n):
    steps, share = ring_terms(kind, n)
    factor = 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n
    assert share == pytest.approx(factor, rel=1e-15)
    assert steps == (2 if kind == "all_reduce" else 1) * (n - 1)


def test_busbw_of_a_bandwidth_bound_ring_is_one_over_beta():
    """At sizes far above latency-bound, busbw -> 1 / beta whatever the
    collective and the number of ranks: why nccl-tests reports it."""
    for kind in COLLECTIVES:
        for n in (2, 8, 512):
            t = ring_seconds(kind, n, 2**40, alpha=1e-5, beta=1 / 50e9)
            assert busbw_GBps(kind, n, 2**40, t) == pytest.approx(50, rel=1e-3)


@PROFILE
@given(
    st.floats(min_value=1e-7, max_value=1e-2),
    st.floats(min_value=1e-12, max_value=1e-8),
    st.integers(min_value=2, max_value=64),
)
def test_fit_recovers_alpha_and_beta(alpha, beta, n):
    points = [
        (kind, n, size, ring_seconds(kind, n, size, alpha, beta))
        for kind in COLLECTIVES
        for size in (2**10, 2**16, 2**22, 2**28)
    ]
    a, b = fit(points)
    assert (a, b) == (
        pytest.approx(alpha, rel=1e-6),
        pytest.approx(beta, rel=1e-6),
    )


def test_latency_bound_below_is_where_both_terms_meet():
    alpha, beta, n = 2e-5, 1 / 100e9, 8
    size = latency_bound_below(n, alpha, beta)
    steps, share = ring_terms("all_reduce", n)
    assert steps * alpha == pytest.approx(share * size * beta, rel=1e-12)


@pytest.mark.parametrize(
    "points",
    [[], [("all_reduce", 2, 1024, 1e-3)], [("all_reduce", 2, 1024, 1e-3)] * 3],
)
def test_fit_needs_several_sizes(points):
    with pytest.raises(ValueError, match="points must"):
        fit(points)


POINTS = inputs.Kind(
    [
        ([], ValueError),
        ("points", ValueError),
        (None, ValueError),
        ([("all_reduce", 2, 1024)], ValueError),
        ([("all_reduce", 2, 1024, 1e-3), ("x", 2, 2048, 2e-3)], ValueError),
        (
            [("all_reduce", 2, 1024, 1e-3), ("all_reduce", 1, 2048, 2e-3)],
            ValueError,
        ),
    ]
)
BAD_INPUT += [
    row(
        ring_terms,
        {"kind": "all_reduce", "ranks": 4},
        kind=inputs.choice(COLLECTIVES),
    ),
    row(
        ring_seconds,
        {
            "kind": "all_gather",
            "ranks": 4,
            "size": 1024,
            "alpha": 0,
            "beta": 0,
        },
        kind=inputs.choice(COLLECTIVES),
        alpha=inputs.NON_NEGATIVE,
        beta=inputs.NON_NEGATIVE,
    ),
    row(
        busbw_GBps,
        {"kind": "reduce_scatter", "ranks": 4, "size": 1024, "seconds": 1e-3},
        kind=inputs.choice(COLLECTIVES),
        seconds=inputs.POSITIVE,
    ),
    row(
        fit,
        {
            "points": [
                ("all_reduce", 2, 1024, 1e-3),
                ("all_reduce", 2, 2**20, 1e-2),
            ]
        },
        points=POINTS,
    ),
    row(
        latency_bound_below,
        {"ranks": 4, "alpha": 1e-5, "beta": 1e-9},
        alpha=inputs.POSITIVE,
        beta=inputs.POSITIVE,
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "comms")


def test_the_embedding_gradient_is_the_last_bucket():
    """DDP does not split a tensor across buckets: with a 128K-token
    embedding of width 4096 (1.05 GB in bf16) the exposed tail is that
    gradient's share of the all-reduce, not 25 MiB's."""
    emb = 128_256 * 4096
    plain = ddp_step_time(B7, 64, F, 368)
    tail = ddp_step_time(B7, 64, F, 368, embedding_params=emb)
    assert plain["exposed_s"] == pytest.approx(
        plain["comms_s"] * 25 * MiB / (2 * B7)
    )
    assert tail["exposed_s"] == pytest.approx(tail["comms_s"] * emb / B7)
    small = ddp_step_time(B7, 64, F, 368, embedding_params=1000)
    assert small["exposed_s"] == plain["exposed_s"]


def test_groups_with_one_gpu_per_node_share_the_nics():
    """TP 8 fills each node: 8 data-parallel rings, one GPU per node
    each, cross the network at once and split its 8 NICs; a flat ring
    over all 64 has them to itself (what NCCL reaches: 370 and 46)."""
    node = (8, 370, 8, 46)
    assert ring_bandwidth_GBps(64, *node) == 368
    assert ring_bandwidth_GBps(8, *node, per_node=1) == 46
    assert ring_bandwidth_GBps(16, *node, per_node=2) == 92
    assert ring_bandwidth_GBps(64, *node, per_node=8) == 368
    # one NIC per node: each of 8 one-GPU-per-node rings gets an eighth
    assert ring_bandwidth_GBps(8, 8, 370, 1, 46, per_node=1) == 46 / 8


def test_reached_is_below_the_line_rate():
    """nccl-tests #212, #149, #290, #119: 370 of 450, 230 of 300, 46 of
    50, 24 of 25 and 12 of 12.5 GB/s."""
    line = {"nvlink4": 450, "nvlink3": 300, "ndr": 50, "hdr": 25}
    line["100gbe"] = 12.5
    assert REACHED_GBps == {
        "nvlink4": 370,
        "nvlink3": 230,
        "ndr": 46,
        "hdr": 24,
        "100gbe": 12,
    }
    for link, rate in line.items():
        assert REACHED_GBps[link] < rate


def test_ring_latency_is_ncclS_hops():
    """NCCL's tuning model: per ring step 3.4 us over NVLink, 9.6 us
    between nodes; an all-gather over 1,024 GPUs in 128 nodes takes
    1,023 steps, 127 of them between nodes: 4.27 ms."""
    assert (NVLINK_HOP_US, NETWORK_HOP_US) == (3.4, 9.6)
    t = ring_latency_s("all_gather", 1024, 8)
    assert t == pytest.approx((127 * 9.6 + 896 * 3.4) * 1e-6)
    assert f"{t * 1e3:.2f}" == "4.27"
    assert ring_latency_s("all_reduce", 1024, 8) == pytest.approx(2 * t)
    assert ring_latency_s("reduce_scatter", 8, 8) == pytest.approx(7 * 3.4e-6)


# --- one network model with the planner ---------------------------------


def test_links_are_the_planners_measured_links():
    """The NVLink rings NCCL reaches and the hop latencies are the
    planner's own (snippets/planner/cost.py): one set of numbers."""
    from snippets.planner import cost

    for gpu, line, link in (
        ("h100-80gb", 450, "nvlink4"),
        ("a100-80gb", 300, "nvlink3"),
    ):
        reached = cost.NVLINK_SHARE[gpu] * line
        assert reached == pytest.approx(REACHED_GBps[link])
    assert (cost.NVLINK_HOP_US, cost.NETWORK_HOP_US) == (
        NVLINK_HOP_US,
        NETWORK_HOP_US,
    )
    for kind, planner_kind in (
        ("all_gather", "all-gather"),
        ("all_reduce", "all-reduce"),
    ):
        # 1,024 GPUs in 128 nodes, an empty buffer: latency alone
        planner = cost.ring_s(planner_kind, 0, 1024, (370, 128), cost.FIT)
        assert ring_latency_s(kind, 1024, 8) == pytest.approx(planner)


def test_a_group_with_one_gpu_per_node_gets_what_the_planner_gives():
    """Data-parallel groups with one GPU per node (TP 8 fills it): the
    lab's share of the node's NICs at the 46 GB/s NCCL reaches per NDR
    card, the planner's at the same measured 46 of 50 GB/s."""
    from snippets.planner.cost import FIT, Links
    from snippets.planner.model import check_cluster, cluster

    links = Links.of(check_cluster(cluster("h100-80gb", 16)), FIT)
    planner, nodes = links.group(inner=8, size=16)
    lab = ring_bandwidth_GBps(16, 8, 370, 8, 46, per_node=1)
    assert nodes == 16
    assert lab == pytest.approx(planner, rel=0.01)


def test_a_flat_ring_gets_the_nodes_nics_in_the_lab_and_the_planner():
    """A flat ring over every GPU of 8 nodes: the lab pools each node's
    NICs (368 GB/s, as nccl-tests measures on 4 nodes), and so does the
    planner for PyTorch's rings; for DeepSpeed's ZeRO-3, which sustained
    no more in Megatron-LM's Table 2 (the ZeRO page), it gives each GPU
    its own share (46)."""
    from snippets.planner.cost import FIT, Links
    from snippets.planner.model import check_cluster, cluster

    links = Links.of(check_cluster(cluster("h100-80gb", 8)), FIT)
    pooled, nodes = links.group(inner=1, size=64, pooled=True)
    own, _ = links.group(inner=1, size=64)
    lab = ring_bandwidth_GBps(64, 8, 370, 8, 46)
    assert lab == 368 and nodes == 8
    assert pooled == pytest.approx(lab)
    assert own == pytest.approx(46)
