"""snippets/checks.py: the argument checks every lab shares, called with
the name a reader would see."""

import inspect

from snippets import checks
from snippets.zero.memory import ALIASES, SHARDED
from tests import lab_inputs as inputs

STRATEGIES = (*SHARDED, *ALIASES)
NAME = inputs.strategy(STRATEGIES)
BAD_INPUT = [
    (
        "number",
        lambda tflops: checks.number("tflops", tflops),
        {"tflops": 1.0},
        {"tflops": inputs.POSITIVE},
    ),
    (
        "number(allow_minimum)",
        lambda bytes: checks.number("bytes", bytes, allow_minimum=True),
        {"bytes": 0},
        {"bytes": inputs.NON_NEGATIVE},
    ),
    (
        "count",
        lambda gpus: checks.count("gpus", gpus),
        {"gpus": 1},
        {"gpus": inputs.COUNT},
    ),
    (
        "flag",
        lambda multi_node: checks.flag("multi_node", multi_node),
        {"multi_node": False},
        {"multi_node": inputs.FLAG},
    ),
    (
        "choice",
        lambda strategy: checks.choice("strategy", strategy, STRATEGIES),
        {"strategy": "ddp"},
        {"strategy": NAME},
    ),
]
# Arguments that lab code sets, not readers: the label used in
# messages, the bound and the list of allowed names.
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


TestBadInput = inputs.bad_input_tests(BAD_INPUT)


def test_every_check_has_bad_inputs():
    tested = {label.partition("(")[0] for label, *_ in BAD_INPUT}
    public = inputs.public_functions(checks)
    assert set(public) == tested
    for name, check in public.items():
        for p in inspect.signature(check).parameters:
            if p != "value":
                assert (name, p) in SET_BY_LAB_CODE, (name, p)
