"""Tests of snippets/zero/hsdp.py: ZeRO-3 inside a node, replicas
across nodes."""

import pytest

from snippets.zero.hsdp import hsdp
from snippets.zero.memory import memory_per_gpu
from snippets.zero.traffic import comm_bytes
from tests.refused import cases, check_refused, covers_every_argument

B7 = 7_000_000_000


def test_state_is_16_bytes_per_parameter_over_the_node():
    assert hsdp(B7, 8, 8)["state_GB"] == 16 * B7 / 8 / 1e9 == 14
    assert hsdp(B7, 8, 8)["state_GB"] == memory_per_gpu("zero3", B7, 8)


def test_only_the_gradient_shard_crosses_nodes():
    """Each GPU all-reduces its 2P/G bytes of bf16 gradients with its
    peers on the other n nodes: 2 (n - 1) / n of it sent."""
    r = hsdp(B7, 8, 8)
    assert r["inter_node_GB"] == pytest.approx(2 * 7 / 8 * 2 * B7 / 8 / 1e9)
    assert f"{r['inter_node_GB']:.4f}" == "3.0625"
    assert r["intra_node_GB"] == comm_bytes("zero3", B7, 8) == 36.75


def test_one_node_is_zero3():
    r = hsdp(B7, 8, 1)
    assert r["inter_node_GB"] == 0
    assert r["state_GB"] == memory_per_gpu("zero3", B7, 8)


def test_one_gpu_per_node_is_ddp():
    r = hsdp(B7, 1, 64)
    assert r["state_GB"] == memory_per_gpu("ddp", B7, 64) == 112
    assert r["intra_node_GB"] == 0
    assert r["inter_node_GB"] == pytest.approx(comm_bytes("ddp", B7, 64))


@pytest.mark.parametrize("g", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("n", [1, 2, 8, 128])
def test_between_zero3_and_ddp(g, n):
    """HSDP keeps more state than ZeRO-3 over all g x n GPUs, never
    more than DDP, and sends fewer bytes across nodes than either."""
    r = hsdp(B7, g, n)
    total = g * n
    assert memory_per_gpu("zero3", B7, total) <= r["state_GB"] * (1 + 1e-12)
    assert r["state_GB"] <= memory_per_gpu("ddp", B7, total)
    assert r["inter_node_GB"] <= comm_bytes("ddp", B7, n) * (1 + 1e-12)


def test_byte_convention_is_passed_on():
    r = hsdp(B7, 8, 8, bytes_per_grad=4, bytes_optim=12)
    assert r["state_GB"] == memory_per_gpu("zero3", B7, 8, bytes_grad=4)
    assert r["inter_node_GB"] == pytest.approx(
        2 * hsdp(B7, 8, 8)["inter_node_GB"]
    )


SPECS = {
    "hsdp": (
        hsdp,
        {"params": B7, "gpus_per_node": 8, "nodes": 8},
        {
            "params": "positive",
            "gpus_per_node": "count",
            "nodes": "count",
            "bytes_per_grad": "positive",
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
