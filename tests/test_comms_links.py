"""Tests of snippets/comms/links.py, law.py and overlap.py: ring
bandwidth across nodes, the data-parallel crossover, DDP's overlap."""

import pytest

from snippets.comms.cost import LINKS_GBps, comms_cost
from snippets.comms.law import crossover_tokens_per_gpu
from snippets.comms.links import ring_bandwidth_GBps
from snippets.comms.overlap import MiB, ddp_step_time
from snippets.ddp.allreduce import allreduce_bytes
from tests.refused import cases, check_refused, covers_every_argument

B7 = 7_000_000_000
F = 989 * 0.40  # TFLOP/s: an H100 at 40% of its dense bf16 peak

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


# --- bad inputs ------------------------------------------------------------

SPECS = {
    "ring_bandwidth_GBps": (
        ring_bandwidth_GBps,
        {
            "world_size": 64,
            "gpus_per_node": 8,
            "nvlink_GBps": 450,
            "nics_per_node": 8,
            "nic_GBps": 50,
        },
        {
            "world_size": "count",
            "gpus_per_node": "count",
            "nvlink_GBps": "positive",
            "nics_per_node": "count",
            "nic_GBps": "positive",
        },
        {},
    ),
    "crossover_tokens_per_gpu": (
        crossover_tokens_per_gpu,
        {"tflops_per_gpu": F, "interconnect_GBps": 50, "world_size": 64},
        {
            "tflops_per_gpu": "positive",
            "interconnect_GBps": "positive",
            "world_size": "count",
            "bytes_per_grad": "positive",
            "flops_per_token_per_param": "positive",
        },
        {},
    ),
    "ddp_step_time": (
        ddp_step_time,
        {
            "params": B7,
            "world_size": 64,
            "tflops_per_gpu": F,
            "interconnect_GBps": 50,
        },
        {
            "params": "positive",
            "world_size": "count",
            "tflops_per_gpu": "positive",
            "interconnect_GBps": "positive",
            "tokens_per_gpu": "count",
            "bytes_per_grad": "positive",
            "bucket_MB": "positive",
            "backward_share": "positive",
        },
        {},
    ),
}


@pytest.mark.parametrize(("label", "argument", "value", "error"), cases(SPECS))
def test_bad_input_is_refused_by_name(label, argument, value, error):
    check_refused(SPECS, label, argument, value, error)


@pytest.mark.parametrize("label", list(SPECS))
def test_every_argument_has_bad_inputs(label):
    assert covers_every_argument(SPECS, label) == set()
