"""Inputs for the lab tests (tests/test_<page>.py): the bad values each
kind of argument must refuse, and the valid ones the property tests
draw from.

A page's tests list each lab function once, in a table of rows

    (label, function, valid keyword arguments, {argument: kind})

and gets its tests from one line, `TestBadInput = bad_input_tests(
BAD_INPUT, "<page>")`: one case per argument of a row, in which the
call with each bad value must raise the expected error type with a
message that names the argument and, for a choice, lists every allowed
name; and a check that every argument of every public function in
snippets/<page>/ has its rows.
"""

import importlib
import inspect
import math
import re
from fractions import Fraction
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from course import ROOT


class Kind(NamedTuple):
    """One kind of argument: its bad values, each with the error it must
    raise, and the names a refusal must list (for a choice)."""

    bad: list
    allowed: tuple = ()


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

# a size: a finite real number > 0
POSITIVE = Kind(
    [
        (0, ValueError),
        (0.0, ValueError),
        (-1, ValueError),
        (-1e-9, ValueError),
        *NOT_FINITE,
        *NOT_A_NUMBER,
    ]
)
# a size that may be 0 (optimizer bytes: 0 for plain SGD)
NON_NEGATIVE = Kind(
    [(-1, ValueError), (-1e-9, ValueError), *NOT_FINITE, *NOT_A_NUMBER]
)
# a share in (0, 1]: mfu, usable
SHARE = Kind(
    [
        (0, ValueError),
        (-0.1, ValueError),
        (1.0001, ValueError),
        (40, ValueError),
        *NOT_FINITE,
        *NOT_A_NUMBER,
    ]
)
# a whole count >= 1 (GPUs, stages, steps, tokens)
COUNT = Kind(
    [
        (0, ValueError),
        (-1, ValueError),
        (-8, ValueError),
        (-64, ValueError),
        (1.5, TypeError),
        (8.0, TypeError),
        (Fraction(8), TypeError),
        (NAN, TypeError),
        (INF, TypeError),
        *NOT_A_NUMBER,
    ]
)
# a count that may be left out (None means "not given")
OPTIONAL_COUNT = Kind([c for c in COUNT.bad if c[0] is not None])
FLAG = Kind(
    [
        (1, TypeError),
        (0, TypeError),
        ("True", TypeError),
        ("no", TypeError),
        (None, TypeError),
        (1.0, TypeError),
    ]
)


def choice(allowed):
    """A name that must be one of `allowed` (pages with their own near
    misses, such as test_zero.py's strategies, list them instead)."""
    bad = [("", ValueError), ("NONE", ValueError), (None, TypeError)]
    return Kind([*bad, (3, TypeError), (b"x", TypeError)], tuple(allowed))


def strategy(allowed):
    """A ZeRO strategy name, with its near misses (the zero labs and the
    shared checks both refuse them)."""
    near = ["zero4", "ZeRO-3", "DDP", "", " ddp"]
    wrong_type = [None, 3, b"ddp", ["ddp"]]
    return Kind(
        [(v, ValueError) for v in near] + [(v, TypeError) for v in wrong_type],
        tuple(allowed),
    )


FEWEST_BAD_VALUES = 5  # per argument; the slots of a schedule have 5


def bad_cases(table):
    """One pytest case per (row, argument) of a page table, with that
    argument's bad values: each is a call of microseconds, a case of its
    own would cost pytest more than the call (4,000 cases in all)."""
    return [
        pytest.param(
            function,
            valid,
            argument,
            kind.bad,
            kind.allowed,
            id=f"{label}-{argument}",
        )
        for label, function, valid, kinds in table
        for argument, kind in kinds.items()
    ]


def refusal_problem(function, valid, argument, value, error, allowed):
    """What is wrong with how `function` refuses `argument=value`, or ""
    when it raises `error` with a message that names the argument and,
    for a choice, every allowed name."""
    try:
        function(**{**valid, argument: value})
    except (ValueError, TypeError) as caught:
        message = str(caught)
        if type(caught) is not error:
            return f"raised {type(caught).__name__}: {message}"
        if not re.search(rf"\b{re.escape(argument)}\b", message):
            return f"the message does not name {argument}: {message}"
        missing = [name for name in allowed if repr(name) not in message]
        if missing:
            return f"{missing[0]!r} not in: {message}"
        return ""
    return f"accepted, where {error.__name__} was expected"


def bad_input_tests(table, page=None, only=None, but=()):
    """A page's bad-input tests, as a class for its test file to hold.
    With `page`, a check that the table covers snippets/<page>/ (the
    modules named in `only`, if given, less those in `but`); without,
    the file checks its table's coverage itself."""

    class TestBadInput:
        @pytest.mark.parametrize(
            "function, valid, argument, bad, allowed", bad_cases(table)
        )
        def test_is_refused_by_name(
            self, function, valid, argument, bad, allowed
        ):
            """Every bad value of the argument, each with what is wrong
            (a value that raises anything else fails the test there)."""
            wrong = [
                f"{argument}={value!r}: {problem}"
                for value, error in bad
                if (
                    problem := refusal_problem(
                        function, valid, argument, value, error, allowed
                    )
                )
            ]
            assert not wrong, "\n".join(wrong)

        if page is not None:

            def test_every_argument_has_some(self):
                modules = lab_modules(page, only, but)
                assert_every_argument_has_bad_inputs(table, modules)

    return TestBadInput


def public_functions(module):
    """The public functions a module defines (not those it imports)."""
    return {
        name: f
        for name, f in vars(module).items()
        if inspect.isfunction(f)
        and f.__module__ == module.__name__
        and not name.startswith("_")
    }


def _name(function):
    return f"{function.__module__}.{function.__qualname__}"


def lab_modules(page, only=None, but=()):
    """The modules of snippets/<page>/ (those named in `only`, if given,
    less those named in `but`)."""
    folder = ROOT / "snippets" / page
    modules = [
        importlib.import_module(f"snippets.{page}.{path.stem}")
        for path in sorted(folder.glob("*.py"))
        if path.stem != "__init__"
        and (only is None or path.stem in only)
        and path.stem not in but
    ]
    assert modules, f"no modules in snippets/{page}/"
    return modules


def assert_every_argument_has_bad_inputs(table, modules):
    """Every argument of every public function in `modules` has a row in
    `table`, with at least FEWEST_BAD_VALUES bad values. An argument
    taken as **keywords must have rows of its own: those that are not
    named parameters."""
    # By name, so that a function is found however it was imported.
    rows = {_name(function): kinds for _, function, _, kinds in table}
    for module in modules:
        functions = public_functions(module)
        assert functions, f"no public functions in {module.__name__}"
        for name, function in functions.items():
            where = f"{module.__name__}.{name}"
            assert _name(function) in rows, f"{where} has no bad-input cases"
            kinds = rows[_name(function)]
            parameters = inspect.signature(function).parameters.values()
            named = {p.name for p in parameters if p.kind != p.VAR_KEYWORD}
            for argument in sorted(named):
                assert argument in kinds, f"{where}({argument}) not covered"
            if len(named) < len(parameters):
                assert set(kinds) - named, f"{where}: **keywords not covered"
            for argument, kind in kinds.items():
                assert len(kind.bad) >= FEWEST_BAD_VALUES, (where, argument)


# --- valid inputs, for the property tests (hypothesis) ---------------------
#
# Every property test uses PROFILE: derandomized (the examples come from
# a fixed seed, so two runs try the same inputs), no example database,
# no deadline (a test never asserts a time) and a modest example count.
# One caveat: Hypothesis also mixes in constants it finds in the
# project's modules already imported, so running one file alone and
# inside the whole suite may try different (each time the same) inputs.

PROFILE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=80,
    suppress_health_check=[HealthCheck.too_slow],
)
REL = 1e-9

# Sizes across the range the course talks about, and well beyond it.
params = st.one_of(
    st.integers(min_value=1, max_value=10**13),
    st.floats(min_value=1e-3, max_value=1e13, allow_nan=False),
)
world = st.integers(min_value=1, max_value=100_000)
many = st.integers(min_value=2, max_value=100_000)
byte_size = st.sampled_from([1, 2, 4, 8]) | st.floats(0.125, 64)
optim_bytes = st.sampled_from([0, 4, 8, 12, 16]) | st.floats(0, 64)
small_count = st.integers(min_value=1, max_value=512)
# Not a size: zero, below zero, or not finite.
not_a_size = (
    st.floats(max_value=0, allow_nan=False)
    | st.integers(max_value=0)
    | st.sampled_from([NAN, INF, -INF])
)
