"""Unit tests for every lab function in snippets/.

Two halves: the worked figures the pages quote (the seed lesson's, the
corrected ones from the reference facts, and the ZeRO paper's), then a
table-driven sweep of bad inputs over every public argument of every
lab function. The sweep reports how many bad inputs it tried.
"""

import contextlib
import importlib
import inspect
import io
import math
import re
import subprocess
import sys
from fractions import Fraction

import pytest

from course.fences import ROOT
from snippets import checks
from snippets.accumulation.batch import effective_batch
from snippets.comms.cost import LINKS_GBps, comms_cost
from snippets.ddp.allreduce import allreduce_bytes
from snippets.pipeline.bubble import SCHEDULES, bubble_fraction, megatron_ratio
from snippets.pipeline.schedule import (
    KINDS,
    idle_fraction,
    peak_in_flight,
    pipeline_schedule,
)
from snippets.strategy.choose import RUNGS, choose_strategy
from snippets.strategy.plan import plan
from snippets.walls.walls import state_GB, training_days
from snippets.zero.memory import ALIASES, SHARDED, memory_per_gpu
from snippets.zero.traffic import COLLECTIVES, comm_bytes

B7 = 7_000_000_000
B7_5 = 7_500_000_000
LAB_MODULES = (
    "snippets.walls.walls",
    "snippets.ddp.allreduce",
    "snippets.zero.memory",
    "snippets.zero.traffic",
    "snippets.pipeline.bubble",
    "snippets.pipeline.schedule",
    "snippets.accumulation.batch",
    "snippets.comms.cost",
    "snippets.strategy.choose",
    "snippets.strategy.plan",
)


def shown(value, digits):
    """`value` as a page prints it with `digits` decimals."""
    return f"{value:.{digits}f}"


# --- walls -----------------------------------------------------------------


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


# --- ddp: ring all-reduce --------------------------------------------------


@pytest.mark.parametrize(
    ("world_size", "factor", "sent_GB"),
    [(8, 1.75, 24.5), (64, 1.96875, 27.5625), (2, 1.0, 14.0), (1, 0.0, 0)],
)
def test_allreduce_7b_bf16(world_size, factor, sent_GB):
    r = allreduce_bytes(B7, bytes_per_grad=2, world_size=world_size)
    assert r["grad_GB"] == 14.0
    assert r["factor"] == factor
    assert r["sent_per_rank_GB"] == pytest.approx(sent_GB, abs=1e-12)


def test_allreduce_defaults_are_bf16_on_eight_ranks():
    assert allreduce_bytes(B7) == allreduce_bytes(B7, 2, 8)


def test_allreduce_fp32_gradients_double_every_figure():
    bf16 = allreduce_bytes(B7, bytes_per_grad=2)
    fp32 = allreduce_bytes(B7, bytes_per_grad=4)
    assert fp32["grad_GB"] == 2 * bf16["grad_GB"]
    assert fp32["sent_per_rank_GB"] == 2 * bf16["sent_per_rank_GB"]
    assert fp32["factor"] == bf16["factor"]


# --- zero: model-state memory per GPU --------------------------------------


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
    assert shown(row["zero1"], 1) == "31.4"
    assert shown(row["zero2"], 1) == "16.6"
    assert shown(row["zero3"], 1) == "1.9"


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


# --- pipeline: bubble ------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "percent"), [(1, "75.0%"), (4, "42.9%"), (16, "15.8%"), (64, "4.5%")]
)
def test_gpipe_bubble_of_four_stages(m, percent):
    fraction = bubble_fraction(4, m)
    assert f"{fraction:.1%}" == percent
    assert fraction == pytest.approx(3 / (m + 3))


@pytest.mark.parametrize("p", [1, 2, 4, 8])
@pytest.mark.parametrize("m", [1, 4, 16, 64])
def test_1f1b_idles_as_long_as_gpipe(p, m):
    assert bubble_fraction(p, m, "1f1b") == bubble_fraction(p, m, "gpipe")


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("m", [1, 4, 16, 64])
def test_megatron_ratio_is_p_minus_1_over_m(p, m):
    """Megatron-LM 2021 sec. 2.2: bubble / ideal time = (p - 1) / m."""
    ratio = megatron_ratio(bubble_fraction(p, m))
    assert ratio == pytest.approx((p - 1) / m, rel=1e-12)


@pytest.mark.parametrize("v", [1, 2, 4])
@pytest.mark.parametrize("m", [1, 8, 32])
def test_interleaved_ratio_is_p_minus_1_over_v_m(v, m):
    p = 4
    fraction = bubble_fraction(p, m, schedule="interleaved", chunks=v)
    assert megatron_ratio(fraction) == pytest.approx((p - 1) / (v * m))


def test_interleaved_with_one_chunk_is_gpipe():
    assert bubble_fraction(4, 8, "interleaved", 1) == bubble_fraction(4, 8)


def test_megatron_ratio_edges():
    assert megatron_ratio(0) == 0
    assert megatron_ratio(0.5) == 1
    assert megatron_ratio(0.75) == pytest.approx(3)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("p", "m"), [(1, 1), (2, 3), (4, 8), (4, 16)])
def test_simulated_schedule_idles_as_the_formula_says(kind, p, m):
    """With backward = 2 x forward (the default), the slot-by-slot
    schedule idles exactly (p - 1) / (m + p - 1) of the step."""
    slots = pipeline_schedule(p, m, kind)
    assert idle_fraction(slots) == pytest.approx(bubble_fraction(p, m, kind))
    assert len(slots) == 2 * p * m


def test_1f1b_keeps_at_most_p_microbatches_in_flight():
    gpipe, one_f_one_b = (pipeline_schedule(4, 8, k) for k in KINDS)
    assert [peak_in_flight(gpipe, s) for s in range(4)] == [8] * 4
    assert [peak_in_flight(one_f_one_b, s) for s in range(4)] == [4, 3, 2, 1]


def test_one_stage_has_no_bubble():
    for schedule in SCHEDULES:
        assert bubble_fraction(1, 4, schedule) == 0


# --- accumulation ----------------------------------------------------------


def test_effective_batch_of_the_pages():
    small = effective_batch(micro_batch=2, accum_steps=16, world_size=8)
    assert small == {
        "effective_batch": 256,
        "optimizer_steps_per_1M_samples": 3906.25,
    }
    large = effective_batch(1, 32, 64, seq_len=4096)
    assert large["effective_batch"] == 2048
    assert large["tokens_per_step"] == 8_388_608
    assert large["optimizer_steps_per_1M_samples"] == pytest.approx(488.28125)


def test_halving_micro_batch_and_doubling_accumulation_keeps_the_batch():
    assert (
        effective_batch(1, 32, 8)["effective_batch"]
        == effective_batch(2, 16, 8)["effective_batch"]
    )


def test_no_seq_len_no_tokens():
    assert "tokens_per_step" not in effective_batch(2, 16, 8)


# --- comms -----------------------------------------------------------------


def test_seed_compute_time_needs_8192_tokens_per_gpu():
    """Seed: 1.147 s of compute at 300 TFLOP/s, 8192 tokens per GPU."""
    r = comms_cost(B7, 64, tflops_per_gpu=300, interconnect_GBps=450)
    assert round(r["compute_s"], 3) == 1.147
    assert r["compute_s"] == pytest.approx(6 * B7 * 8192 / 300e12)
    # Dividing the 8192 tokens over the 64 ranks instead would give:
    split = comms_cost(B7, 64, 300, 450, tokens_per_gpu=8192 // 64)
    assert split["compute_s"] == pytest.approx(r["compute_s"] / 64)


def test_links_are_one_way():
    links = LINKS_GBps
    ethernet_10 = [bw for n, bw in links.items() if "10 Gb/s" in n]
    ethernet_100 = [bw for n, bw in links.items() if "100 Gb/s" in n]
    nvlink3 = [bw for n, bw in links.items() if "NVLink 3" in n]
    nvlink4 = [bw for n, bw in links.items() if "NVLink 4" in n]
    ndr = [bw for n, bw in links.items() if "NDR" in n]
    assert ethernet_10 == [1.25]  # 10 Gb/s / 8 bits
    assert ethernet_100 == [12.5]
    assert nvlink3 == [600 / 2]  # A100's 600 GB/s is both ways together
    assert nvlink4 == [900 / 2]
    assert ndr == [400 / 8]


@pytest.mark.parametrize(
    ("link_GBps", "seconds", "digits"),
    [
        (1.25, "22.05", 2),  # real 10 GbE: ~22 s, not the seed's 2.2 s
        (12.5, "2.205", 3),  # what the seed computed: 100 GbE
        (600, "0.046", 3),  # the seed's NVLink figure, a two-way total
        (300, "0.092", 3),  # the same NVLink 3, one way
    ],
)
def test_allreduce_time_of_7b_on_64_ranks(link_GBps, seconds, digits):
    r = comms_cost(B7, 64, tflops_per_gpu=300, interconnect_GBps=link_GBps)
    assert shown(r["comms_s"], digits) == seconds
    assert r["comms_s"] == pytest.approx(27.5625 / link_GBps)


def test_verdicts_of_the_seed_example():
    fast = comms_cost(B7, 64, 300, 300)
    slow = comms_cost(B7, 64, 300, 1.25)
    assert fast["verdict"] == "compute-bound"
    assert slow["verdict"] == "comms-bound"
    # 100 GbE: 2.205 s of all-reduce against 1.147 s of compute.
    assert comms_cost(B7, 64, 300, 12.5)["verdict"] == "comms-bound"


def test_crossover_is_where_the_two_times_meet():
    r = comms_cost(B7, 64, 300, 100)
    at = comms_cost(B7, 64, 300, r["crossover_GBps"])
    assert at["comms_s"] == pytest.approx(at["compute_s"])
    assert r["crossover_GBps"] == pytest.approx(27.5625 / r["compute_s"])


def test_accumulation_adds_compute_not_comms():
    one = comms_cost(B7, 64, 300, 12.5)
    four = comms_cost(B7, 64, 300, 12.5, accum_steps=4)
    assert four["compute_s"] == pytest.approx(4 * one["compute_s"])
    assert four["comms_s"] == one["comms_s"]
    assert four["crossover_GBps"] == pytest.approx(one["crossover_GBps"] / 4)
    assert four["verdict"] == "compute-bound"


# --- strategy --------------------------------------------------------------


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


# --- labs run as readers run them ------------------------------------------


def discovered_modules():
    """Every module under snippets/<page>/, bar the torchrun ones (they
    need torch and torchrun; tests/test_train.py runs them)."""
    for path in sorted((ROOT / "snippets").glob("*/*.py")):
        if path.parent.name != "torchrun" and path.stem != "__init__":
            yield ".".join(path.relative_to(ROOT).with_suffix("").parts)


def is_lab(module):
    """A lab has a demo section that readers run with python -m."""
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    return "[start:demo]" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("module", list(discovered_modules()))
def test_module_imports_quietly(module):
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        importlib.reload(importlib.import_module(module))
    assert quiet.getvalue() == "", f"importing {module} printed"


@pytest.mark.parametrize(
    "module", [m for m in discovered_modules() if is_lab(m)]
)
def test_lab_runs_as_a_script(module):
    run = subprocess.run(
        [sys.executable, "-m", module],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip(), f"python -m {module} printed nothing"


# --- bad input -------------------------------------------------------------
#
# Each kind of argument gets the bad values that kind must refuse,
# paired with the error type it must raise. Every error message must
# name the argument; for names, it must also list what is allowed.

NAN, INF = math.nan, math.inf
NOT_A_NUMBER = [
    ("8", TypeError),
    (None, TypeError),
    (True, TypeError),
    (False, TypeError),
    ([8], TypeError),
    (complex(8, 0), TypeError),
    (b"8", TypeError),
]
NOT_FINITE = [(NAN, ValueError), (INF, ValueError), (-INF, ValueError)]
BAD = {
    # a size: a finite real number > 0
    "positive": [
        (0, ValueError),
        (0.0, ValueError),
        (-1, ValueError),
        (-1e-9, ValueError),
        *NOT_FINITE,
        *NOT_A_NUMBER,
    ],
    # a size that may be 0 (optimizer bytes: 0 for plain SGD)
    "non_negative": [(-1, ValueError), (-1e-9, ValueError)]
    + NOT_FINITE
    + NOT_A_NUMBER,
    # a share in (0, 1]: mfu, usable
    "share": [
        (0, ValueError),
        (-0.1, ValueError),
        (1.0001, ValueError),
        (40, ValueError),
        *NOT_FINITE,
        *NOT_A_NUMBER,
    ],
    # a fraction in [0, 1): the bubble fraction
    "fraction": [
        (-0.1, ValueError),
        (1, ValueError),
        (1.5, ValueError),
        *NOT_FINITE,
        *NOT_A_NUMBER,
    ],
    # a whole count >= 1 (GPUs, stages, steps, tokens)
    "count": [
        (0, ValueError),
        (-1, ValueError),
        (-64, ValueError),
        (1.5, TypeError),
        (8.0, TypeError),
        (Fraction(8), TypeError),
        (NAN, TypeError),
        (INF, TypeError),
        *NOT_A_NUMBER,
    ],
    "flag": [
        (1, TypeError),
        (0, TypeError),
        ("True", TypeError),
        ("no", TypeError),
        (None, TypeError),
        (1.0, TypeError),
    ],
    "strategy": [
        ("zero4", ValueError),
        ("ZeRO-3", ValueError),
        ("DDP", ValueError),
        ("", ValueError),
        (" ddp", ValueError),
        (None, TypeError),
        (3, TypeError),
        (b"ddp", TypeError),
        (["ddp"], TypeError),
    ],
    "schedule": [
        ("GPipe", ValueError),
        ("1F1B", ValueError),
        ("zero-bubble", ValueError),
        ("", ValueError),
        (None, TypeError),
        (1, TypeError),
    ],
    # the slots of one step, as pipeline_schedule returns them
    "slots": [
        ([], ValueError),
        (None, TypeError),
        (4, TypeError),
        ("FB", TypeError),
        ([(0, 0, 1, "F", 0)], TypeError),
    ],
    # a stage of the 4-stage schedule below: an int in 0..3
    "stage_index": [
        (-1, ValueError),
        (4, ValueError),
        (99, ValueError),
        (1.0, TypeError),
        ("0", TypeError),
        (None, TypeError),
        (True, TypeError),
    ],
}
# a count that may be left out (None means "not given")
BAD["optional_count"] = [c for c in BAD["count"] if c[0] is not None]
BAD["slot_kind"] = BAD["schedule"]  # pipeline_schedule's two schedules
ALLOWED = {
    "strategy": [*SHARDED, *ALIASES],
    "schedule": list(SCHEDULES),
    "slot_kind": list(KINDS),
}
FOUR_STAGES = pipeline_schedule(4, 8)

# function -> (valid keyword arguments, {argument: kind})
SPECS = {
    "walls.state_GB": (
        state_GB,
        {"params": B7, "bytes_per_param": 16},
        {"params": "positive", "bytes_per_param": "positive"},
    ),
    "walls.training_days": (
        training_days,
        {
            "params": B7,
            "tokens": 2 * 10**12,
            "gpus": 64,
            "peak_tflops": 989,
            "mfu": 0.4,
        },
        {
            "params": "positive",
            "tokens": "positive",
            "gpus": "count",
            "peak_tflops": "positive",
            "mfu": "share",
        },
    ),
    "ddp.allreduce_bytes": (
        allreduce_bytes,
        {"param_count": B7, "bytes_per_grad": 2, "world_size": 8},
        {
            "param_count": "positive",
            "bytes_per_grad": "positive",
            "world_size": "count",
        },
    ),
    "zero.memory_per_gpu": (
        memory_per_gpu,
        {"strategy": "zero2", "params": B7, "world_size": 8},
        {
            "strategy": "strategy",
            "params": "positive",
            "world_size": "count",
            "bytes_param": "positive",
            "bytes_grad": "positive",
            "bytes_optim": "non_negative",
        },
    ),
    "zero.comm_bytes": (
        comm_bytes,
        {"strategy": "zero3", "params": B7, "world_size": 64},
        {
            "strategy": "strategy",
            "params": "positive",
            "world_size": "count",
            "bytes_per_value": "positive",
        },
    ),
    "pipeline.bubble_fraction": (
        bubble_fraction,
        {"stages": 4, "microbatches": 8, "schedule": "interleaved"},
        {
            "stages": "count",
            "microbatches": "count",
            "schedule": "schedule",
            "chunks": "count",
        },
    ),
    "pipeline.pipeline_schedule": (
        pipeline_schedule,
        {"stages": 4, "microbatches": 8, "schedule": "1f1b"},
        {
            "stages": "count",
            "microbatches": "count",
            "schedule": "slot_kind",
            "forward": "count",
            "backward": "count",
        },
    ),
    "pipeline.idle_fraction": (
        idle_fraction,
        {"slots": FOUR_STAGES},
        {"slots": "slots"},
    ),
    "pipeline.peak_in_flight": (
        peak_in_flight,
        {"slots": FOUR_STAGES, "stage": 0},
        {"slots": "slots", "stage": "stage_index"},
    ),
    "pipeline.megatron_ratio": (
        megatron_ratio,
        {"fraction": 0.5},
        {"fraction": "fraction"},
    ),
    "accumulation.effective_batch": (
        effective_batch,
        {"micro_batch": 2, "accum_steps": 16, "world_size": 8},
        {
            "micro_batch": "count",
            "accum_steps": "count",
            "world_size": "count",
            "seq_len": "optional_count",
        },
    ),
    "comms.comms_cost": (
        comms_cost,
        {
            "params": B7,
            "world_size": 64,
            "tflops_per_gpu": 300,
            "interconnect_GBps": 12.5,
        },
        {
            "params": "positive",
            "world_size": "count",
            "tflops_per_gpu": "positive",
            "interconnect_GBps": "positive",
            "tokens_per_gpu": "count",
            "bytes_per_grad": "positive",
            "flops_per_token_per_param": "positive",
            "accum_steps": "count",
        },
    ),
    "strategy.choose_strategy": (
        choose_strategy,
        {
            "model_fits_one_gpu": True,
            "state_fits_one_gpu": False,
            "layer_fits_one_gpu": True,
            "multi_node": False,
        },
        {
            "model_fits_one_gpu": "flag",
            "state_fits_one_gpu": "flag",
            "layer_fits_one_gpu": "flag",
            "multi_node": "flag",
        },
    ),
    "strategy.plan": (
        plan,
        {"params": B7, "world_size": 8, "gpu_GB": 80},
        {
            "params": "positive",
            "world_size": "count",
            "gpu_GB": "positive",
            "usable": "share",
            # **bytes_per_param, passed on to memory_per_gpu
            "bytes_param": "positive",
            "bytes_grad": "positive",
            "bytes_optim": "non_negative",
        },
    ),
    # The validators themselves, called with a reader-facing name.
    "checks.number": (
        lambda value: checks.number("tflops", value),
        {"value": 1.0},
        {"tflops": "positive"},
    ),
    "checks.number(allow_minimum)": (
        lambda value: checks.number("bytes", value, allow_minimum=True),
        {"value": 0},
        {"bytes": "non_negative"},
    ),
    "checks.count": (
        lambda value: checks.count("gpus", value),
        {"value": 1},
        {"gpus": "count"},
    ),
    "checks.flag": (
        lambda value: checks.flag("multi_node", value),
        {"value": False},
        {"multi_node": "flag"},
    ),
    "checks.choice": (
        lambda value: checks.choice("strategy", value, ALLOWED["strategy"]),
        {"value": "ddp"},
        {"strategy": "strategy"},
    ),
}

# Arguments of the checks helpers that lab code sets, not readers: the
# label used in messages, the bound and the list of allowed names.
SET_BY_LAB_CODE = {
    ("number", "name"),
    ("number", "minimum"),
    ("number", "allow_minimum"),
    ("count", "name"),
    ("count", "minimum"),
    ("flag", "name"),
    ("choice", "name"),
    ("choice", "allowed"),
}


def bad_cases():
    cases = []
    for label, (_, _, kinds) in SPECS.items():
        for argument, kind in kinds.items():
            for value, error in BAD[kind]:
                case_id = f"{label}-{argument}={value!r}"
                cases.append(
                    pytest.param(
                        label, argument, kind, value, error, id=case_id
                    )
                )
    return cases


BAD_CASES = bad_cases()
TRIED = []


@pytest.fixture(scope="module")
def tally():
    """Counts the bad inputs actually tried; prints at module teardown."""
    yield TRIED
    if TRIED:
        print(f"\nbad inputs tried in this run: {len(TRIED)}")


@pytest.mark.parametrize(
    ("label", "argument", "kind", "value", "error"), BAD_CASES
)
def test_bad_input_is_refused_by_name(
    label, argument, kind, value, error, tally
):
    function, valid, _ = SPECS[label]
    if label.startswith("checks."):
        call = {"value": value}
    else:
        call = {**valid, argument: value}
    with pytest.raises((ValueError, TypeError)) as caught:
        function(**call)
    tally.append((label, argument))
    message = str(caught.value)
    assert caught.type is error, f"{caught.type.__name__}: {message}"
    assert re.search(rf"\b{re.escape(argument)}\b", message), message
    for name in ALLOWED.get(kind, []):
        assert repr(name) in message, f"{name!r} not listed in: {message}"


def test_bad_input_count(capsys):
    arguments = {
        (label, arg) for label, arg, *_ in (c.values for c in BAD_CASES)
    }
    with capsys.disabled():
        print(
            f"\n{len(BAD_CASES)} bad inputs over {len(arguments)} arguments "
            f"of {len(SPECS)} lab functions and validators"
        )
    assert len(BAD_CASES) >= 500
    assert len(arguments) >= 45


@pytest.mark.parametrize("module", [*LAB_MODULES, "snippets.checks"])
def test_every_public_argument_is_in_the_bad_input_table(module):
    mod = importlib.import_module(module)
    short = module.removeprefix("snippets.").split(".")[-2:]
    functions = [
        (name, f)
        for name, f in vars(mod).items()
        if inspect.isfunction(f)
        and f.__module__ == module
        and not name.startswith("_")
    ]
    assert functions, f"no public functions in {module}"
    for name, f in functions:
        if module == "snippets.checks":
            label_prefix = f"checks.{name}"
            covered = any(k.startswith(label_prefix) for k in SPECS)
            assert covered, f"checks.{name} has no bad-input cases"
            for p in inspect.signature(f).parameters:
                if p != "value":
                    assert (name, p) in SET_BY_LAB_CODE, (name, p)
            continue
        label = f"{short[0]}.{name}"
        assert label in SPECS, f"{label} has no bad-input cases"
        kinds = SPECS[label][2]
        for p in inspect.signature(f).parameters.values():
            if p.kind is p.VAR_KEYWORD:
                assert {"bytes_param", "bytes_grad", "bytes_optim"} <= set(
                    kinds
                ), f"{label}: **{p.name} not covered"
            else:
                assert p.name in kinds, f"{label}({p.name}) not covered"


# Cross-argument rules, each checked on its own.


def test_chunks_need_the_interleaved_schedule():
    for schedule in ("gpipe", "1f1b"):
        with pytest.raises(ValueError, match=rf"\bchunks\b.*{schedule}"):
            bubble_fraction(4, 8, schedule=schedule, chunks=2)


def test_plan_rejects_unknown_byte_keywords():
    with pytest.raises(TypeError, match="bytes_master"):
        plan(B7, 8, 80, bytes_master=4)


def test_zero_optimizer_bytes_is_allowed():
    assert memory_per_gpu("ddp", B7, 8, bytes_optim=0) == 28
    assert megatron_ratio(0.0) == 0
