"""snippets/experts/: top-k routing with a capacity, the load-balancing
loss against DeepSpeed's, the all-to-all bytes of expert parallelism and
DeepSeek-V3's node-limited choice of experts against its gate."""

import math

import pytest
import torch

from snippets.experts.alltoall import (
    ep_layout,
    moe_alltoall_bytes,
    node_limited_topk,
    nodes_per_token,
)
from snippets.experts.ladder import smallest_capacity_factor
from snippets.experts.routing import (
    load_balancing_loss,
    route,
    synthetic_router,
)
from tests import lab_inputs as inputs
from tests.lab_rows import row


@pytest.mark.parametrize("skew", [0.0, 1.0, 3.0])
def test_the_router_is_seeded_and_gives_probabilities(skew):
    rows = synthetic_router(64, 8, seed=3, skew=skew)
    assert rows == synthetic_router(64, 8, seed=3, skew=skew)
    assert rows != synthetic_router(64, 8, seed=4, skew=skew)
    assert all(sum(r) == pytest.approx(1) for r in rows)


@pytest.mark.parametrize("cf", [0.5, 1.0, 1.25, 2.0])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_each_expert_drops_what_exceeds_its_capacity(k, cf):
    """C = ceil(cf x k x T / E), DeepSpeed's top-k gate; an expert
    sent more than C tokens keeps C of them, whatever their order."""
    probs = synthetic_router(512, 8, seed=k, skew=2.0)
    r = route(probs, k, cf)
    assert r["capacity"] == math.ceil(512 / 8 * cf * k)
    assert sum(r["demand"]) == 512 * k
    assert r["load"] == [min(d, r["capacity"]) for d in r["demand"]]
    assert r["dropped"] == sum(r["demand"]) - sum(r["load"])
    assert sum(map(len, r["kept"])) == sum(r["load"])


def test_first_choices_are_seated_before_second_choices():
    """Token 0 prefers expert 1, token 1 expert 0, one seat each (cf 0.5
    with k = 2, T = 2, E = 2): both first choices are seated, both
    second choices dropped. Seating token by token would instead give
    token 0 both seats and leave token 1 with none."""
    probs = [[0.2, 0.8], [0.9, 0.1]]
    r = route(probs, 2, 0.5)
    assert r["capacity"] == 1
    assert r["kept"] == [[1], [0]]
    assert r["dropped"] == 2


def test_a_large_enough_capacity_drops_nothing():
    probs = synthetic_router(1000, 10, seed=1, skew=1.0)
    demand = route(probs, 2, 1.0)["demand"]
    enough = max(demand) / (1000 * 2 / 10)
    assert route(probs, 2, enough)["dropped"] == 0
    assert route(probs, 2, enough * 0.9)["dropped"] > 0


def deepspeed_l_aux(probs):
    """deepspeed/moe/sharded_moe.py, top1gating: l_aux = mean(me * ce)
    * num_experts ** 2, me the mean gate, ce the share of first
    choices, written out with torch."""
    gates = torch.tensor(probs, dtype=torch.float64)
    e = gates.shape[1]
    me = gates.mean(dim=0)
    ce = torch.nn.functional.one_hot(gates.argmax(dim=1), e).double()
    return float((me * ce.mean(dim=0)).mean() * e * e)


@pytest.mark.parametrize("skew", [0.0, 0.5, 2.0, 6.0])
def test_the_loss_is_deepspeeds(skew):
    probs = synthetic_router(300, 16, seed=2, skew=skew)
    ours = load_balancing_loss(probs, alpha=1.0)
    assert ours == pytest.approx(deepspeed_l_aux(probs), rel=1e-12)


def test_the_loss_is_alpha_when_balanced_and_alpha_e_when_collapsed():
    """Switch Transformer sec. 2.2: alpha N sum f_i P_i, minimised by a
    uniform spread; alpha = 1e-2 there."""
    e = 8
    balanced = [
        [1.0 if i == t % e else 0.0 for i in range(e)] for t in range(64)
    ]
    assert load_balancing_loss(balanced) == pytest.approx(0.01)
    collapsed = [[1.0] + [0.0] * (e - 1)] * 64
    assert load_balancing_loss(collapsed) == pytest.approx(0.01 * e)


@pytest.mark.parametrize("ep", [1, 2, 8, 64])
def test_four_alltoalls_of_k_b_s_h(ep):
    r = moe_alltoall_bytes(2, 4096, 7168, 8, ep)
    one = 8 * 2 * 4096 * 7168 * 2
    assert r["per_alltoall"] == one
    assert r["sent_per_alltoall"] == pytest.approx(one * (ep - 1) / ep)
    assert r["sent_per_step"] == pytest.approx(4 * r["sent_per_alltoall"])


def test_ep_layouts():
    """DeepSeek-V3: 256 routed experts over 64-way EP, 4 per GPU; a
    torchtitan-style EP 8 inside 64 data-parallel ranks copies each
    expert 8 times."""
    assert ep_layout(2048, 64, 256)["experts_per_rank"] == 4
    assert ep_layout(64, 8, 64) == {"experts_per_rank": 8, "expert_copies": 8}
    with pytest.raises(ValueError, match="ep must divide"):
        ep_layout(64, 8, 12)


def deepseek_gate(scores, top_k, groups, limited):
    """The selection of DeepSeek-V3's Gate.forward (inference/model.py)
    on biased scores: a group's score is the sum of its two best, the
    best `limited` groups stay, the top_k experts among theirs win."""
    s = torch.tensor([scores], dtype=torch.float64).view(1, groups, -1)
    group_scores = s.topk(2, dim=-1)[0].sum(dim=-1)
    keep = group_scores.topk(limited, dim=-1)[1]
    mask = torch.ones(1, groups, dtype=torch.bool).scatter_(1, keep, False)
    s = s.masked_fill(mask.unsqueeze(-1), float("-inf")).flatten(1)
    return sorted(torch.topk(s, top_k, dim=-1)[1][0].tolist())


@pytest.mark.parametrize("seed", range(20))
def test_node_limited_choice_is_deepseeks_gate(seed):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.rand(256, generator=gen, dtype=torch.float64).tolist()
    ours = sorted(node_limited_topk(scores, 8, 8, 4))
    assert ours == deepseek_gate(scores, 8, 8, 4)
    assert len({x // 32 for x in ours}) <= 4


def test_without_a_limit_tokens_reach_the_expected_number_of_nodes():
    """Eight experts drawn from 256 on 8 nodes of 32 reach
    8 (1 - C(224, 8) / C(256, 8)) nodes on average; the limit caps it."""
    exact = 8 * (1 - math.comb(224, 8) / math.comb(256, 8))
    assert nodes_per_token(2000, 256, 8, 8, 8) == pytest.approx(
        exact, abs=0.05
    )
    assert nodes_per_token(500, 256, 8, 8, 4) <= 4
    assert nodes_per_token(500, 256, 8, 8, 2) == 2


def test_the_smallest_capacity_factor_drops_within_the_limit():
    probs = synthetic_router(1024, 8, seed=5, skew=1.5)
    r = smallest_capacity_factor(probs, 2, max_dropped=0.01)
    assert r["dropped"] <= 0.01 * 2048
    below = route(probs, 2, r["capacity_factor"] - 0.25)
    assert below["dropped"] > 0.01 * 2048
    rows = route(probs, 2, r["capacity_factor"])["capacity"] * 8
    assert r["padding"] == pytest.approx(1 - (2048 - r["dropped"]) / rows)


# --- bad input -------------------------------------------------------------

PROBS = synthetic_router(32, 4, seed=0)
PROB_ROWS = inputs.Kind(
    [
        ([], TypeError),
        (None, TypeError),
        ([[0.5, 0.5], [1.0]], TypeError),
        ([[0.5, "x"]], TypeError),
        ([[0.5, -0.5]], ValueError),
        ([[math.nan, 1.0]], ValueError),
    ]
)
SCORES = inputs.Kind(
    [
        ([], TypeError),
        (None, TypeError),
        ("abc", TypeError),
        ([0.1] * 255 + ["x"], TypeError),
        ([0.1] * 255 + [math.inf], ValueError),
        ([0.1] * 100, ValueError),  # 100 experts do not split over 8 nodes
    ]
)
BAD_INPUT = [
    row(
        synthetic_router,
        {"tokens": 16, "experts": 4},
        experts=inputs.COUNT,
        seed=inputs.Kind([c for c in inputs.COUNT.bad if c[0] != 0]),
        skew=inputs.NON_NEGATIVE,
    ),
    row(
        route,
        {"probs": PROBS, "top_k": 2, "capacity_factor": 1.25},
        probs=PROB_ROWS,
        top_k=inputs.Kind([*inputs.COUNT.bad, (5, ValueError)]),
        capacity_factor=inputs.POSITIVE,
    ),
    row(
        load_balancing_loss,
        {"probs": PROBS},
        probs=PROB_ROWS,
        alpha=inputs.POSITIVE,
    ),
    row(
        moe_alltoall_bytes,
        {
            "micro_batch": 1,
            "seq_len": 4096,
            "hidden": 4096,
            "top_k": 2,
            "ep": 8,
        },
        top_k=inputs.COUNT,
        ep=inputs.COUNT,
    ),
    row(
        ep_layout,
        {"world_size": 64, "ep": 8, "experts": 64},
        world_size=inputs.Kind([*inputs.COUNT.bad, (60, ValueError)]),
        ep=inputs.Kind([*inputs.COUNT.bad, (3, ValueError)]),
        experts=inputs.Kind([*inputs.COUNT.bad, (12, ValueError)]),
    ),
    row(
        node_limited_topk,
        {"scores": [0.1] * 256, "top_k": 8, "nodes": 8, "max_nodes": 4},
        scores=SCORES,
        top_k=inputs.Kind([*inputs.COUNT.bad, (129, ValueError)]),
        nodes=inputs.Kind([*inputs.COUNT.bad, (3, ValueError)]),
        max_nodes=inputs.Kind([*inputs.COUNT.bad, (9, ValueError)]),
    ),
    row(
        nodes_per_token,
        {"tokens": 4, "experts": 256, "top_k": 8, "nodes": 8, "max_nodes": 4},
        experts=inputs.Kind([*inputs.COUNT.bad, (100, ValueError)]),
        top_k=inputs.Kind([*inputs.COUNT.bad, (129, ValueError)]),
        nodes=inputs.Kind([*inputs.COUNT.bad, (3, ValueError)]),
        max_nodes=inputs.Kind([*inputs.COUNT.bad, (9, ValueError)]),
        seed=inputs.Kind([c for c in inputs.COUNT.bad if c[0] != 0]),
    ),
    row(
        smallest_capacity_factor,
        {"probs": PROBS, "top_k": 2},
        probs=PROB_ROWS,
        top_k=inputs.Kind([*inputs.COUNT.bad, (5, ValueError)]),
        max_dropped=inputs.Kind(
            [
                (1, ValueError),
                (-0.1, ValueError),
                *inputs.NOT_FINITE,
                *inputs.NOT_A_NUMBER,
            ]
        ),
        step=inputs.POSITIVE,
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "experts")
