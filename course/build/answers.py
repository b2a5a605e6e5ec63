"""An answer field under an exercise that asks for a number. A page
prints one from an executed block, with the answer a lab computed:

    ```python exec="on" html="true"
    from course.build.answers import field
    from snippets.ddp.allreduce import allreduce_bytes

    sent = allreduce_bytes(params=7e9, bytes_per_grad=2, world_size=8)
    print(field("ladder-2", sent["sent_per_rank_GB"], label="Sent per GPU",
                unit="GB", close=0.05, hint="Count both halves of the ring."))
    ```

The field states its tolerances, relative to the answer: within `right`
is right (right=0: only the exact number), within `close` is close,
further is wrong, with `hint`. A number within 0.5% of a value in
`mistakes` (a common slip, computed with the lab too) gets that
mistake's message instead. The reader's browser does the checking
(docs/assets/answers.js); this only writes the form.
"""

import json
import math
import re
from html import escape

from snippets.checks import choice, number

# unit -> the spellings a reader may type after the number
UNITS = {
    "GB": ("GB",),
    "s": ("s", "sec", "second", "seconds"),
    "tokens": ("tokens", "token"),
    "GPUs": ("GPUs", "GPU", "gpus", "gpu"),
    "replicas": ("replicas", "replica"),
    "steps": ("steps", "step"),
    "share": ("%",),  # of a whole: 0.25 or 25%
    "": (),  # a plain number
}
SLIP = 0.005  # answers.js: a typed number within 0.5% of a mistake is it
SAID = {"s": "seconds"}  # a unit as a label and a message write it
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def percent(fraction):
    return f"{fraction * 100:g}%"


def shown(value, unit):
    """The answer as the page writes it: 30.4%, 2,048, 6.825 GB."""
    if unit == "share":
        return f"{value:.1%}"
    text = f"{value:,.4g}".replace("-", "\u2212")
    return f"{text} {unit}".rstrip()


def field(
    name, answer, *, label, unit, close, hint, right=0.005, mistakes=None
):
    """The HTML of the answer field `name` (its id is answer-NAME), named
    `label` and the unit."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(
            f"name must be lowercase words and digits joined by '-', "
            f"got {name!r}"
        )
    if number("answer", answer, minimum=-math.inf) == 0:
        raise ValueError("answer must not be 0: the tolerances are relative")
    choice("unit", unit, tuple(UNITS))
    number("right", right, allow_minimum=True)
    number("close", close, minimum=right, allow_minimum=True)
    if unit == "share" and not 0 < answer <= 1:
        raise ValueError(f"answer must be a share in (0, 1], got {answer!r}")
    for key, text in (("label", label), ("hint", hint)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{key} must be some words, got {text!r}")
    mistakes = dict(mistakes or {})
    for value, message in mistakes.items():
        number("a mistake's value", value, minimum=-math.inf)
        if abs(answer - value) <= max(right, 2 * SLIP) * abs(value):
            raise ValueError(
                f"mistake {value!r} is too near the answer, {answer!r}"
            )
        if not isinstance(message, str) or not message.strip():
            raise ValueError(f"mistake {value!r} needs a message")
    if right:
        rule = f"Within {percent(right)} of the answer is right"
    else:
        rule = "The exact number is right"
    rule += f", within {percent(close)} close" if close > right else ""
    if unit == "share":  # 5% of 30% is 1.5 points, not 5
        rule += ": relative to the answer, not in percentage points"
    rule += "."
    said = SAID.get(unit, unit)
    if unit == "share":
        label = f"{label}, as a fraction or a percentage"
    elif unit:
        label = f"{label}, in {said}"
    data = {
        "answer": repr(float(answer)),
        "shown": shown(answer, unit),
        "unit": said,
        "units": " ".join(UNITS[unit]),
        "right": repr(float(right)),
        "close": repr(float(close)),
        "hint": hint.strip(),
        "mistakes": json.dumps([[v, m] for v, m in mistakes.items()]),
    }
    attributes = " ".join(f'data-{k}="{escape(v)}"' for k, v in data.items())
    i = f"answer-{name}"
    return (
        f'<form class="course-answer" id="{i}" data-course-answer '
        f"{attributes} novalidate>"
        f'<label for="{i}-input">{escape(label)}</label>'
        f'<div class="course-answer__bar">'
        f'<input id="{i}-input" name="answer" type="text"'
        f' autocomplete="off" spellcheck="false" aria-describedby="{i}-rule">'
        f'<button class="md-button md-button--primary" type="submit">'
        f"Check</button></div>"
        f'<p class="course-answer__rule" id="{i}-rule">{escape(rule)}</p>'
        f'<p class="course-answer__result" role="status" aria-live="polite">'
        f"</p></form>"
    )
