"""snippets/strategy/: the strategy ladder, by questions (choose) and by
memory (plan)."""

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snippets.strategy.choose import RUNGS, choose_strategy
from snippets.strategy.plan import plan
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


@pytest.mark.parametrize(
    ("billions", "gpus", "strategy"),
    [
        (1, 8, "ddp"),  # 16 GB
        (7, 8, "zero1"),  # ddp 112, zero1 38.5 <= 64 GB
        (13, 64, "zero1"),  # zero1 54.4375 GB
        (70, 64, "zero3"),  # zero2 155.3, zero3 17.5 GB
        (400, 64, "tensor/pipeline"),  # zero3 alone is 100 GB
    ],
)
def test_plan_picks_the_lowest_rung_that_fits(billions, gpus, strategy):
    p = plan(billions * 1_000_000_000, gpus, gpu_GB=80)
    assert p["strategy"] == strategy
    assert p["budget_GB"] == 64
    assert list(p["per_gpu_GB"]) == list(SHARDED)


def test_plan_passes_the_byte_convention_through():
    # DeepSpeed's 18 bytes/param: fp32 gradients, 2 + 4 + 12.
    p = plan(B7, 8, 80, bytes_grad=4)
    assert p["per_gpu_GB"]["ddp"] == 126
    assert p["per_gpu_GB"]["zero3"] == pytest.approx(126 / 8)
    assert plan(B7, 8, 80, usable=1)["budget_GB"] == 80


def test_plan_fits_on_the_budget_boundary():
    # 16 GB of state against exactly 16 GB usable: it fits.
    assert plan(1_000_000_000, 8, gpu_GB=20, usable=0.8)["strategy"] == "ddp"


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
)
def test_plan_recommends_the_lowest_rung_that_fits(
    psi, n, gpu, usable, bg, bo
):
    rungs = list(SHARDED)  # ddp, zero1, zero2, zero3: the order plan climbs
    p = plan(psi, n, gpu, usable, bytes_grad=bg, bytes_optim=bo)
    budget = gpu * usable
    assert p["budget_GB"] == pytest.approx(budget, rel=REL)
    need = {
        s: memory_per_gpu(s, psi, n, bytes_grad=bg, bytes_optim=bo)
        for s in rungs
    }
    assert p["per_gpu_GB"] == pytest.approx(need, rel=REL)
    fitting = [s for s in rungs if need[s] <= p["budget_GB"]]
    if fitting:
        chosen = p["strategy"]
        assert chosen == fitting[0]
        assert need[chosen] <= p["budget_GB"]  # never one that does not fit
        for lower in rungs[: rungs.index(chosen)]:
            assert need[lower] > p["budget_GB"]
    else:
        assert p["strategy"] == "tensor/pipeline"


BAD_INPUT = [
    (
        "choose_strategy",
        choose_strategy,
        {
            "model_fits_one_gpu": True,
            "state_fits_one_gpu": False,
            "layer_fits_one_gpu": True,
            "multi_node": False,
        },
        {
            "model_fits_one_gpu": inputs.FLAG,
            "state_fits_one_gpu": inputs.FLAG,
            "layer_fits_one_gpu": inputs.FLAG,
            "multi_node": inputs.FLAG,
        },
    ),
    (
        "plan",
        plan,
        {"params": B7, "world_size": 8, "gpu_GB": 80},
        {
            "params": inputs.POSITIVE,
            "world_size": inputs.COUNT,
            "gpu_GB": inputs.POSITIVE,
            "usable": inputs.SHARE,
            # **bytes_per_param, passed on to memory_per_gpu
            "bytes_param": inputs.POSITIVE,
            "bytes_grad": inputs.POSITIVE,
            "bytes_optim": inputs.NON_NEGATIVE,
        },
    ),
]


@pytest.mark.parametrize(inputs.FIELDS, inputs.bad_cases(BAD_INPUT))
def test_bad_input_is_refused_by_name(
    function, valid, argument, value, error, allowed
):
    inputs.assert_refused(function, valid, argument, value, error, allowed)


def test_every_argument_has_bad_inputs():
    inputs.assert_every_argument_has_bad_inputs(BAD_INPUT, "strategy")
    # plan passes **bytes_per_param on to memory_per_gpu: each of its
    # byte sizes has rows of its own.
    passed_on = {
        name
        for name in inspect.signature(memory_per_gpu).parameters
        if name.startswith("bytes_")
    }
    assert passed_on == {"bytes_param", "bytes_grad", "bytes_optim"}
    assert passed_on <= set(BAD_INPUT[1][3])
