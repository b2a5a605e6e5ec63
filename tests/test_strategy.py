"""snippets/strategy/: the strategy ladder, by questions (choose) and by
memory (plan)."""

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snippets.activations.memory import RECOMPUTE, activation_bytes_per_gpu
from snippets.strategy.ceiling import batch_ceiling
from snippets.strategy.choose import RULES, RUNGS, choose_strategy
from snippets.strategy.plan import plan, shape_from_params
from snippets.units import GB
from snippets.zero.fsdp2 import working_set_GB
from snippets.zero.memory import SHARDED, memory_per_gpu
from tests import lab_inputs as inputs
from tests.lab_inputs import (
    PROFILE,
    REL,
    byte_size,
    optim_bytes,
    params,
    world,
)
from tests.lab_rows import row

B7 = 7_000_000_000


@pytest.mark.parametrize(
    ("answers", "rung"),
    [
        ((True, True, True, False), "ddp"),
        ((True, True, True, True), "ddp"),
        ((True, False, True, False), "fsdp"),
        ((True, False, True, True), "fsdp"),
        ((False, False, True, False), "fsdp"),
        ((False, False, True, True), "fsdp"),
        ((False, False, False, False), "tp"),
        ((False, False, False, True), "3d"),
    ],
)
def test_chooser_climbs_only_as_far_as_a_wall(answers, rung):
    assert choose_strategy(*answers) == RUNGS[rung]


@pytest.mark.parametrize(
    ("answers", "named"),
    [
        ((False, True, True, False), "state_fits_one_gpu"),
        ((False, True, False, True), "state_fits_one_gpu"),
        ((True, False, False, False), "layer_fits_one_gpu"),
        ((True, True, False, True), "layer_fits_one_gpu"),
    ],
)
def test_chooser_rejects_inconsistent_answers(answers, named):
    with pytest.raises(ValueError, match=named):
        choose_strategy(*answers)


QUESTIONS = list(inspect.signature(choose_strategy).parameters)


def test_rules_are_an_ordered_walk_over_the_questions():
    """Every rule asks one of the chooser's questions, in a fixed order,
    and the last rule, with no question, catches the rest."""
    questions = [q for q, _ in RULES]
    assert questions[-1] is None
    assert set(questions[:-1]) <= set(QUESTIONS)
    assert len(set(questions)) == len(questions)
    assert {rung for _, rung in RULES} == set(RUNGS)


@pytest.mark.parametrize(
    "answers",
    [
        (True, True, True, False),
        (True, False, True, True),
        (False, False, True, False),
        (False, False, False, True),
        (False, False, False, False),
    ],
)
def test_chooser_returns_the_first_rule_that_holds(answers):
    given = dict(zip(QUESTIONS, answers, strict=True))
    first = next(r for q, r in RULES if q is None or given[q])
    assert choose_strategy(*answers) == RUNGS[first]


def test_rung_texts_match_when_they_are_chosen():
    # "tp" is only chosen on one node: its text must not send FSDP
    # across nodes; the sharding rung names every ZeRO stage.
    assert "across nodes" not in RUNGS["tp"]
    assert "across nodes" in RUNGS["3d"]
    for stage in ("ZeRO-1", "ZeRO-2", "ZeRO-3"):
        assert stage in RUNGS["fsdp"]


LLAMA_13B = {"layers": 40, "hidden": 5120, "heads": 40}


@pytest.mark.parametrize(
    ("billions", "gpus", "recompute", "strategy"),
    [
        (1, 8, "none", "ddp"),  # 16 + 5.2 GB
        (7, 8, "none", "zero1"),  # 38.5 + 19.4 GB
        (13, 64, "none", "zero2"),  # zero1 54.4 + 28.5 > 80
        (70, 64, "none", "tensor/pipeline"),  # activations alone 89.9
        (70, 64, "full", "zero3"),  # 17.5 + 6.5 GB
        (400, 64, "full", "tensor/pipeline"),  # zero3 alone is 119 GB
    ],
)
def test_plan_picks_the_lowest_rung_that_fits(
    billions, gpus, recompute, strategy
):
    p = plan(billions * 1_000_000_000, gpus, gpu_GB=80, recompute=recompute)
    assert p["strategy"] == strategy
    assert p["budget_GB"] == 80
    assert list(p["per_gpu_GB"]) == list(SHARDED)


def test_plan_counts_the_activation_lab_not_a_share_of_the_card():
    """13B (LLaMA-13B's shape) on 8 GPUs, one 4096-token sequence:
    ZeRO-1's 71.5 GB leaves too little for 28.5 GB of activations,
    ZeRO-2's 48.75 GB leaves enough."""
    p = plan(13 * 10**9, 8, 80, **LLAMA_13B)
    act = (
        activation_bytes_per_gpu(
            40,
            seq_len=4096,
            micro_batch=1,
            hidden=5120,
            heads=40,
            flash_attention=True,
        )
        / GB
    )
    assert p["activations_GB"] == pytest.approx(act)
    assert f"{act:.1f}" == "28.5"
    assert p["per_gpu_GB"]["zero1"] + act > 80
    assert p["per_gpu_GB"]["zero2"] + act <= 80
    assert p["strategy"] == "zero2"
    assert p["assumes"] == {
        "seq_len": 4096,
        "micro_batch": 1,
        "recompute": "none",
        "flash_attention": True,
        **LLAMA_13B,
    }
    # Two sequences stored in full no longer fit beside any rung; with
    # full recomputation they fit beside ZeRO-1's state.
    two = {"micro_batch": 2, **LLAMA_13B}
    assert plan(13 * 10**9, 8, 80, **two)["strategy"] == "tensor/pipeline"
    full = plan(13 * 10**9, 8, 80, recompute="full", **two)
    assert full["strategy"] == "zero1"


def test_full_recomputation_counts_the_layer_being_rebuilt():
    """Each of the 71 layers keeps its 2sbh input; the one the backward
    pass reruns holds its 34sbh (FlashAttention) again: 71 x 2 + 32."""
    p = plan(70 * 10**9, 64, 80, recompute="full")
    sbh = 4096 * 1 * 9088
    assert p["assumes"]["layers"] == 71
    assert p["activations_GB"] == pytest.approx((71 * 2 + 32) * sbh / GB)
    assert f"{p['activations_GB']:.1f}" == "6.5"


def test_plan_without_a_shape_derives_one_from_params():
    assert shape_from_params(13 * 10**9) == (40, 5120, 40)
    assert shape_from_params(175 * 10**9) == (96, 12288, 96)  # GPT-3
    derived = plan(13 * 10**9, 8, 80)
    assert derived == plan(13 * 10**9, 8, 80, **LLAMA_13B)


def test_plan_needs_the_whole_shape_or_none_of_it():
    with pytest.raises(ValueError, match=r"layers, hidden and heads"):
        plan(B7, 8, 80, layers=32)


def test_plan_passes_the_byte_convention_through():
    # DeepSpeed's 18 bytes/param: fp32 gradients, 2 + 4 + 12.
    p = plan(B7, 8, 80, bytes_grad=4)
    assert p["per_gpu_GB"]["ddp"] == 126
    unit = 12 * shape_from_params(B7)[1] ** 2  # a layer, FSDP's unit
    assert p["per_gpu_GB"]["zero3"] == pytest.approx(
        126 / 8 + working_set_GB(unit)
    )
    assert plan(B7, 8, 80, usable=0.5)["budget_GB"] == 40


def test_plan_fits_on_the_budget_boundary():
    # 16 GB of state plus the activations, against exactly that much.
    act = plan(10**9, 8, 80)["activations_GB"]
    assert plan(10**9, 8, gpu_GB=16 + act)["strategy"] == "ddp"
    assert plan(10**9, 8, gpu_GB=16 + act - 1e-6)["strategy"] == "zero1"


def test_plan_rejects_unknown_byte_keywords():
    with pytest.raises(TypeError, match="bytes_master"):
        plan(B7, 8, 80, bytes_master=4)


@PROFILE
@given(
    params,
    world,
    st.floats(min_value=1, max_value=1000),
    st.floats(min_value=0.05, max_value=1),
    byte_size,
    optim_bytes,
    st.sampled_from(RECOMPUTE),
)
def test_plan_recommends_the_lowest_rung_that_fits(
    psi, n, gpu, usable, bg, bo, recompute
):
    rungs = list(SHARDED)  # ddp, zero1, zero2, zero3: the order plan climbs
    p = plan(
        psi,
        n,
        gpu,
        usable,
        recompute=recompute,
        bytes_grad=bg,
        bytes_optim=bo,
    )
    budget = gpu * usable
    assert p["budget_GB"] == pytest.approx(budget, rel=REL)
    need = {
        s: memory_per_gpu(s, psi, n, bytes_grad=bg, bytes_optim=bo)
        for s in rungs
    }
    names = ("layers", "hidden", "heads")
    shape = dict(zip(names, shape_from_params(psi), strict=True))
    # ZeRO-3 with FSDP's working set: 2 gathered layers, 1 gradient
    need["zero3"] += working_set_GB(12 * shape["hidden"] ** 2)
    assert p["per_gpu_GB"] == pytest.approx(need, rel=REL)
    act = (
        activation_bytes_per_gpu(
            seq_len=4096,
            micro_batch=1,
            recompute=recompute,
            flash_attention=True,
            rebuilt_layer=True,
            **shape,
        )
        / GB
    )
    assert p["activations_GB"] == pytest.approx(act, rel=REL)
    fitting = [s for s in rungs if need[s] + act <= p["budget_GB"]]
    if fitting:
        chosen = p["strategy"]
        assert chosen == fitting[0]
        assert need[chosen] + act <= p["budget_GB"]  # never one too big
        for lower in rungs[: rungs.index(chosen)]:
            assert need[lower] + act > p["budget_GB"]
    else:
        assert p["strategy"] == "tensor/pipeline"


BAD_INPUT = [
    row(shape_from_params, {"params": B7}),
    row(
        choose_strategy,
        {
            "model_fits_one_gpu": True,
            "state_fits_one_gpu": False,
            "layer_fits_one_gpu": True,
            "multi_node": False,
        },
        model_fits_one_gpu=inputs.FLAG,
        state_fits_one_gpu=inputs.FLAG,
        layer_fits_one_gpu=inputs.FLAG,
        multi_node=inputs.FLAG,
    ),
    row(
        plan,
        {"params": B7, "world_size": 8, "gpu_GB": 80, **LLAMA_13B},
        usable=inputs.SHARE,
        recompute=inputs.choice(RECOMPUTE),
        # given together: None for one of them is its own error
        layers=inputs.OPTIONAL_COUNT,
        hidden=inputs.OPTIONAL_COUNT,
        heads=inputs.OPTIONAL_COUNT,
        batch_tokens=inputs.OPTIONAL_COUNT,
        # **bytes_per_param, passed on to memory_per_gpu
        bytes_param=inputs.POSITIVE,
        bytes_grad=inputs.POSITIVE,
        bytes_optim=inputs.NON_NEGATIVE,
    ),
    row(
        batch_ceiling,
        {"gpus": 16_384, "batch_tokens": 2**24, "seq_len": 8192},
        gpus=inputs.COUNT,
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "strategy")


def test_llama3_405b_is_pushed_to_128_gpus_per_replica():
    """Llama 3 Table 4: 16M tokens (2,048 sequences of 8,192) on 16,384
    GPUs, 1,024 tokens each: at least 8 GPUs per replica, and 128 with
    16 micro-batches for 16 pipeline stages: TP 8 x PP 16, DP 128. At
    128K tokens, 2,048 per replica: TP 8 x CP 16 x PP 16, DP 8."""
    one = batch_ceiling(16_384, 2**24, 8192)
    assert one == {
        "tokens_per_gpu": 1024,
        "max_dp": 2048,
        "min_model_parallel": 8,
    }
    pipe = batch_ceiling(16_384, 2**24, 8192, microbatches=16)
    assert (pipe["max_dp"], pipe["min_model_parallel"]) == (128, 8 * 16)
    long = batch_ceiling(16_384, 2**24, 131_072, microbatches=16)
    assert (long["max_dp"], long["min_model_parallel"]) == (8, 8 * 16 * 16)


def test_a_batch_of_partial_micro_batches_is_refused():
    with pytest.raises(ValueError, match="batch_tokens"):
        batch_ceiling(8, 4096 * 8 + 1, 4096)


def test_plan_sends_jobs_past_the_ceiling_to_model_parallelism():
    fits = plan(B7, 1024, 80, batch_tokens=2**22)
    past = plan(B7, 2048, 80, batch_tokens=2**22)
    assert fits["strategy"] == "zero1"
    assert past["strategy"] == "tensor/pipeline"
    assert past["per_gpu_GB"]["zero1"] < 80  # it fits, but has no work


def test_plan_passes_on_byte_sizes_that_have_rows_of_their_own():
    """plan passes **bytes_per_param on to memory_per_gpu: each of its
    byte sizes has rows of its own."""
    passed_on = {
        name
        for name in inspect.signature(memory_per_gpu).parameters
        if name.startswith("bytes_")
    }
    assert passed_on == {"bytes_param", "bytes_grad", "bytes_optim"}
    assert passed_on <= set(BAD_INPUT[2][3])


def test_every_shape_argument_is_refused_alone():
    """Without the other two, a None for layers, hidden or heads is
    refused as half a shape, naming all three."""
    for name in LLAMA_13B:
        with pytest.raises(ValueError, match=name):
            plan(B7, 8, 80, **{**LLAMA_13B, name: None})
