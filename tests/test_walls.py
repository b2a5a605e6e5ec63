"""snippets/walls/: the memory wall (model state) and the time wall
(training days)."""

import pytest

from snippets.walls.walls import (
    H100_MiB,
    flops_per_token,
    megatron_model_share,
    state_GB,
    training_days,
)
from tests import lab_inputs as inputs
from tests.lab_rows import row

B7 = 7_000_000_000


def test_state_of_7b_mixed_precision_adam_is_112_gb():
    assert state_GB(B7) == 112
    assert state_GB(B7, bytes_per_param=18) == 126  # DeepSpeed's convention


def test_training_days_is_six_flops_per_param_per_token():
    tokens, peak, mfu = 2_000_000_000_000, 989, 0.40
    one = training_days(B7, tokens, 1, peak, mfu)
    expected_s = 6 * B7 * tokens / (peak * 1e12 * mfu)
    assert one == pytest.approx(expected_s / 86_400, rel=1e-12)
    assert training_days(B7, tokens, 64, peak, mfu) == pytest.approx(one / 64)
    assert training_days(B7, tokens, 1, peak, 1) == pytest.approx(one * mfu)


def test_7b_on_2t_tokens_takes_2457_6_days_on_one_h100():
    """The page's figures: 1, 64 and 1024 H100s at 40% MFU."""
    days = [training_days(B7, 2 * 10**12, n, 989, 0.4) for n in (1, 64, 1024)]
    assert [f"{d:.1f}" for d in days] == ["2457.6", "38.4", "2.4"]


def test_an_80_gb_h100_is_85_5_decimal_gb():
    """nvidia-smi on an H100 SXM 80 GB reports 81559MiB (NVIDIA/nccl
    issue 1264 shows it): binary units, 85.5 GB of 1e9 bytes."""
    assert H100_MiB * 2**20 == 85_520_809_984
    assert f"{H100_MiB * 2**20 / 1e9:.1f}" == "85.5"


# Megatron-LM 2021, Table 1: (layers, hidden, TFLOP/s per A100, the
# percentage of the 312 TFLOP/s peak the paper prints).
TABLE_1 = [(24, 2304, 137, 44), (40, 6144, 135, 43), (128, 25600, 163, 52)]


@pytest.mark.parametrize(("layers", "hidden", "tflops", "percent"), TABLE_1)
def test_megatron_counts_recomputation(layers, hidden, tflops, percent):
    """The paper's percentages are its TFLOP/s over 312. Of those FLOPs
    the model needs 72/96 of the layers' and all of the logits': a
    share above 3/4 that falls to it as the model grows."""
    assert round(100 * tflops / 312) == percent
    share = megatron_model_share(layers, hidden, 2048, 51200)
    attention, logits = 2048 / (6 * hidden), 51200 / (16 * layers * hidden)
    counted = 96 * (1 + attention + logits)  # eq. 3, per B s l h^2
    model = 72 * (1 + attention) + 96 * logits  # no second forward pass
    assert share == pytest.approx(model / counted)
    assert 0.75 < share < 0.77


def test_model_share_tends_to_three_quarters():
    assert megatron_model_share(10**4, 10**6, 1, 1) == pytest.approx(0.75)


BAD_INPUT = [
    row(
        state_GB,
        {"params": B7, "bytes_per_param": 16},
        bytes_per_param=inputs.POSITIVE,
    ),
    row(
        training_days,
        {
            "params": B7,
            "tokens": 2 * 10**12,
            "world_size": 64,
            "peak_tflops": 989,
            "mfu": 0.4,
        },
        tokens=inputs.POSITIVE,
        mfu=inputs.SHARE,
    ),
    row(
        megatron_model_share,
        {"layers": 24, "hidden": 2304, "seq_len": 2048, "vocab": 51200},
    ),
    row(
        flops_per_token,
        {"params": B7, "layers": 32, "hidden": 4096, "seq_len": 4096},
        layers=inputs.OPTIONAL_COUNT,
        hidden=inputs.OPTIONAL_COUNT,
        seq_len=inputs.OPTIONAL_COUNT,
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "walls")


def test_attention_adds_palms_12_l_h_s():
    """PaLM, Appendix B: 6N + 12 L H Q T FLOPs per token, H Q = h. For
    32 layers of width 4096 at 4,096 tokens: 15.3% on top of 6P."""
    assert flops_per_token(B7) == 6 * B7
    full = flops_per_token(B7, 32, 4096, 4096)
    assert full == 6 * B7 + 12 * 32 * 4096 * 4096
    assert f"{full / (6 * B7) - 1:.1%}" == "15.3%"


def test_half_a_shape_is_refused():
    with pytest.raises(ValueError, match="layers, hidden and seq_len"):
        flops_per_token(B7, layers=32)


@pytest.mark.parametrize("name", ["TABLE1", "TABLE4", "TORCHTITAN"])
def test_one_flop_count_with_the_planner(name):
    """flops_per_token, given a published run's shape, is the count
    the planner converts every run's throughput to MFU with
    (snippets/planner/runs.py, PaLM's 6N + 12 L h s)."""
    from snippets.planner import runs

    for run in getattr(runs, name):
        ours = flops_per_token(
            runs.matmul_weights(run), run.layers, run.hidden, run.seq_len
        )
        assert ours == pytest.approx(runs.model_flops_per_token(run))
