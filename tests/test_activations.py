"""Tests of snippets/activations/memory.py: activation memory per layer
(Korthikanti et al. 2022, Table 2) and per pipeline stage."""

from fractions import Fraction

import pytest

from snippets.activations.memory import (
    RECOMPUTE,
    SCHEDULES,
    activation_bytes_per_gpu,
    activation_bytes_per_layer,
    logit_bytes,
)
from snippets.walls.walls import state_GB
from tests import lab_inputs as inputs
from tests.lab_rows import row

# GPT-3 175B's layer (h = 12288, a = 96, s = 2048), as the paper uses it,
# with its tensor-parallel size of 8.
S, B, H, A, T = 2048, 1, 12288, 96, 8
GPT3 = {"seq_len": S, "micro_batch": B, "hidden": H, "heads": A}
SEVEN_B = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096, "heads": 32}


def paper(s, b, h, a, t, row):
    """Table 2, term by term, in exact fractions of bytes. The layer
    keeps 11sbh + 5as^2b in attention, 19sbh in the MLP and 4sbh in its
    two layer norms (34sbh + 5as^2b in all); of the 34sbh, 10sbh sit
    outside the tensor-parallel blocks (layer-norm and dropout inputs,
    dropout masks)."""
    sbh, scores = Fraction(s * b * h), Fraction(5 * a * s * s * b)
    attention, mlp, norms = 11 * sbh + scores, 19 * sbh, 4 * sbh
    assert attention + mlp + norms == 34 * sbh + scores
    outside, inside = 10 * sbh, 24 * sbh
    return {
        "no parallelism": attention + mlp + norms,
        "tensor parallel": outside + (inside + scores) / t,
        "tensor + sequence parallel": (outside + inside + scores) / t,
        "tensor parallel + selective": outside + inside / t,
        "tensor + sequence + selective": (outside + inside) / t,
        "full recomputation": 2 * sbh,
    }[row]


ROWS = {
    "no parallelism": {},
    "tensor parallel": {"tp": T},
    "tensor + sequence parallel": {"tp": T, "sequence_parallel": True},
    "tensor parallel + selective": {"tp": T, "recompute": "selective"},
    "tensor + sequence + selective": {
        "tp": T,
        "sequence_parallel": True,
        "recompute": "selective",
    },
    "full recomputation": {"tp": T, "recompute": "full"},
}


@pytest.mark.parametrize("row", list(ROWS))
def test_table_2_on_gpt3_175b(row):
    got = activation_bytes_per_layer(**GPT3, **ROWS[row])
    assert got == pytest.approx(float(paper(S, B, H, A, T, row)), rel=1e-12)


def test_attention_scores_of_gpt3_outweigh_the_rest():
    """5as/h = 80 for GPT-3 175B against 34: the scores are 70% of the
    layer when nothing is recomputed."""
    whole = activation_bytes_per_layer(**GPT3)
    rest = activation_bytes_per_layer(**GPT3, flash_attention=True)
    assert whole / rest == pytest.approx((34 + 80) / 34)
    assert f"{1 - rest / whole:.0%}" == "70%"


def test_7b_one_sequence_is_about_104_gb():
    per_layer = activation_bytes_per_layer(**SEVEN_B)
    assert per_layer == 4096 * 4096 * (34 + 160)
    whole = activation_bytes_per_gpu(32, **SEVEN_B)
    assert f"{whole / 1e9:.2f}" == "104.15"


def test_7b_two_sequences_outgrow_the_training_state():
    two = activation_bytes_per_gpu(32, **{**SEVEN_B, "micro_batch": 2})
    assert two / 1e9 > state_GB(7_000_000_000) == 112
    one = activation_bytes_per_gpu(32, **SEVEN_B)
    assert one / 1e9 < 112 and two == 2 * one


def test_flash_attention_is_selective_recomputation_here():
    flash = activation_bytes_per_layer(**SEVEN_B, flash_attention=True)
    selective = activation_bytes_per_layer(**SEVEN_B, recompute="selective")
    assert flash == selective == 34 * 4096 * 4096


@pytest.mark.parametrize("t", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("sp", [False, True])
def test_less_is_kept_as_more_is_recomputed(t, sp):
    row = [
        activation_bytes_per_layer(
            **GPT3, tp=t, sequence_parallel=sp, recompute=r
        )
        for r in RECOMPUTE
    ]
    assert row[0] > row[1] > row[2]


@pytest.mark.parametrize("t", [2, 4, 8, 16, 32])
def test_sequence_parallel_splits_the_rest(t):
    for r in RECOMPUTE:
        tp = activation_bytes_per_layer(**GPT3, tp=t, recompute=r)
        sp = activation_bytes_per_layer(
            **GPT3, tp=t, sequence_parallel=True, recompute=r
        )
        assert sp < tp
        assert sp * t == pytest.approx(
            activation_bytes_per_layer(**GPT3, recompute=r)
        )


def test_one_way_tensor_parallel_changes_nothing():
    for r in RECOMPUTE:
        base = activation_bytes_per_layer(**GPT3, recompute=r)
        assert activation_bytes_per_layer(**GPT3, tp=1, recompute=r) == base
        assert (
            activation_bytes_per_layer(
                **GPT3, tp=1, sequence_parallel=True, recompute=r
            )
            == base
        )


@pytest.mark.parametrize("p", [1, 2, 4, 8])
@pytest.mark.parametrize("m", [1, 4, 8, 64])
def test_first_stage_holds_p_or_m_microbatches(p, m):
    layer = activation_bytes_per_layer(**GPT3, tp=8)
    per_stage = 96 // p * layer
    gpipe = activation_bytes_per_gpu(
        96, stages=p, microbatches=m, schedule="gpipe", **GPT3, tp=8
    )
    one_f = activation_bytes_per_gpu(
        96, stages=p, microbatches=m, schedule="1f1b", **GPT3, tp=8
    )
    assert gpipe == pytest.approx(m * per_stage)
    assert one_f == pytest.approx(min(p, m) * per_stage)
    assert one_f <= gpipe


def test_1f1b_first_stage_holds_the_whole_model_for_one_microbatch():
    one_f = activation_bytes_per_gpu(
        96, stages=8, microbatches=64, schedule="1f1b", **GPT3, tp=8
    )
    assert one_f == pytest.approx(
        96 * activation_bytes_per_layer(**GPT3, tp=8)
    )


@pytest.mark.parametrize("recompute", RECOMPUTE)
@pytest.mark.parametrize("flash", [False, True])
def test_the_rebuilt_layer_brings_back_what_it_dropped(recompute, flash):
    """At the peak of the backward pass one layer, the one being rerun,
    holds everything a layer stores without recomputation; the other
    layers keep what their recomputation keeps (Chen et al. 2016)."""
    layer = {**SEVEN_B, "recompute": recompute, "flash_attention": flash}
    kept = activation_bytes_per_layer(**layer)
    whole = activation_bytes_per_layer(**{**layer, "recompute": "none"})
    peak = activation_bytes_per_gpu(32, rebuilt_layer=True, **layer)
    assert peak == pytest.approx(31 * kept + whole)
    assert activation_bytes_per_gpu(32, **layer) == 32 * kept
    if recompute == "none":
        assert peak == 32 * kept


def test_full_recomputation_of_7b_peaks_at_checkpoints_plus_one_layer():
    """The page's rows: 1.07 GB of layer inputs, 4.29 GB at the peak
    (the rebuilt layer's 5as/h attention matrix too), 1.61 GB with
    FlashAttention: 31 x 2sbh + 34sbh."""
    full = {**SEVEN_B, "recompute": "full"}
    rows = [
        activation_bytes_per_gpu(32, **full),
        activation_bytes_per_gpu(32, rebuilt_layer=True, **full),
        activation_bytes_per_gpu(
            32, rebuilt_layer=True, flash_attention=True, **full
        ),
    ]
    assert [f"{r / 1e9:.2f}" for r in rows] == ["1.07", "4.29", "1.61"]
    assert rows[2] == 4096 * 4096 * (31 * 2 + 34)


# --- cross-argument rules and bad inputs -----------------------------------


def test_heads_must_split_evenly():
    with pytest.raises(ValueError, match=r"\bhidden\b.*\bheads\b"):
        activation_bytes_per_layer(2048, 1, 1000, 3)
    with pytest.raises(ValueError, match=r"\bheads\b.*\btp\b"):
        activation_bytes_per_layer(2048, 1, 4096, 32, tp=3)
    with pytest.raises(ValueError, match=r"\blayers\b.*\bstages\b"):
        activation_bytes_per_gpu(30, stages=8, **SEVEN_B)


BAD_INPUT = [
    row(
        activation_bytes_per_layer,
        {**SEVEN_B, "tp": 8},
        heads=inputs.COUNT,
        sequence_parallel=inputs.FLAG,
        recompute=inputs.choice(RECOMPUTE),
        # None: the paper's GPT layer (every head its own keys and
        # values, an MLP of 4h); 5 does not divide the 32 heads
        kv_heads=inputs.Kind([*inputs.OPTIONAL_COUNT.bad, (5, ValueError)]),
        ffn=inputs.OPTIONAL_COUNT,
        gated=inputs.FLAG,
        dropout=inputs.FLAG,
    ),
    row(
        activation_bytes_per_gpu,
        {"layers": 32, "stages": 4, "microbatches": 8, **SEVEN_B},
        schedule=inputs.choice(SCHEDULES),
        rebuilt_layer=inputs.FLAG,
        full_every=inputs.OPTIONAL_COUNT,
        # **layer, passed on to activation_bytes_per_layer
        hidden=inputs.COUNT,
        recompute=inputs.choice(RECOMPUTE),
    ),
    row(logit_bytes, {"seq_len": 4096, "micro_batch": 1, "vocab": 128_256}),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "activations")


PRESETS = ("llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b")


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize(
    ("tp", "sp", "flash"),
    [(1, False, False), (8, False, False), (8, True, False), (8, True, True)],
)
def test_one_activation_model_with_the_planner(name, tp, sp, flash):
    """The lab's layer, given a preset's shape, keeps what the planner's
    stored_bytes counts for it: one memory model on both pages."""
    from snippets.planner.cost import layer_shape, stored_bytes
    from snippets.planner.model import MODELS, check_model

    m = check_model(MODELS[name])
    planner = stored_bytes(
        m, layer_shape(m), micro_batch=2, tp=tp, cp=1, sp=sp, flash=flash
    )
    lab = activation_bytes_per_layer(
        seq_len=m.seq_len,
        micro_batch=2,
        hidden=m.hidden,
        heads=m.heads,
        tp=tp,
        sequence_parallel=sp,
        flash_attention=flash,
        kv_heads=m.kv_heads,
        ffn=m.ffn,
        gated=m.gated,
        dropout=m.dropout,
    )
    assert lab == pytest.approx(planner, rel=1e-12)


def test_logits_are_what_the_planner_counts():
    """6 bytes per logit (bf16 logits, fp32 log-softmax), as the
    planner's LOGIT_BYTES: 3.15 GB for 4,096 tokens of a 128K vocab."""
    from snippets.planner.cost import LOGIT_BYTES

    assert logit_bytes(4096, 1, 128_256) == 4096 * 128_256 * LOGIT_BYTES
    assert f"{logit_bytes(4096, 1, 128_256) / 1e9:.2f}" == "3.15"
    assert logit_bytes(4096, 1, 128_256, tp=8) == pytest.approx(
        logit_bytes(4096, 1, 128_256) / 8
    )


def test_every_second_layer_in_full_keeps_half_of_each():
    """full_every=2 on 32 layers: 16 stored layers, 16 inputs, and at
    the peak the layer being rebuilt (torchtitan's layer-selective
    checkpointing)."""
    one = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096, "heads": 32}
    flash = {**one, "flash_attention": True}
    stored = activation_bytes_per_layer(**flash)
    full = activation_bytes_per_layer(**flash, recompute="full")
    got = activation_bytes_per_gpu(32, full_every=2, **flash)
    assert got == pytest.approx(16 * stored + 16 * full)
    peak = activation_bytes_per_gpu(
        32, full_every=2, rebuilt_layer=True, **flash
    )
    assert peak == pytest.approx(got + stored - full)
    every = activation_bytes_per_gpu(32, full_every=1, **flash)
    assert every == pytest.approx(
        activation_bytes_per_gpu(32, **flash, recompute="full")
    )


def test_without_dropout_the_scores_keep_2_bytes_not_5():
    """Llama has no dropout: the softmax output alone, 2as/h, and no
    1-byte masks: 32 + 2as/h per sbh for a GeLU MLP of 4h."""
    base = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096, "heads": 32}
    sbh = 4096 * 4096
    gpt = activation_bytes_per_layer(**base)
    llama = activation_bytes_per_layer(**base, dropout=False)
    assert gpt == pytest.approx(sbh * (34 + 5 * 32 * 4096 / 4096))
    assert llama == pytest.approx(sbh * (32 + 2 * 32 * 4096 / 4096))
