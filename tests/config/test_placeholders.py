"""Placeholders: filled, escaped, refused."""

from __future__ import annotations

import pytest

from agentd.config.placeholders import (
    PLACEHOLDERS,
    check_placeholders,
    fill_placeholders,
    placeholders_in,
)

VALUES = {"bootstrap": "BOOT", "unit": "shop", "session": "3"}


@pytest.mark.parametrize(
    ("template", "filled"),
    [
        ("{bootstrap}", "BOOT"),
        ("--unit={unit} #{session}", "--unit=shop #3"),
        ("{{bootstrap}}", "{bootstrap}"),
        ("{{{unit}}}", "{shop}"),
        ("a }} b {{ c", "a } b { c"),
        ("${HOME}/x", "${HOME}/x"),  # the environment's, never a placeholder
        ("f() { echo hi; }", "f() { echo hi; }"),  # shell braces pass through
        ("{ unit }", "{ unit }"),
        ("no braces", "no braces"),
    ],
)
def test_fill_placeholders(template: str, filled: str) -> None:
    assert fill_placeholders(template, VALUES) == filled


def test_fill_placeholders_names_the_unknown_and_the_known() -> None:
    with pytest.raises(ValueError) as caught:
        fill_placeholders("run {bootstrp}", VALUES)
    assert str(caught.value) == (
        "unknown placeholder {bootstrp}; known: {bootstrap}, {unit}, {session}"
        " (write {{ and }} for braces)"
    )


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("{bootstrap} {unit}", {"bootstrap", "unit"}),
        ("{{bootstrap}} ${unit}", set()),
        ("{nope}", {"nope"}),
    ],
)
def test_placeholders_in(template: str, names: set[str]) -> None:
    assert placeholders_in(template) == names


def test_check_placeholders_knows_every_placeholder() -> None:
    check_placeholders(" ".join("{" + name + "}" for name in PLACEHOLDERS))
    with pytest.raises(ValueError, match=r"unknown placeholder \{nope\}; known: \{bootstrap\}"):
        check_placeholders("{nope}")
