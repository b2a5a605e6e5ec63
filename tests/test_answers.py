"""The answer fields (course/build/answers.py) of the knowledge checks and
the ladder: each field's answer is what the labs give for its question,
computed here again from the labs' functions; the worked answer under it
prints the same number; each field states its unit and tolerances and is
labelled; field() refuses bad arguments by name. (tests/browser/
test_answer_fields.py checks them as a reader uses them.)"""

import functools
import math
import re
from html.parser import HTMLParser

import pytest
from sybil import Document

from course import ROOT
from course.build.answers import field
from snippets.accumulation.tokens import accumulate
from snippets.activations.memory import activation_bytes_per_gpu
from snippets.comms.cost import REACHED
from snippets.comms.law import crossover_tokens_per_gpu
from snippets.comms.links import REACHED_GBps, ring_bandwidth_GBps
from snippets.ddp.allreduce import allreduce_bytes
from snippets.ladder.accumulate import accum_steps_for
from snippets.ladder.comms_wall import first_comms_bound
from snippets.pipeline.bubble import bubble_fraction
from snippets.strategy.ceiling import batch_ceiling
from snippets.zero.memory import memory_per_gpu
from snippets.zero.traffic import comm_bytes
from tests.docblocks import parse, run

PAGES = ("docs/knowledge-checks.md", "docs/ladder.md")
B7, H100 = 7_000_000_000, 989 * 0.40  # parameters; TFLOP/s at 40%
ETH = REACHED["Ethernet, 100 Gb/s"]
# Each field's question, asked of the labs again: field -> the answer.
EXPECTED = {
    "check-1": lambda: comm_bytes("zero3", 1_300_000_000, 8),
    "check-2": lambda: allreduce_bytes(B7, 2, 8)["sent_per_rank_GB"] / ETH,
    "check-3": lambda: (
        activation_bytes_per_gpu(
            layers=32,
            rebuilt_layer=True,
            seq_len=32768,
            micro_batch=1,
            hidden=4096,
            heads=32,
            recompute="full",
            flash_attention=True,
        )
        / 1e9
    ),
    "check-4": lambda: crossover_tokens_per_gpu(H100, REACHED_GBps["ndr"], 64),
    "check-5": lambda: (
        allreduce_bytes(B7, 2, 64)["sent_per_rank_GB"]
        / ring_bandwidth_GBps(
            64, 8, REACHED_GBps["nvlink4"], 8, REACHED_GBps["ndr"]
        )
    ),
    "check-6": lambda: bubble_fraction(8, 16, "1f1b"),
    "check-8": lambda: accumulate(
        [[(2.0, 3.0)] * 2, [(1.0, 1.0)] * 8], 0.5, "micro_batch_mean"
    )["grad"],
    "check-9": lambda: batch_ceiling(16_384, 2**24, 8_192)["max_dp"],
    "ladder-2": lambda: allreduce_bytes(B7, 2, 8)["sent_per_rank_GB"],
    "ladder-3": lambda: memory_per_gpu("fsdp", B7, 8),
    "ladder-4": lambda: accum_steps_for(512, 16, 4)[0],
    "ladder-5": lambda: first_comms_bound(B7, 2**18, H100, ETH, 64),
}


class Elements(HTMLParser):
    """The attributes of each element of a field, by tag; text by id."""

    def __init__(self, html):
        super().__init__()
        self.tags, self.text, self.open = {}, {}, None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.setdefault(tag, []).append(dict(attrs))
        self.open = tag

    def handle_data(self, data):
        key = self.tags[self.open][-1].get("id", self.open)
        self.text[key] = self.text.get(key, "") + data


@functools.cache
def fields():
    """{name: (Elements, the worked answer's record)}, from the pages'
    blocks run as the build runs them."""
    found = {}
    for page in PAGES:
        blocks = [e.parsed for e in Document.parse(str(ROOT / page), parse)]
        for i, block in enumerate(blocks):
            if "course.build.answers" not in block.source:
                continue
            form = Elements(run(block))
            name = form.tags["form"][0]["id"].removeprefix("answer-")
            assert name not in found, f"{block.id}: a second {name}"
            found[name] = form, blocks[i + 1].record
    return found


def test_every_field_is_checked_here():
    assert sorted(fields()) == sorted(EXPECTED)
    assert len(EXPECTED) >= 8


@pytest.mark.parametrize("name", EXPECTED)
def test_the_answer_is_the_labs(name):
    form = fields()[name][0].tags["form"][0]
    assert math.isclose(float(form["data-answer"]), EXPECTED[name]())


NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def printed_as(value, token):
    """`value` printed as `token` ('24.500', '2,048'): rounded to its
    decimals, if it has two significant digits or more; else exactly."""
    digits = token.replace(",", "")
    if len(digits.lstrip("-0.").replace(".", "")) < 2:
        return math.isclose(value, float(digits))
    rounded = round(value, len(digits.partition(".")[2]))
    return math.isclose(rounded, float(digits), abs_tol=1e-12)


@pytest.mark.parametrize("name", EXPECTED)
def test_the_worked_answer_prints_it(name):
    """A number in the output of the block after the field, the worked
    answer, is the field's answer as printed there (a share may be
    printed as a percentage)."""
    form, record = fields()[name]
    data = form.tags["form"][0]
    answer = float(data["data-answer"])
    scales = (1, 100) if data["data-unit"] == "share" else (1,)
    assert any(
        printed_as(answer * scale, token)
        for token in NUMBER.findall(record)
        for scale in scales
    ), f"{name}: {answer} is not in\n{record}"


@pytest.mark.parametrize("name", EXPECTED)
def test_the_field_is_labelled_and_states_its_tolerances(name):
    form = fields()[name][0]
    data = form.tags["form"][0]
    label, box = form.tags["label"][0], form.tags["input"][0]
    assert label["for"] == box["id"] and form.tags["button"][0]["type"]
    unit = data["data-unit"]
    said = "a fraction or a percentage" if unit == "share" else unit
    assert form.text["label"].endswith(said)
    rule = form.text[box["aria-describedby"]]
    right, close = float(data["data-right"]), float(data["data-close"])
    if right:
        assert f"Within {right * 100:g}% of the answer is right" in rule
    else:
        assert rule.startswith("The exact number is right")
    assert (f"within {close * 100:g}% close" in rule) == (close > right)
    assert form.tags["p"][-1] == {
        "class": "course-answer__result",
        "role": "status",
        "aria-live": "polite",
    }


GOOD = {
    "answer": 24.5,
    "label": "Sent per GPU",
    "unit": "GB",
    "close": 0.05,
    "hint": "Count both halves.",
}


@pytest.mark.parametrize(
    ("changed", "error", "named"),
    [
        ({"name": "Check 1"}, ValueError, "name"),
        ({"answer": "24.5"}, TypeError, "answer"),
        ({"answer": 0}, ValueError, "answer"),
        ({"answer": math.nan}, ValueError, "answer"),
        ({"unit": "GiB"}, ValueError, "unit must be one of 'GB', 's'"),
        ({"right": -0.1}, ValueError, "right"),
        ({"close": 0.001}, ValueError, "close"),
        ({"unit": "share"}, ValueError, "answer must be a share"),
        ({"label": " "}, ValueError, "label"),
        ({"hint": None}, ValueError, "hint"),
        ({"mistakes": {24.6: "Near."}}, ValueError, "too near the answer"),
        ({"mistakes": {14.0: ""}}, ValueError, "mistake 14.0 needs"),
        ({"mistakes": {"14": "No."}}, TypeError, "mistake"),
    ],
)
def test_bad_arguments_are_refused_by_name(changed, error, named):
    arguments = {**GOOD, **changed}
    with pytest.raises(error, match=re.escape(named)):
        field(arguments.pop("name", "ladder-2"), **arguments)
