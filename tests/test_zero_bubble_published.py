"""The planner's ZB-H1 against Qi et al.'s measured ZB-1p and 1F1B runs
(snippets/planner/zero_bubble_runs.py): the rows are the paper's, and
the predicted speed-ups stay near the measured ones."""

import pytest

from snippets.planner import runs
from snippets.planner.cost import stage_layers
from snippets.planner.fit import job, predict
from snippets.planner.layouts import check_layout
from snippets.planner.zero_bubble_runs import (
    MEASURED,
    MEDIAN_TOLERANCE,
    PROFILED_MS,
    SHAPES,
    TOLERANCE,
    compared,
    pass_times,
    rounding,
    run,
    summary,
    vocabulary_effect,
    weight_share,
)

# The paper's tables as its PDF prints them (arXiv 2401.10241, the
# version with ZB-V): Table 3's rows, Table 4's 1F1B and ZB-1p rows,
# Table 5's ZB-H1 and ZB-1p columns and Table 9's T_F, T_B and T_W.
TABLE3 = """
1.5B 22 24 2304 1024 8 6 24 / 32 / 64
6.2B 30 32 4096 1024 8 3 24 / 32 / 64
14.6B 46 40 5120 1024 16 1 48 / 64 / 128
28.3B 62 48 6144 1024 32 1 96 / 128 / 256
"""
TABLE4 = """
ZB-1p 12.9 13.4 14.2 3.88 4.00 4.20 1.61 1.67 1.76 0.87 0.90 0.96
1F1B 11.8 12.5 13.6 3.50 3.70 4.03 1.40 1.49 1.64 0.76 0.80 0.88
"""
TABLE5_ZB_H1 = """
0.1585 0.1242 0.0674 0.1323 0.1045 0.0554
0.1397 0.1088 0.0576 0.1421 0.1106 0.0594
"""
TABLE9 = """
18.522 18.086 9.337
29.718 29.444 19.927
11.347 11.248 8.132
10.419 10.207 7.715
"""


def numbers(text):
    """The figures of a table's rows, each row's label left out."""
    return [
        float(x)
        for line in text.strip().splitlines()
        for x in line.split()
        if x.replace(".", "").isdigit()
    ]


@pytest.fixture(scope="module")
def rows():
    return [compared(row) for row in MEASURED]


def test_the_rows_are_the_papers():
    table3 = [line.split() for line in TABLE3.strip().splitlines()]
    assert list(SHAPES) == [line[0] for line in table3]
    for line in table3:
        s = SHAPES[line[0]]
        shape = (s.layers, s.heads, s.hidden, 1024, s.gpus, s.micro_batch)
        assert shape == tuple(int(x) for x in line[1:7])
        micro = [r.microbatches for r in MEASURED if r.model == line[0]]
        assert micro == [int(x) for x in line[7:] if x != "/"]
    zb, one = (numbers(line) for line in TABLE4.strip().splitlines())
    assert len(zb) == len(one) == len(MEASURED) == 12
    assert [r.zb_1p for r in MEASURED] == zb
    assert [r.one_f_one_b for r in MEASURED] == one
    # Table 5 prints one column per schedule; ZB-1p's equals ZB-H1's
    h1 = numbers(TABLE5_ZB_H1)
    assert [r.bubble_zb_h1 for r in MEASURED] == h1
    assert [r.bubble_zb_1p for r in MEASURED] == h1
    assert [x for t in PROFILED_MS.values() for x in t] == numbers(TABLE9)


def test_the_stages_hold_the_layers_as_the_paper_says():
    """Section 5.1: the first and last stages hold one transformer layer
    fewer than the others (62 layers on 32 stages: 1, then 2 each)."""
    for name, s in SHAPES.items():
        model, nodes, training, [layout] = job(run(name, 96, "1f1b"))
        stages = check_layout(layout, model, nodes, training).stages
        middle = set(stages[1:-1])
        assert len(middle) == 1 and stages[0] == stages[-1] == min(middle) - 1
        assert stages == tuple(stage_layers(s.layers, s.gpus, True))
        assert sum(stages) == s.layers


def test_the_planner_predicts_the_measured_speed_ups(rows):
    """The planner's ZB-H1 over its 1F1B against Table 4's ZB-1p over
    1F1B, rows it was never fitted to. Its speed-ups came out 0.6% to
    3.8% from the measured ones, median 1.8%, mostly above (it gives W
    a larger share of the work than the authors profiled, see below);
    the rounding of Table 4 alone moves a measured speed-up by up to
    1.2%. Each must stay within 5%, the median within 3%: a planner
    that got ZB-H1's bubble wrong fails, as the next test shows."""
    s = summary(rows)
    assert s["median"] < MEDIAN_TOLERANCE
    for r in rows:
        assert abs(r["speedup_error"]) < TOLERANCE, r["row"]
    assert max(rounding(r) for r in MEASURED) < 0.015
    # and as measured: a gain everywhere, smaller as m grows
    for name in SHAPES:
        mine = [r for r in rows if r["row"].model == name]
        for key in ("measured_speedup", "predicted_speedup"):
            gains = [r[key] for r in mine]
            assert gains == sorted(gains, reverse=True) and gains[-1] > 1


def test_a_wrong_bubble_would_fail_the_check():
    """The tolerance above is tight enough to matter. Take the planner's
    1F1B step and change only its bubble: none left misses the measured
    speed-up by up to 18%, 1F1B's whole by up to 13%, and a third of it
    (the paper's rule for equal F, B and W passes) by up to 7.6%, each
    beyond 5% somewhere."""
    worst = {"none": 0.0, "whole": 0.0, "third": 0.0}
    for row in MEASURED:
        step = predict(run(row.model, row.microbatches, "1f1b"))["step_s"]
        total, bubble = step["total"], step["bubble"]
        measured = row.zb_1p / row.one_f_one_b
        for name, left in (("none", 0), ("whole", 1), ("third", 1 / 3)):
            speedup = total / (total - (1 - left) * bubble)
            error = abs(speedup / measured - 1)
            worst[name] = max(worst[name], error)
    assert all(error > TOLERANCE for error in worst.values()), worst


def test_absolute_throughput_is_near_the_measured(rows):
    """Held-out rows: samples per GPU per second within 16% of Table 4
    (the worst, the 1.5B's 1F1B, came out 15.0% low: the smallest
    model, whose element-wise kernels and output layer weigh most, and
    whose vocabulary nobody published; 32,000 tokens instead of 50,304
    move it by 16.7%), the median within 6% (5.0%)."""
    s = summary(rows)
    assert s["absolute_median"] < 0.06
    assert abs(s["absolute_worst"]) < 0.16


def test_the_vocabulary_moves_the_1_5b_only():
    """The vocabulary is not published. It weighs on the last stage:
    the 1.5B's figures move with it, the others' and every speed-up
    hardly."""
    effect = vocabulary_effect()
    assert effect["1.5B"][0] > 0.1
    for name, (samples, speedup) in effect.items():
        assert speedup < 0.005
        if name != "1.5B":
            assert samples < 0.005


def test_the_planner_gives_w_more_of_the_work_than_profiled():
    """Why the speed-ups run ahead: W is the work ZB-H1 moves into the
    bubble, and the planner's W share exceeds Table 9's for every
    model. Its forward pass is within 3% of the profiled one but for
    the 1.5B's (16% short)."""
    for name in SHAPES:
        mine, theirs = pass_times(name)
        assert weight_share(mine) > weight_share(theirs)
        close = 0.17 if name == "1.5B" else 0.03
        assert abs(mine[0] / theirs[0] - 1) < close


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="model must be one of"):
        run("7B", 24, "1f1b")
    with pytest.raises(ValueError, match="schedule must be one of"):
        run("1.5B", 24, "zb-1p")


def test_the_rows_stay_out_of_the_fit():
    """Held out by construction: no row of Qi et al. is among the runs
    the planner is fitted to."""
    assert not [r for r in runs.RUNS if r.source.startswith("Qi")]


def test_embedding_slots_take_stages_down_to_one_layer_and_no_further():
    """62 layers and two slots fill 32 stages two apiece, the first and
    last keeping one layer; on 64 stages some would keep none."""
    from snippets.planner.model import cluster

    model, _, _, [layout] = job(run("28.3B", 96, "1f1b"))
    nodes = cluster("a100-80gb", 8)
    for pp, ok in ((32, True), (64, False)):
        lay = {**layout, "pp": pp, "dp": 64 // pp}
        if ok:
            assert min(check_layout(lay, model, nodes).stages) == 1
        else:
            with pytest.raises(ValueError, match="every stage keeps a"):
                check_layout(lay, model, nodes)
