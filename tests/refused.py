"""Bad inputs by kind, for the lab tests of the second edition.

Each kind lists values an argument of that kind must refuse, with the
error it must raise. `cases` turns a table of functions into pytest
parameters and `check_refused` runs one: the error must be of the
right type and name the argument, and for a name, list what is allowed.
"""

import math
import re
from fractions import Fraction

import pytest

NOT_A_NUMBER = [
    ("8", TypeError),
    (None, TypeError),
    (True, TypeError),
    ([8], TypeError),
    (complex(8, 0), TypeError),
]
KINDS = {
    "positive": [
        (0, ValueError),
        (-1, ValueError),
        (-1e-9, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        *NOT_A_NUMBER,
    ],
    "count": [
        (0, ValueError),
        (-8, ValueError),
        (1.5, TypeError),
        (8.0, TypeError),
        (Fraction(8), TypeError),
        *NOT_A_NUMBER,
    ],
    "flag": [(1, TypeError), (0, TypeError), ("no", TypeError)],
    "name": [("", ValueError), ("NONE", ValueError), (None, TypeError)],
}


def cases(specs):
    """pytest parameters (label, argument, value, error) for a table
    {label: (function, valid kwargs, {argument: kind}, allowed)}."""
    params = []
    for label, (_, _, kinds, _) in specs.items():
        for argument, kind in kinds.items():
            for value, error in KINDS[kind]:
                params.append(
                    pytest.param(
                        label,
                        argument,
                        value,
                        error,
                        id=f"{label}-{argument}={value!r}",
                    )
                )
    return params


def check_refused(specs, label, argument, value, error):
    function, valid, _, allowed = specs[label]
    with pytest.raises((TypeError, ValueError)) as caught:
        function(**{**valid, argument: value})
    message = str(caught.value)
    assert caught.type is error, f"{caught.type.__name__}: {message}"
    assert re.search(rf"\b{re.escape(argument)}\b", message), message
    for name in allowed.get(argument, ()):
        assert repr(name) in message, f"{name!r} not in: {message}"


def covers_every_argument(specs, label):
    """Every parameter of the function has a kind in the table."""
    import inspect

    function, _, kinds, _ = specs[label]
    names = set(inspect.signature(function).parameters)
    names.discard("layer")  # **layer, checked through its own table
    names.discard("bytes_per_param")  # **kwargs passed to memory_per_gpu
    return names - set(kinds)
