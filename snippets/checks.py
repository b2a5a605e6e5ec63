"""Argument checks shared by the labs.

Each check returns the value it was given, or raises an error that names
the argument and says what it accepts. Nothing is clamped or rounded.
"""

import math
from numbers import Real


def number(name, value, *, minimum=0.0, allow_minimum=False):
    """A finite real number above `minimum` (or equal, if allowed)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r}"
        )
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    bound = ">=" if allow_minimum else ">"
    if value < minimum or (value == minimum and not allow_minimum):
        raise ValueError(f"{name} must be {bound} {minimum}, got {value!r}")
    return value


def count(name, value, *, minimum=1):
    """A whole number of things (GPUs, stages, steps): an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r}"
        )
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def flag(name, value):
    """A yes/no answer: True or False, nothing that merely looks truthy."""
    if not isinstance(value, bool):
        raise TypeError(
            f"{name} must be True or False, "
            f"got {type(value).__name__} {value!r}"
        )
    return value


def choice(name, value, allowed):
    """One of the names in `allowed`."""
    names = ", ".join(repr(a) for a in allowed)
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str, one of {names}; "
            f"got {type(value).__name__} {value!r}"
        )
    if value not in allowed:
        raise ValueError(f"{name} must be one of {names}; got {value!r}")
    return value
