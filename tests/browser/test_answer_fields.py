"""The answer fields of the knowledge checks and the ladder, as a reader
uses them (docs/assets/answers.js): every field says right to its
answer, close just outside it, wrong far from it (with its hint) and
names each common slip; the number formats it reads and the entries it
cannot; the whole round by keyboard alone; axe-core on the fields in
every state, in both palettes; the fields fit at phone width. Each check
waits for the form's data-state, which an edit clears."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import LAPTOP, PHONE, serious_axe

PAGES = ("knowledge-checks/", "ladder/")
FIELD = "form[data-course-answer]"


def check(page, name, typed, state):
    """Type `typed` in field `name`, press Enter, wait for `state`; the
    verdict's text."""
    form = page.locator(f"#answer-{name}")
    form.locator("input").fill(typed)
    expect(form).not_to_have_attribute("data-state", state)  # the edit
    form.locator("input").press("Enter")
    expect(form).to_have_attribute("data-state", state)
    return form.locator("[role=status]").inner_text()


def fields(page):
    return page.eval_on_selector_all(
        FIELD, "forms => forms.map((f) => ({id: f.id, ...f.dataset}))"
    )


@pytest.mark.parametrize("path", PAGES)
def test_each_field_says_right_close_wrong_and_names_its_slips(
    page, base_url, path
):
    page.goto(base_url + path)
    found = fields(page)
    assert len(found) >= 4, found
    for f in found:
        name, answer = f["id"].removeprefix("answer-"), float(f["answer"])
        right, close = float(f["right"]), float(f["close"])
        said = check(page, name, repr(answer), "right")
        assert said == f"Right: {f['shown']}.", (name, said)
        assert check(page, name, f["shown"], "right"), name
        if close > right:
            near = answer * (1 + (right + close) / 2)
            said = check(page, name, repr(near), "close")
            assert f["hint"] in said, (name, said)
        for far in (answer * 3, answer / 3):
            said = check(page, name, repr(far), "wrong")
            assert f["hint"] in said and said.startswith("Wrong: too"), said
        for slip, message in json.loads(f["mistakes"]):
            said = check(page, name, repr(slip), "wrong")
            assert said == f"Wrong. {message}", (name, said)
        said = check(page, name, "about right", "unread")
        assert "does not start with a number" in said, (name, said)


READS = [  # field, what the reader types, the state, words of the verdict
    ("check-1", "6.825", "right", "Right: 6.825 GB."),
    ("check-1", "6.825 GB", "right", "Right"),
    ("check-1", "6.825GB", "right", "Right"),
    ("check-1", "  +6.825e0 ", "right", "Right"),
    ("check-1", "682.5E-2", "right", "Right"),
    ("check-1", "6.9", "close", "within 5%, not within 0.5%"),
    ("check-1", "6,825", "wrong", "too high"),  # commas group thousands
    ("check-1", "6.825 GiB", "unread", 'does not take "GiB"'),
    ("check-1", "6.825%", "unread", 'does not take "%"'),
    ("check-1", "6,82", "unread", "commas must group thousands"),
    ("check-1", "6.8.25", "unread", "more than one decimal point"),
    ("check-1", "6 825", "unread", "two numbers"),
    ("check-1", "", "unread", "Type a number first"),
    ("check-1", "GB", "unread", "does not start with a number"),
    ("check-4", "5,644", "right", "Right: 5,644 tokens."),
    ("check-4", "5644 tokens", "right", "Right"),
    ("check-4", "5.644e3", "right", "Right"),
    ("check-4", "5,644.0", "right", "Right"),
    ("check-4", "5,192", "wrong", "line rate"),
    ("check-4", "56,44", "unread", "commas must group thousands"),
    ("check-6", "0.304", "right", "Right: 30.4%."),
    ("check-6", "30.4%", "right", "Right"),
    ("check-6", "30.4 %", "right", "Right"),
    ("check-6", ".304", "right", "Right"),
    ("check-6", "30%", "close", "Close"),
    ("check-6", "43.75%", "wrong", "over the useful compute"),
    ("check-6", "30.4", "unread", "fraction from 0 to 1"),
    ("check-6", "0.304 GB", "unread", "type 0.25 or 25%"),
    ("check-8", "-2.25", "right", "Right: \u22122.25."),
    ("check-8", "\u22122.25", "right", "Right"),
    ("check-8", "2.25", "wrong", "wrong sign"),
    ("check-8", "-1.2", "wrong", "whole batch"),
    ("check-8", "-2.25 GB", "unread", "type the number alone"),
    ("check-9", "2,048", "right", "Right: 2,048 replicas."),
    ("check-9", "2048 replicas", "right", "Right"),
    ("check-9", "2,047", "wrong", "too low"),  # a count: exact, no close
    ("check-9", "1953", "wrong", "2^24"),
]


def test_the_formats_it_reads_and_those_it_cannot(page, base_url):
    page.goto(base_url + "knowledge-checks/")
    wrong = []
    for name, typed, state, words in READS:
        said = check(page, name, typed, state)
        if words not in said:
            wrong.append(f"{name} {typed!r}: {said!r}, not {words!r}")
    assert not wrong, "\n".join(wrong)


def test_keyboard_alone_answers_then_opens_the_worked_answer(page, base_url):
    """From the question's heading, Tab reaches the box; Enter checks;
    Tab and Space on Check check again; Tab reaches the folded answer,
    which Enter opens."""
    page.goto(base_url + "knowledge-checks/")
    heading = page.locator("h2", has_text="Same GPUs, slower wires")
    heading.locator(".headerlink").focus()
    form = page.locator("#answer-check-2")
    details = form.locator("xpath=following-sibling::details[1]")
    expect(details).not_to_have_attribute("open", "")
    page.keyboard.press("Tab")
    expect(form.locator("input")).to_be_focused()
    page.keyboard.type("2.04 s")
    page.keyboard.press("Enter")
    expect(form).to_have_attribute("data-state", "right")
    page.keyboard.press("Control+A")
    page.keyboard.type("1.96")
    expect(form).not_to_have_attribute("data-state", "right")
    page.keyboard.press("Tab")
    expect(form.locator("button")).to_be_focused()
    page.keyboard.press("Space")
    expect(form).to_have_attribute("data-state", "wrong")
    expect(form.locator("[role=status]")).to_contain_text("line rate")
    page.keyboard.press("Tab")
    expect(details.locator("summary")).to_be_focused()
    page.keyboard.press("Enter")
    expect(details).to_have_attribute("open", "")


@pytest.mark.parametrize("path", PAGES)
def test_fields_pass_axe_in_every_state_and_fit_a_phone(page, base_url, path):
    """Four fields in the four states (right, close, wrong, unread),
    axe-core on the fields in the light palette, then the dark one; at
    1280 and 390 px no field is wider than its box."""
    page.emulate_media(color_scheme="light", reduced_motion="reduce")
    page.goto(base_url + path)
    found = fields(page)[:4]
    for f, state in zip(
        found, ("right", "close", "wrong", "unread"), strict=True
    ):
        answer, close = float(f["answer"]), float(f["close"])
        typed = {
            "right": repr(answer),
            "close": repr(answer * (1 + close * 0.9)),
            "wrong": repr(answer * 3),
            "unread": "?",
        }[state]
        if state == "close" and not close:
            state, typed = "wrong", repr(answer + 1)
        check(page, f["id"].removeprefix("answer-"), typed, state)
    problems = serious_axe(page, FIELD)
    page.locator("form[data-md-component=palette] label:not([hidden])").click()
    page.wait_for_selector("body[data-md-color-scheme=slate]")
    problems += [f"dark: {p}" for p in serious_axe(page, FIELD)]
    for view in (LAPTOP, PHONE):
        page.set_viewport_size(view)
        wide = page.eval_on_selector_all(
            FIELD,
            "forms => forms.filter((f) => f.scrollWidth > f.clientWidth"
            " || [...f.querySelectorAll('input, button')].some((e) =>"
            " e.getBoundingClientRect().right >"
            " f.getBoundingClientRect().right)).map((f) => f.id)",
        )
        problems += [f"{view['width']} px: {i} is too wide" for i in wide]
    assert not problems, "\n".join(problems)
