"""Tests of snippets/pipeline/tensor.py: what Megatron tensor
parallelism sends per layer, and how long that takes next to compute."""

import pytest

from snippets.pipeline.tensor import tp_bytes_per_layer, tp_layer_seconds
from snippets.walls.walls import FLOPS_PER_PARAM_TOKEN
from tests.refused import cases, check_refused, covers_every_argument

F = 989 * 0.40


def test_four_ring_all_reduces_of_the_layer_output():
    """Two all-reduces forward and two backward of b x s x h values,
    each rank sending 2 (t - 1) / t of the buffer per all-reduce."""
    buffer = 4096 * 1 * 4096 * 2  # bf16
    assert tp_bytes_per_layer(4096, 1, 4096, 8) == 4 * 1.75 * buffer
    assert tp_bytes_per_layer(4096, 1, 4096, 2) == 4 * 1.0 * buffer
    assert tp_bytes_per_layer(4096, 1, 4096, 1) == 0


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


SPECS = {
    "tp_bytes_per_layer": (
        tp_bytes_per_layer,
        {"seq_len": 4096, "micro_batch": 1, "hidden": 4096, "tp": 8},
        {
            "seq_len": "count",
            "micro_batch": "count",
            "hidden": "count",
            "tp": "count",
            "bytes_per_value": "positive",
        },
        {},
    ),
    "tp_layer_seconds": (
        tp_layer_seconds,
        {
            "seq_len": 4096,
            "micro_batch": 1,
            "hidden": 4096,
            "tp": 8,
            "tflops_per_gpu": F,
            "link_GBps": 450,
        },
        {
            "seq_len": "count",
            "micro_batch": "count",
            "hidden": "count",
            "tp": "count",
            "tflops_per_gpu": "positive",
            "link_GBps": "positive",
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
