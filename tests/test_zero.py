"""snippets/zero/: model-state memory per GPU and traffic per rank under
DDP, ZeRO-1/2/3 and FSDP, against the ZeRO paper; HSDP (ZeRO-3 inside a
node, replicas across nodes)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from snippets.ddp.allreduce import allreduce_bytes
from snippets.zero.checkpoint import checkpoint_interval
from snippets.zero.fsdp2 import fsdp2_peak_GB, working_set_GB
from snippets.zero.hsdp import hsdp
from snippets.zero.memory import (
    ALIASES,
    RECIPES,
    SHARDED,
    SYNCS,
    memory_per_gpu,
)
from snippets.zero.scale import zero3_seconds
from snippets.zero.traffic import COLLECTIVES, comm_bytes
from tests import lab_inputs as inputs
from tests.lab_inputs import (
    PROFILE,
    REL,
    byte_size,
    many,
    not_a_size,
    optim_bytes,
    params,
    world,
)
from tests.lab_rows import row

B7 = 7_000_000_000
B7_5 = 7_500_000_000
RUNGS = list(SHARDED)  # ddp, zero1, zero2, zero3: the order plan climbs


def paper_formula(strategy, psi, n, k=12):
    """ZeRO paper sec. 5, in bytes (psi parameters, N ranks, K bytes)."""
    return {
        "ddp": (4 + k) * psi,
        "zero1": 4 * psi + k * psi / n,
        "zero2": 2 * psi + (2 + k) * psi / n,
        "zero3": (4 + k) * psi / n,
    }[strategy]


@pytest.mark.parametrize("strategy", list(SHARDED))
@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 64, 256, 1024])
@pytest.mark.parametrize("psi", [1, 7_500_000_000, 128_000_000_000, 10**12])
def test_memory_matches_paper_formulas(strategy, n, psi):
    got = memory_per_gpu(strategy, psi, n)
    want = paper_formula(strategy, psi, n) / 1e9
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("k", [0, 4, 12, 14])
def test_memory_formulas_hold_for_any_optimizer_bytes(k):
    for strategy in SHARDED:
        got = memory_per_gpu(strategy, B7_5, 64, bytes_optim=k)
        want = paper_formula(strategy, B7_5, 64, k) / 1e9
        assert got == pytest.approx(want, rel=1e-12)


def test_zero_paper_figure_1():
    """7.5B parameters, N = 64, K = 12: 120, 31.4, 16.6 and 1.9 GB."""
    row = {s: memory_per_gpu(s, B7_5, 64) for s in SHARDED}
    assert row["ddp"] == 120
    assert f"{row['zero1']:.1f}" == "31.4"
    assert f"{row['zero2']:.1f}" == "16.6"
    assert f"{row['zero3']:.1f}" == "1.9"


# Table 1 of the ZeRO paper: per-device model-state GB against the DP
# degree, for 7.5B, 128B and 1T parameters. The table itself was not in
# the reference material this project could search, so these cells are
# derived from the sec. 5 formulas (GB = 1e9 bytes) and written to one
# decimal at most; the 7.5B row at N = 64 is Figure 1, checked above.
TABLE_1 = {
    # psi: {N: (zero1, zero2, zero3)}
    7_500_000_000: {
        1: ("120", "120", "120"),
        4: ("52.5", "41.3", "30"),
        16: ("35.6", "21.6", "7.5"),
        64: ("31.4", "16.6", "1.88"),
        256: ("30.4", "15.4", "0.47"),
        1024: ("30.1", "15.1", "0.12"),
    },
    128_000_000_000: {
        1: ("2048", "2048", "2048"),
        4: ("896", "704", "512"),
        16: ("608", "368", "128"),
        64: ("536", "284", "32"),
        256: ("518", "263", "8"),
    },
    1_000_000_000_000: {
        1: ("16000", "16000", "16000"),
        4: ("7000", "5500", "4000"),
        16: ("4750", "2875", "1000"),
        64: ("4187.5", "2218.8", "250"),
        256: ("4046.9", "2054.7", "62.5"),
        1024: ("4011.7", "2013.7", "15.6"),
    },
}
TABLE_1_CELLS = [
    (psi, n, strategy, printed)
    for psi, rows in TABLE_1.items()
    for n, cells in rows.items()
    for strategy, printed in zip(
        ("zero1", "zero2", "zero3"), cells, strict=True
    )
]


@pytest.mark.parametrize(("psi", "n", "strategy", "printed"), TABLE_1_CELLS)
def test_zero_paper_table_1(psi, n, strategy, printed):
    """Equal at the printed precision; a tie such as 41.25 may print
    either way (the paper rounds half up, Python's format to even)."""
    half_unit = 0.5 * 10.0 ** -len(printed.partition(".")[2])
    got = memory_per_gpu(strategy, psi, n)
    assert abs(got - float(printed)) <= half_unit * (1 + 1e-9)


def test_limits_are_4x_8x_and_nx():
    """The paper's 4x, 8x and N x savings are limits as N grows."""
    ddp = memory_per_gpu("ddp", B7_5, 10**9)
    assert ddp / memory_per_gpu("zero1", B7_5, 10**9) == pytest.approx(
        4, rel=1e-6
    )
    assert ddp / memory_per_gpu("zero2", B7_5, 10**9) == pytest.approx(
        8, rel=1e-6
    )
    for n in (8, 64, 1000):
        assert ddp / memory_per_gpu("zero3", B7_5, n) == pytest.approx(n)
    assert ddp / memory_per_gpu("zero1", B7_5, 64) < 4


@pytest.mark.parametrize("n", [1, 8, 64])
def test_fsdp_is_zero3(n):
    assert ALIASES == {"fsdp": "zero3"}
    assert memory_per_gpu("fsdp", B7, n) == memory_per_gpu("zero3", B7, n)


def test_one_rank_shards_nothing():
    values = {memory_per_gpu(s, B7, 1) for s in [*SHARDED, *ALIASES]}
    assert values == {112.0}


def test_zero_optimizer_bytes_is_allowed():
    assert memory_per_gpu("ddp", B7, 8, bytes_optim=0) == 28


@pytest.mark.parametrize("n", [2, 8, 64])
def test_traffic_zero3_is_one_and_a_half_ddp(n):
    """ZeRO paper sec. 7: 2 psi for DDP, ZeRO-1 and ZeRO-2; 3 psi for
    ZeRO-3 (an all-gather in forward, another in backward, and a
    reduce-scatter)."""
    ddp = comm_bytes("ddp", B7, n)
    assert ddp == pytest.approx(allreduce_bytes(B7, 2, n)["sent_per_rank_GB"])
    assert comm_bytes("zero1", B7, n) == ddp
    assert comm_bytes("zero2", B7, n) == ddp
    assert comm_bytes("zero3", B7, n) == pytest.approx(1.5 * ddp)
    assert comm_bytes("fsdp", B7, n) == comm_bytes("zero3", B7, n)
    assert set(COLLECTIVES) == set(SHARDED)


@pytest.mark.parametrize("a", [1, 2, 8, 64])
def test_traffic_under_accumulation(a):
    """DDP and ZeRO-1 reduce once per step (DeepSpeed's engine: only at
    the accumulation boundary); ZeRO-2 reduce-scatters after every
    micro-batch (DeepSpeed #2252: stage 2 and up reduce after every
    backward); ZeRO-3 repeats its three collectives per micro-batch."""
    one = comm_bytes("ddp", B7, 64) / 2  # a single collective
    assert comm_bytes("ddp", B7, 64, accum_steps=a) == 2 * one
    assert comm_bytes("zero1", B7, 64, accum_steps=a) == 2 * one
    assert comm_bytes("zero2", B7, 64, accum_steps=a) == (a + 1) * one
    assert comm_bytes("zero3", B7, 64, accum_steps=a) == pytest.approx(
        3 * a * one
    )


@pytest.mark.parametrize("a", [1, 2, 8, 64])
def test_reducing_once_costs_zero2_and_zero3_their_gradient_shards(a):
    """sync="step" (FSDP2's set_requires_gradient_sync(False)): one
    reduce-scatter per step; ZeRO-3 still gathers twice per micro-batch.
    The price is the whole gradient, held until the last micro-batch."""
    one = comm_bytes("ddp", B7, 64) / 2
    for s in ("ddp", "zero1", "zero2"):
        assert comm_bytes(s, B7, 64, accum_steps=a, sync="step") == 2 * one
    assert comm_bytes(
        "zero3", B7, 64, accum_steps=a, sync="step"
    ) == pytest.approx((2 * a + 1) * one)
    assert memory_per_gpu("zero2", B7, 64, sync="step") == memory_per_gpu(
        "zero1", B7, 64
    )
    whole = memory_per_gpu("zero3", B7, 64, sync="step")
    assert whole == pytest.approx(
        memory_per_gpu("zero3", B7, 64) + 2 * B7 * 63 / 64 / 1e9
    )


def test_fsdp_with_deferred_sync_sends_what_torchrun_measured():
    """docs/torchrun.md: FSDP on 2 ranks, 2 micro-batches, syncing the
    last one, sends 2.5 times DDP's bytes (4 gathers, 1 reduce-scatter);
    reducing both micro-batches it would send 3.0 times."""
    ddp = comm_bytes("ddp", B7, 2)
    deferred = comm_bytes("fsdp", B7, 2, accum_steps=2, sync="step")
    assert deferred / ddp == 2.5
    assert comm_bytes("fsdp", B7, 2, accum_steps=2) / ddp == 3.0


def test_ddp_that_forgets_no_sync_reduces_every_micro_batch():
    ddp = comm_bytes("ddp", B7, 64)
    every = comm_bytes("ddp", B7, 64, accum_steps=8, sync="micro-batch")
    assert every == pytest.approx(8 * ddp)


# DeepSpeed 0.19.8's estimators without offload, run on these inputs:
# estimate_zero2_model_states_mem_needs (2P + 18P/N GPU bytes) and
# estimate_zero3_model_states_mem_needs (18P/N + 4 x largest layer).
LARGEST = 218_103_808  # parameters of the largest layer, for ZeRO-3
DEEPSPEED = [
    ("zero2", 1, 140_000_000_000),
    ("zero2", 8, 29_750_000_000),
    ("zero2", 64, 15_968_750_000),
    ("zero3", 8, 16_622_415_232),
    ("zero3", 64, 2_841_165_232),
]


@pytest.mark.parametrize(("stage", "n", "deepspeed_bytes"), DEEPSPEED)
def test_deepspeed_estimators(stage, n, deepspeed_bytes):
    """DeepSpeed's ZeRO-2 count is bytes_grad=6 (a 16-bit and an fp32
    gradient, both sharded): 20 bytes per parameter on one GPU, not 18.
    Its ZeRO-3 count is bytes_grad=4, plus the largest layer gathered
    whole in fp32."""
    if stage == "zero2":
        ours = memory_per_gpu("zero2", B7, n, bytes_grad=6) * 1e9
    else:
        ours = memory_per_gpu("zero3", B7, n, bytes_grad=4) * 1e9
        ours += 4 * LARGEST
    assert ours == pytest.approx(deepspeed_bytes, abs=1)
    assert memory_per_gpu("zero2", B7, 1, bytes_grad=6) == 20 * B7 / 1e9


# --- HSDP -------------------------------------------------------------------


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


def test_hsdp_reducing_in_fp32_doubles_what_crosses_nodes():
    """MixedPrecisionPolicy(reduce_dtype=float32), the torchrun page's
    policy: the cross-node all-reduce moves 4P/G bytes, not 2P/G; the
    in-node rings move 2 + 2 + 4 bytes per parameter, not 6."""
    bf16, fp32 = hsdp(B7, 8, 8), hsdp(B7, 8, 8, bytes_reduce=4)
    assert fp32["inter_node_GB"] == pytest.approx(2 * bf16["inter_node_GB"])
    assert fp32["intra_node_GB"] == pytest.approx(
        bf16["intra_node_GB"] * 8 / 6
    )
    assert fp32["state_GB"] == bf16["state_GB"]


@pytest.mark.parametrize("a", [1, 2, 8])
def test_hsdp_can_defer_only_its_all_reduce(a):
    """set_requires_all_reduce(False): the in-node reduce-scatter runs
    every micro-batch, the all-reduce across nodes once per step."""
    once = hsdp(B7, 8, 8, accum_steps=a, all_reduce="step")
    every = hsdp(B7, 8, 8, accum_steps=a)
    assert once["inter_node_GB"] == hsdp(B7, 8, 8)["inter_node_GB"]
    assert every["inter_node_GB"] == pytest.approx(a * once["inter_node_GB"])
    assert once["intra_node_GB"] == every["intra_node_GB"]
    assert once["intra_node_GB"] == pytest.approx(
        a * hsdp(B7, 8, 8)["intra_node_GB"]
    )


def test_fsdp2_holds_its_shard_and_three_units():
    """Default: the sharded 16 bytes, two gathered units (the running
    one and the prefetched next) and the running unit's gradient, in
    bf16: 6 bytes per unit parameter, as the planner counts it."""
    unit = 12 * 4096**2
    got = fsdp2_peak_GB(B7, 64, unit)
    assert got == pytest.approx((16 * B7 / 64 + 6 * unit) / 1e9)
    assert fsdp2_peak_GB(B7, 64, unit, prefetch=2) == pytest.approx(
        got + 2 * unit / 1e9
    )
    assert fsdp2_peak_GB(B7, 64, unit, cpu_offload=True) == pytest.approx(
        6 * unit / 1e9
    )


def test_a_unit_larger_than_the_model_is_refused():
    with pytest.raises(ValueError, match="unit_params"):
        fsdp2_peak_GB(10**9, 8, 2 * 10**9)


def test_keeping_units_gathered_holds_the_whole_model():
    """reshard_after_forward=False: every unit gathered at the turn from
    forward to backward; an int r keeps 1/r of them."""
    unit = 12 * 4096**2
    kept = fsdp2_peak_GB(B7, 64, unit, reshard_after_forward=False)
    assert kept == pytest.approx((16 * B7 / 64 + 2 * B7 + 2 * unit) / 1e9)
    node = fsdp2_peak_GB(B7, 64, unit, reshard_after_forward=8)
    assert node == pytest.approx(
        fsdp2_peak_GB(B7, 64, unit) + 2 * B7 / 8 / 1e9
    )
    assert fsdp2_peak_GB(B7, 64, unit) < node < kept


def test_the_sharded_state_is_memory_per_gpu_of_the_fp32_recipe():
    """16 bytes: fp32 shards, fp32 gradients, Adam's two moments."""
    unit = 12 * 4096**2
    state = fsdp2_peak_GB(B7, 64, unit) - 6 * unit / 1e9
    assert state == pytest.approx(memory_per_gpu("fsdp", B7, 64, 4, 4, 8))


def test_recipes_save_at_most_4x_8x_or_2x_4x():
    """ZeRO-1 and ZeRO-2 cut DDP's state at most by (bp + bg + bo) /
    (bp + bg) and (bp + bg + bo) / bp: 4 and 8 for the paper's mixed
    precision, 2 and 4 for fp32 weights and gradients."""
    limits = {"bf16 + fp32 master": (4, 8), "fp32": (2, 4)}
    for recipe, sizes in RECIPES.items():
        ddp = memory_per_gpu("ddp", B7, 10**12, *sizes)
        cuts = [
            ddp / memory_per_gpu(s, B7, 10**12, *sizes)
            for s in ("zero1", "zero2")
        ]
        assert cuts == pytest.approx(limits[recipe], rel=1e-9)


def test_zero3_at_scale_is_bytes_over_the_ring_and_3l_latencies():
    """GPT-3 175B on 1,536 A100s in DGX nodes (8 HDR NICs, what NCCL
    reaches): a flat ring at 8 x 24 = 192 GB/s; each GPU alone, 24."""
    args = (174.6e9, 96, 1536, 8, 230, 8, 24)
    flat = zero3_seconds(*args)
    sent = comm_bytes("zero3", 174.6e9, 1536)
    assert flat["bytes_s"] == pytest.approx(sent / 192)
    steps = (191 * 9.6 + 1344 * 3.4) * 1e-6  # 192 nodes, 1,535 steps
    assert flat["latency_s"] == pytest.approx(3 * 96 * steps)
    alone = zero3_seconds(*args, per_node=1)
    assert alone["bytes_s"] == pytest.approx(sent / 24)
    assert alone["latency_s"] == pytest.approx(3 * 96 * 1535 * 9.6e-6)
    two = zero3_seconds(*args, microbatches=2)
    assert two["latency_s"] == pytest.approx(2 * flat["latency_s"])


# --- for any valid input ---------------------------------------------------


@PROFILE
@given(params, world, byte_size, byte_size, optim_bytes)
def test_zero3_times_n_is_ddp(psi, n, bp, bg, bo):
    per_gpu = memory_per_gpu("zero3", psi, n, bp, bg, bo)
    whole = memory_per_gpu("ddp", psi, n, bp, bg, bo)
    assert per_gpu * n == pytest.approx(whole, rel=REL)
    assert memory_per_gpu("fsdp", psi, n, bp, bg, bo) == per_gpu


@PROFILE
@given(params, many, byte_size, byte_size, optim_bytes)
def test_each_stage_holds_no_more_than_the_one_before(psi, n, bp, bg, bo):
    row = [memory_per_gpu(s, psi, n, bp, bg, bo) for s in RUNGS]
    for before, after in zip(row, row[1:], strict=False):
        assert after <= before * (1 + REL)
    # Sharding something that has a size saves memory (when it is not
    # lost in the rounding of the sum: a 1e-284-byte optimizer is).
    assert row[3] < row[0]
    if bo > 1e-6 * (bp + bg):
        assert row[1] < row[0]


@PROFILE
@given(params, byte_size, byte_size, optim_bytes)
def test_one_rank_shards_nothing_for_any_sizes(psi, bp, bg, bo):
    row = {memory_per_gpu(s, psi, 1, bp, bg, bo) for s in RUNGS}
    assert max(row) == pytest.approx(min(row), rel=REL)


@PROFILE
@given(params, world, st.integers(min_value=2, max_value=1000))
def test_memory_is_linear_in_the_parameters(psi, n, k):
    for s in RUNGS:
        assert memory_per_gpu(s, psi * k, n) == pytest.approx(
            k * memory_per_gpu(s, psi, n), rel=REL
        )


# --- bad input -------------------------------------------------------------

STRATEGY = inputs.strategy((*SHARDED, *ALIASES))
# when gradients are reduced; None (the default) is the stage's own
SYNC = inputs.Kind(
    [
        ("", ValueError),
        ("every", ValueError),
        ("Step", ValueError),
        ("micro_batch", ValueError),
        (3, TypeError),
        (b"step", TypeError),
    ],
    SYNCS,
)
BAD_INPUT = [
    row(
        memory_per_gpu,
        {"strategy": "zero2", "params": B7, "world_size": 8},
        strategy=STRATEGY,
        sync=SYNC,
    ),
    row(
        comm_bytes,
        {"strategy": "zero3", "params": B7, "world_size": 64},
        strategy=STRATEGY,
        sync=SYNC,
    ),
    row(
        hsdp,
        {"params": B7, "gpus_per_node": 8, "nodes": 8},
        nodes=inputs.COUNT,
        bytes_reduce=inputs.Kind(
            [b for b in inputs.POSITIVE.bad if b[0] is not None]
        ),
        all_reduce=SYNC,
        # **bytes_per_param, passed on to memory_per_gpu
        bytes_param=inputs.POSITIVE,
        bytes_optim=inputs.NON_NEGATIVE,
    ),
    row(
        working_set_GB,
        {"unit_params": 12 * 4096**2},
        prefetch=inputs.Kind([(c, e) for c, e in inputs.COUNT.bad if c != 0]),
    ),
    row(
        fsdp2_peak_GB,
        {"params": B7, "world_size": 64, "unit_params": 12 * 4096**2},
        # True, False, or a divisor of world_size other than 1 and it
        reshard_after_forward=inputs.Kind(
            [
                (1, ValueError),
                (0, ValueError),
                (3, ValueError),
                (64, ValueError),
                (128, ValueError),
                (2.0, TypeError),
                ("8", TypeError),
                (None, TypeError),
            ]
        ),
        prefetch=inputs.Kind([(c, e) for c, e in inputs.COUNT.bad if c != 0]),
        cpu_offload=inputs.FLAG,
        bytes_state=inputs.POSITIVE,
    ),
    row(
        zero3_seconds,
        {
            "params": 174.6e9,
            "layers": 96,
            "world_size": 1536,
            "gpus_per_node": 8,
            "nvlink_GBps": 230,
            "nics_per_node": 8,
            "nic_GBps": 24,
        },
        per_node=inputs.OPTIONAL_COUNT,
    ),
    row(
        checkpoint_interval,
        {"mtbf_s": 10_000, "blocking_s": 60},
        mtbf_s=inputs.POSITIVE,
        blocking_s=inputs.POSITIVE,
    ),
]


TestBadInput = inputs.bad_input_tests(BAD_INPUT, "zero")


def test_youngs_interval_is_the_optimum():
    """sqrt(2 M C) minimises C / T + T / (2 M): nearby intervals lose
    more, and the two losses are equal at the optimum."""
    mtbf, c = 54 * 86_400 / 466, 60
    best = checkpoint_interval(mtbf, c)
    assert best["interval_s"] == pytest.approx((2 * mtbf * c) ** 0.5)

    def lost(t):
        return c / t + t / (2 * mtbf)

    t = best["interval_s"]
    assert best["lost_share"] == pytest.approx(lost(t))
    assert lost(0.9 * t) > lost(t) < lost(1.1 * t)
    assert c / t == pytest.approx(t / (2 * mtbf))


@PROFILE
@given(not_a_size)
def test_any_non_positive_size_is_refused(bad):
    with pytest.raises(ValueError, match="params"):
        memory_per_gpu("zero3", bad, 8)


@PROFILE
@given(st.integers(max_value=0))
def test_any_world_size_below_one_is_refused(bad):
    with pytest.raises(ValueError, match="world_size"):
        memory_per_gpu("ddp", 1e9, bad)


@pytest.mark.parametrize("preset", ["llama3-8b", "llama3-70b", "llama3-405b"])
@pytest.mark.parametrize("tp", [1, 4, 8])
def test_fsdp_working_set_is_the_planners(preset, tp):
    """The planner's ZeRO-3 memory counts the same working set: two
    gathered units and one unsharded gradient, in bf16, for the larger
    of a layer and the embedding on each tensor-parallel rank."""
    from snippets.planner.cost import layer_shape
    from snippets.planner.layouts import evaluate_layout
    from snippets.planner.model import MODELS, check_model, cluster

    model = MODELS[preset]
    layout = {
        "dp": 64 // tp,
        "tp": tp,
        "pp": 1,
        "zero": 3,
        "recompute": "full",
    }
    job = {"global_batch_tokens": 2**22, "micro_batch": 1}
    got = evaluate_layout(model, cluster("h100-80gb", 8), job, layout)
    m = check_model(model)
    unit = max(layer_shape(m).params / tp, m.vocab * m.hidden / tp)
    assert got["memory_per_gpu_GB"]["gathered"] == pytest.approx(
        working_set_GB(unit)
    )
