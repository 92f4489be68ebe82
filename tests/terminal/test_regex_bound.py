"""Sentinels run on what the agent prints, with a bound (issue 27): RE2 where it can
express the pattern (the same matches as Python's re), else regex within a time budget
that turns the rule off; `agentd check` warns about patterns that backtrack."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentd.config.presets import cli_preset_examples
from agentd.regexes import MatchTimeout, backtracking, searcher, translate
from agentd.terminal.rules import Rule, RuleSet
from tests.support import agentd, write_unit

PRESETS = Path(__file__).resolve().parents[2] / "agentd" / "config" / "cli_presets"
# What RE2 cannot express in the shipped presets: they run on re, within the budget.
ON_RE = {
    ("claude-code", "usage-limit"),  # a lookahead
    ("claude-code", "usage-limit-no-time"),
    ("gemini", "handoff"),
    # a \b next to \d: re's word boundary is Unicode's, RE2's ASCII's (other answers
    # beside a letter such as é), so these run on regex, within the budget
    ("claude-code", "usage-limit-epoch"),
    ("claude-code", "handoff"),
    ("codex", "usage-limit-reset"),
    ("codex", "handoff"),
    ("gemini", "usage-limit"),
}


def preset_patterns() -> list[tuple[str, str, str, list[str]]]:
    out = []
    for path in sorted(PRESETS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        examples = cli_preset_examples(path.stem)
        for s in data.get("sentinels") or []:
            out.append((path.stem, s["name"], s["match"], examples.get(s["name"], [])))
        when = (data.get("handoff") or {}).get("when")
        if when:
            out.append((path.stem, "handoff", when, examples.get("handoff", [])))
    return out


def same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(a.span() == b.span() and a.groupdict() == b.groupdict())


@pytest.mark.parametrize(("preset", "name", "match", "examples"), preset_patterns())
def test_every_preset_pattern_finds_what_re_finds(
    preset: str, name: str, match: str, examples: list[str]
) -> None:
    pattern = re.compile(match)
    found = searcher(pattern)
    assert found.linear == ((preset, name) not in ON_RE), translate(pattern)
    noise = ["", "nothing here", "Compacting", "usage limit", "3:45\u202fPM PST", "é" * 50]
    for text in [*examples, *(f"  {e} …" for e in examples), *noise]:
        assert same(found.search(text), pattern.search(text)), (name, text)
    assert backtracking(pattern) is None, (name, backtracking(pattern))


# -- Python's syntax in RE2's, checked against re on what it generates -------------------

ATOMS = [
    "a", "b", ".", r"\d", r"\D", r"\s", r"\S", r"\w", r"\W", "[ab]", "[^a]", r"[\w']",
    r"[\d,]", "[a-c]", r"\.", "é", "中", r"\u202f", "[^\\s]", "[A-Z]", "(?i:b)",
]  # fmt: skip
TEXT = st.text(alphabet="ab ,.'1é中\u202f\u0661AB_\n-", max_size=30)


def patterns() -> st.SearchStrategy[str]:
    atom = st.sampled_from(ATOMS)

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "*?", "+?", "{1,3}", "{2}"])).map(
                lambda p: f"(?:{p[0]}){p[1]}"
            ),
            inner.map(lambda p: f"({p})"),
            inner.map(lambda p: f"(?P<g>{p})"),
            st.tuples(st.sampled_from(["^", ""]), inner, st.sampled_from(["$", ""])).map("".join),
        )

    return st.recursive(atom, grow, max_leaves=6)


@pytest.mark.parametrize(
    ("source", "text"),
    [(r"\w$", "\né"), (r"(?P<g>\w+)$", "ok\nçà"), (r"\d", "\n\u0663"), (r"\s$", "\n\u00a0")],
)
def test_an_ascii_pattern_on_the_backtracking_path_matches_as_re_does(
    source: str, text: str
) -> None:
    """A ``$`` and a newline send the search to ``regex``, whose ASCII flag is not
    ``re``'s number (``re.ASCII`` passed as it was meant its 256 flag, and ``\\w`` took
    in é)."""
    pattern = re.compile(source, re.ASCII)
    found, want = searcher(pattern).search(text), pattern.search(text)
    assert (found.span() if found else None) == (want.span() if want else None)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(patterns(), TEXT, st.sampled_from([0, re.IGNORECASE, re.MULTILINE, re.ASCII]))
def test_translated_patterns_match_as_re_does(source: str, text: str, flags: int) -> None:
    try:
        pattern = re.compile(source, flags)
    except re.error:
        return  # (?P<g>) twice
    found = searcher(pattern)
    if found.linear:
        assert same(found.search(text), pattern.search(text)), (translate(pattern), text)


@pytest.mark.parametrize(
    ("source", "text"),
    [
        (r"limit$", "limit\n"),  # re's $ also matches before a last newline; RE2's does not
        (r"(?P<g>a?)*", "aa"),  # re repeats the group once more, empty, and keeps that
        (r"(?P<g>a|)+b", "aab"),
    ],
)
def test_where_re2_would_differ_re_answers(source: str, text: str) -> None:
    pattern = re.compile(source)
    assert same(searcher(pattern).search(text), pattern.search(text)), translate(pattern)
    assert searcher(pattern).sub("*", text) == pattern.sub("*", text)


@pytest.mark.parametrize(
    ("source", "linear"),
    [
        (r"You've hit (?!.*\bresets?\b)", False),  # a lookahead
        (r"(a)\1", False),  # a backreference
        (r"\bword\b", False),  # a Unicode word boundary: RE2's is ASCII's
        (r"(?a)\bword\b", True),
        (r"a{2000}", False),
        (r"a++", False),
        (r"(?>a+)b", False),
        (r"(a+)+$", True),
    ],
)
def test_what_runs_on_re2(source: str, linear: bool) -> None:
    assert searcher(re.compile(source)).linear is linear


# -- the budget ------------------------------------------------------------------------------

# Catastrophic on re and on regex alike (regex avoids (a+)+$'s blow-up, not this one),
# and not RE2's: a lookahead.
BAD = re.compile(r"(?!z)(a|a)+b")
LINE = "a" * 40 + "!b"


def test_a_search_over_the_budget_raises_in_the_main_thread_and_in_others() -> None:
    with pytest.raises(MatchTimeout):
        searcher(BAD).search(LINE)
    caught: list[BaseException] = []

    def other() -> None:
        try:
            searcher(BAD).search(LINE)  # regex's timeout holds in any thread
        except MatchTimeout as exc:
            caught.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(120)
    assert caught


def test_a_pattern_regex_does_not_compile_runs_on_re_within_the_budget() -> None:
    line = "a" * 40 + "!c"
    found = searcher(re.compile(r"(?!z)(a|a)+c"))  # a new pattern: a Searcher of its own
    found._regex = None  # as when regex does not compile it: re, in the main thread
    with pytest.raises(MatchTimeout):
        found.search(line)


def test_a_rule_over_the_budget_is_dropped_and_says_so() -> None:
    told: list[str] = []
    rules = RuleSet(65536)
    rules.add(Rule("slow", BAD, on_timeout=told.append))
    rules.add(Rule("fine", re.compile("Compacting conversation")))
    assert rules.line_hits(LINE) == []
    assert [r.name for r in rules.rules] == ["fine"] and len(told) == 1
    assert "off for the rest of this session" in told[0]
    text = f"{LINE}\nCompacting conversation\n"
    assert [h.rule.name for _, h in rules.block_hits(text, 0, len(text))] == ["fine"]
    assert len(told) == 1


def test_re2_finds_the_catastrophic_shape_and_is_not_fooled() -> None:
    found = searcher(re.compile(r"(a+)+$"))
    assert found.linear
    assert found.search("a" * 100_000 + "b") is None
    assert found.search("xx" + "a" * 100_000).span() == (2, 100_002)  # type: ignore[union-attr]


def test_block_hits_count_lines_in_utf8_as_in_text() -> None:
    rules = RuleSet(65536)
    rules.add(Rule("c", re.compile(r"Compacting (?P<what>\w+)")))
    text = "é中\nCompacting conversation\n\u202f\nx Compacting ctx\nend"
    hits = rules.block_hits(text, 0, len(text))
    assert [(i, h.groups, h.span) for i, h in hits] == [
        (1, {"what": "conversation"}, (0, 23)),
        (3, {"what": "ctx"}, (2, 16)),
    ]


# -- agentd check ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a+)+$", "a repeat inside a repeat"),
        (r"^(\w+\s?)*$", "a repeat inside a repeat"),
        (r"(.*,)*x", "a repeat inside a repeat"),
        (r"(a|aa)*b", "a repeat inside a repeat"),
        (r"(?:a.|.b)+x", "alternatives under a repeat"),
        (r"\d+\d+x", "repeats next to each other"),
        (r"\s*\s+x", "repeats next to each other"),
    ],
)
def test_backtracking_shapes_are_named(pattern: str, why: str) -> None:
    said = backtracking(re.compile(pattern))
    assert said is not None and why in said


@pytest.mark.parametrize(
    "pattern",
    [
        r"usage limit reached.*reset at (?P<until>[^.]+)",
        r"(?:[\w']+ )*?limit",
        r"(?:\d{1,3},)*\d",
        r"[\d,]+ tokens exceeds the [\d,]+ token limit",
        r"(?:ab?)*c",
    ],
)
def test_linear_shapes_are_not_flagged(pattern: str) -> None:
    assert backtracking(re.compile(pattern)) is None


def test_agentd_check_warns_about_a_pattern_that_backtracks(home: Path) -> None:
    path = write_unit(
        home,
        "bt",
        {
            "command": ["true"],
            "sentinels": [
                {"name": "ok", "match": "Compacting conversation"},
                {"name": "slow", "match": "(a+)+$"},
                {"name": "slower", "match": "(?!z)(a+)+$"},
            ],
        },
    )
    done = agentd(home, "check", str(path))
    assert done.returncode == 0, done.stderr  # a warning, not an error
    said = done.stdout + done.stderr
    assert "sentinels[1].match" in said and "can backtrack" in said and "RE2" in said
    assert "sentinels[2].match" in said and "time budget" in said
    assert "sentinels[0]" not in said
