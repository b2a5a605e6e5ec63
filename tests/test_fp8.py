"""snippets/fp8/speedup.py: the step's speed-up from faster matrix
multiplies (Amdahl's law), held to torchtitan's measured FP8 runs, and
the MFU of one run against two peaks."""

import math
import random

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from snippets.fp8.ladder import fp8_step_estimate
from snippets.fp8.scaling import E4M3_MAX, quantize, to_e4m3
from snippets.fp8.speedup import fp8_speedup, gemm_share_for, mfu
from tests import lab_inputs as inputs
from tests.lab_inputs import PROFILE
from tests.lab_rows import row

# (bf16, FP8) tokens/s per GPU, from torchtitan's own tables.
MEASURED = {
    # benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3: Llama
    # 3.1 8B, FSDP, torch.compile, Float8 (tensorwise) on H100
    "8B, 8 H100": (6667, 8532),
    "8B, 128 H100": (6514, 8380),
    # torchtitan/components/quantization/mxfp8.md and torchao's
    # prototype/mx_formats/README.md: 8 B200, Llama 3 8B
    "8B, 8 B200, mxfp8_cublas": (8307.5, 9969.0),
    "8B, 8 B200, float8 tensorwise": (8307.5, 10417.0),
    "8B, 8 B200, float8 rowwise": (8307.5, 8640.5),
    # the same page: Llama 4 Scout (MoE) on a 64-node GB200 cluster
    "Scout, GB200, mxfp8": (6169, 7401),
}
PRINTED = {  # the speed-ups the pages print, to their precision
    "8B, 8 H100": "1.28",
    "8B, 8 B200, mxfp8_cublas": "+20.0%",
    "8B, 8 B200, float8 tensorwise": "+25.4%",
    # the page labels this row +20.3%; its own columns give +20.0%
    "Scout, GB200, mxfp8": "+20.0%",
}


@pytest.mark.parametrize("run", MEASURED)
def test_no_measured_run_is_near_2x(run):
    """Each run is explained by matrix multiplies that are under two
    thirds of the bf16 step even if they ran a full 2x faster: the
    step never comes close to the tensor cores' 2x."""
    bf16, fp8 = MEASURED[run]
    assert 1 < fp8 / bf16 < 1.3
    assert gemm_share_for(fp8 / bf16) < 2 / 3


@pytest.mark.parametrize("run", PRINTED)
def test_the_printed_speedups(run):
    bf16, fp8 = MEASURED[run]
    printed = PRINTED[run]
    if printed.startswith("+"):
        assert f"+{fp8 / bf16 - 1:.1%}" == printed
    else:
        assert f"{fp8 / bf16:.2f}" == printed


def test_amdahl():
    assert fp8_speedup(1.0) == 2
    assert fp8_speedup(0.0) == 1
    assert fp8_speedup(0.5) == pytest.approx(4 / 3)
    assert fp8_speedup(1.0, overhead_share=0.5) == 1
    assert fp8_speedup(0.8, gemm_speedup=4) == pytest.approx(1 / 0.4)


@PROFILE
@given(st.floats(0.01, 1), st.floats(1.01, 8))
def test_the_share_is_the_inverse_of_the_speedup(g, s):
    assert gemm_share_for(fp8_speedup(g, s), s) == pytest.approx(g)


def test_mfu_depends_on_the_peak_it_is_counted_against():
    """H100 SXM: 989 TFLOP/s dense bf16, 1,979 dense FP8. The same run
    is twice the MFU against the bf16 peak; torchtitan reports none for
    its FP8 runs for that reason."""
    tps, flops = 8532, 6 * 8.03e9
    assert mfu(tps, flops, 989) / mfu(tps, flops, 1979) == pytest.approx(
        1979 / 989
    )
    assert f"{mfu(tps, flops, 989):.1%}" == "41.6%"


def test_e4m3_rounds_as_pytorch_casts():
    """torch.float8_e4m3fn: round to nearest even, subnormals down to
    2^-9, saturation at 448 (the CPU cast)."""
    rng = random.Random(1)
    xs = [
        rng.uniform(-500, 500) * 10 ** rng.uniform(-6, 0) for _ in range(5000)
    ]
    xs += [0.0, 2.0**-10, 3 * 2.0**-10, 2.0**-9, 448.0, 464.0, -1e-12]
    theirs = torch.tensor(xs, dtype=torch.float64).to(torch.float8_e4m3fn)
    assert [to_e4m3(x) for x in xs] == theirs.double().tolist()
    assert torch.finfo(torch.float8_e4m3fn).max == E4M3_MAX


@pytest.mark.parametrize("block", [None, 1, 32, 128])
def test_the_largest_value_of_each_block_survives_scaling(block):
    rng = random.Random(2)
    x = [rng.gauss(0, 1) * 10 ** rng.randint(-3, 3) for _ in range(256)]
    q = quantize(x, block)
    size = block or len(x)
    for start in range(0, len(x), size):
        i = max(
            range(start, min(start + size, len(x))), key=lambda j: abs(x[j])
        )
        assert q[i] == pytest.approx(x[i], rel=1e-12)
    # 3 mantissa bits: a value that lands in E4M3's normal range (at or
    # above 2^-6 once scaled) comes back within 1/16 of itself
    for start in range(0, len(x), size):
        block_x = x[start : start + size]
        amax = max(abs(v) for v in block_x)
        for a, b in zip(q[start : start + size], block_x, strict=True):
            if abs(b) * E4M3_MAX / amax >= 2**-6:
                assert abs(a - b) <= abs(b) / 16


def test_smaller_blocks_lose_fewer_small_values():
    x = [0.002] * 127 + [1000.0]
    lost = {b: sum(v == 0 for v in quantize(x, b)) for b in (None, 32, 8)}
    assert lost == {None: 127, 32: 31, 8: 7}


def test_fp8_estimate_is_amdahl_on_the_profile():
    profile = {"gemm": 600.0, "attention": 300.0, "other": 100.0}
    r = fp8_step_estimate(profile, 2.0, 0.0)
    assert r["gemm_share"] == 0.6
    assert r["step_ms"] == pytest.approx(700)
    assert r["speedup"] == pytest.approx(fp8_speedup(0.6))
    assert fp8_step_estimate(profile, 2.0, 0.1)["step_ms"] == pytest.approx(
        760
    )


# --- bad input -------------------------------------------------------------

SHARE = inputs.Kind(
    [
        (-0.1, ValueError),
        (1.0001, ValueError),
        (40, ValueError),
        *inputs.NOT_FINITE,
        *inputs.NOT_A_NUMBER,
    ]
)
SPEEDUP = inputs.Kind([(0.5, ValueError), (1, ValueError), *SHARE.bad[3:]])
BAD_INPUT = [
    row(
        fp8_speedup,
        {"gemm_share": 0.6},
        gemm_share=SHARE,
        overhead_share=inputs.NON_NEGATIVE,
    ),
    row(
        gemm_share_for,
        {"speedup": 1.28},
        speedup=inputs.Kind(
            [(0.9, ValueError), (2.5, ValueError), *SHARE.bad[3:]]
        ),
        gemm_speedup=SPEEDUP,
    ),
    row(
        mfu,
        {"tokens_per_s": 8532, "flops_per_token": 4.8e10, "peak_tflops": 989},
        tokens_per_s=inputs.POSITIVE,
        flops_per_token=inputs.POSITIVE,
    ),
    row(
        to_e4m3,
        {"x": 1.5},
        x=inputs.Kind([*inputs.NOT_FINITE, *inputs.NOT_A_NUMBER]),
    ),
    row(
        quantize,
        {"values": [0.5, 2.0, -3.0]},
        values=inputs.Kind(
            [
                ([], TypeError),
                (None, TypeError),
                ("abc", TypeError),
                ([1.0, "x"], TypeError),
                ([1.0, math.nan], ValueError),
            ]
        ),
        block=inputs.OPTIONAL_COUNT,
    ),
    row(
        fp8_step_estimate,
        {"profile_ms": {"gemm": 600, "other": 400}},
        profile_ms=inputs.Kind(
            [
                ({}, TypeError),
                (None, TypeError),
                ({"other": 1}, TypeError),
                ({"gemm": -1}, ValueError),
                ({"gemm": 0, "other": 0}, ValueError),
                ({"gemm": "1"}, TypeError),
            ]
        ),
        cast_overhead=inputs.NON_NEGATIVE,
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "fp8")
