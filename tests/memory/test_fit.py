"""The fit itself, on blocks built by hand: what is shown, cut or left out, and
that the budget is spent (not over, and not wasted), by the cost of the text
shown (``line_cost``, the estimate the budget is in)."""

from __future__ import annotations

from agentd.memory.bootstrap.fit import CUT, MIN_BODY_TOKENS, Fitted, fit, marker_cost, must_cost
from agentd.memory.bootstrap.parts import Block, Part, line_cost, lines_cost, newest_caption
from agentd.tokens import estimate_tokens


def lines(tag: str, n: int, width: int = 19) -> list[str]:
    """``n`` lines of ``tag``, each ``width`` chars, at least 6 (cost (width + 1) / 4)."""
    return [f"{tag} {i:03d} ".ljust(width, ".") for i in range(n)]


def path(name: str) -> str:
    """The path shown for ``name``: 40 characters, as the fit reckons a cut marker's."""
    return f".agent/{name}".ljust(40, "_")


def block(name: str, *parts: Part, **kw: object) -> Block:
    return Block(name, path(name), list(parts), **kw)  # type: ignore[arg-type]


def frame(name: str) -> float:
    return lines_cost([f"## {name}", ""]) + 0.5


def texts(f: Fitted) -> dict[str, str]:
    return {acc.name: text for text, acc in f.sections if text is not None}


def spent(f: Fitted) -> float:
    """The cost of what was shown: each section's lines and the blank line after it."""
    return sum(
        lines_cost(text.split("\n")) + 0.5
        for text, acc in f.sections
        if text is not None and acc.name != "left-out"
    )


def shown(text: str, tag: str) -> list[str]:
    return [ln for ln in text.split("\n") if ln.startswith(tag + " ")]


def marker(name: str) -> str:
    return CUT.format(path=path(name))


# -- must-keep files over the budget: water-filling -----------------------------------


def test_must_files_over_the_budget_share_it_evenly_short_ones_whole() -> None:
    a = block("a", Part("must", lines=lines("a", 4)))
    b = block("b", Part("must", lines=lines("b", 60)))
    c = block("c", Part("must", lines=lines("c", 60)))
    need = must_cost([a, b, c])
    assert need == frame("a") + frame("b") + frame("c") + 124 * 5
    f = fit([a, b, c], 250)
    assert f.must_over == need - 250
    t = texts(f)
    assert shown(t[path("a")], "a") == lines("a", 4) and marker("a") not in t[path("a")]
    nb, nc = len(shown(t[path("b")], "b")), len(shown(t[path("c")], "c"))
    assert marker("b") in t[path("b")] and marker("c") in t[path("c")]
    assert nb == nc and nb > 10  # an even share of what a left
    assert 250 - 2 * 5 < spent(f) <= 250  # not over, and no line's worth wasted per file
    assert f.cut == [path("b"), path("c")]


def test_the_level_is_set_by_the_longest_files_only() -> None:
    a = block("a", Part("must", lines=lines("a", 4)))
    b = block("b", Part("must", lines=lines("b", 20)))
    c = block("c", Part("must", lines=lines("c", 200)))
    d = block("d", Part("must", lines=lines("d", 2)))
    f = fit([a, b, c, d], 400)
    t = texts(f)
    assert shown(t[path("a")], "a") == lines("a", 4)
    assert shown(t[path("b")], "b") == lines("b", 20)
    assert shown(t[path("d")], "d") == lines("d", 2)
    assert 400 - 5 < spent(f) <= 400 and marker("c") in t[path("c")]
    assert f.cut == [path("c")]


def test_must_files_that_fit_are_shown_whole_and_leave_the_rest() -> None:
    a = block("a", Part("must", lines=lines("a", 4)))
    rec = block("r", Part("record", items=[[ln] for ln in lines("r", 50)], least=2))
    f = fit([a, rec], 100)
    assert f.must_over == 0 and shown(texts(f)[path("a")], "a") == lines("a", 4)
    assert 100 - 5 < spent(f) <= 100  # the records took the rest, a line each


def test_no_room_at_all_leaves_every_must_file_out_and_says_so() -> None:
    a = block("a", Part("must", lines=lines("a", 40)))
    b = block("b", Part("must", lines=lines("b", 40)))
    f = fit([a, b], 0.5)
    assert texts(f) == {
        "left-out": f"[left out for the token budget: read {path('a')}, {path('b')}]"
    }
    accounts = {acc.name: acc for _, acc in f.sections}
    assert accounts[path("a")].notes == ["left out: must-keep files alone exceed the budget"]


# -- a part cut: as many lines as fit, from the right end ------------------------------


def test_a_cut_keeps_as_many_lines_as_fit_from_the_start() -> None:
    body = [*lines("s", 30, width=7), *lines("l", 30, width=79)]  # short, then long lines
    f = fit([block("m", Part("must", lines=body))], 120)
    text = texts(f)[path("m")]
    kept = [ln for ln in text.split("\n")[2:] if ln != marker("m")]
    assert kept == body[: len(kept)] and text.endswith(marker("m"))
    assert 120 - 20 < spent(f) <= 120


def test_a_cut_that_keeps_the_end_counts_from_the_end() -> None:
    body = [*lines("s", 30, width=7), *lines("l", 30, width=79)]  # the newest lines long
    f = fit([block("m", Part("must", lines=body, keep_end=True))], 120)
    text = texts(f)[path("m")]
    kept = [ln for ln in text.split("\n")[2:] if ln != marker("m")]
    assert kept == body[len(body) - len(kept) :] and text.split("\n")[2] == marker("m")
    assert 120 - 20 < spent(f) <= 120

    short_last = [*lines("l", 30, width=79), *lines("s", 30, width=7)]
    f = fit([block("m", Part("must", lines=short_last, keep_end=True))], 120)
    kept = [ln for ln in texts(f)[path("m")].split("\n")[2:] if ln != marker("m")]
    assert kept == short_last[len(short_last) - len(kept) :]
    assert 120 - 20 < spent(f) <= 120


def test_a_fenced_part_cut_pays_for_its_fence() -> None:
    part = Part("free", lines=lines("j", 80, width=3), fence="json")
    for budget in (b / 4 for b in range(240, 360)):
        f = fit([block("j", part)], budget)
        text = texts(f)[path("j")]
        assert text.split("\n")[2] == "```json" and "```" in text.split("\n")[-2:]
        assert budget - 1.75 < spent(f) <= budget, budget  # a line costs 1.75


def test_a_gap_before_a_cut_part_is_paid() -> None:
    first = Part("must", lines=lines("f", 2), now=True)
    second = Part("must", lines=lines("g", 80, width=3), gap=True)
    for budget in (b / 4 for b in range(240, 320)):
        f = fit([block("m", first, second)], budget)
        assert budget - 2 < spent(f) <= budget, budget  # (a blank line is reckoned 0.5)


def test_one_huge_line_shows_its_start_or_its_end() -> None:
    huge = "START " + "w" * 4000 + " END"
    f = fit([block("h", Part("must", lines=[huge, "next line"]))], 200)
    text = texts(f)[path("h")]
    assert "START www" in text and "END" not in text and "next line" not in text
    assert spent(f) <= 200

    f = fit([block("h", Part("must", lines=["first line", "next", huge], keep_end=True))], 200)
    text = texts(f)[path("h")]
    assert "www END" in text and "START" not in text and "first line" not in text
    assert spent(f) <= 200


def test_a_cut_now_part_leaves_nothing_to_the_rest_of_its_file() -> None:
    now = Part("must", lines=lines("n", 100), now=True)
    rest = Part("must", lines=lines("r", 3), gap=True)
    for budget in (100, 200, 300):
        f = fit([block("m", rest, now)], budget)
        text = texts(f)[path("m")]
        assert shown(text, "r") == [] and shown(text, "n")  # what to do now, first
        assert spent(f) <= budget


def test_less_room_than_a_stub_leaves_the_part_out_and_says_why() -> None:
    small = block("s", Part("must", lines=lines("s", 3)))
    big = block("b", Part("must", lines=lines("b", 100)))
    need_small = frame("s") + 15
    f = fit([small, big], need_small + frame("b") + line_cost(CUT) + 4)  # < 8 for a body
    t = texts(f)
    assert path("b") not in t and shown(t[path("s")], "s") == lines("s", 3)
    accounts = {acc.name: acc for _, acc in f.sections}
    assert accounts[path("b")].notes == ["left out: must-keep files alone exceed the budget"]
    assert t["left-out"] == f"[left out for the token budget: read {path('b')}]"


# -- max_tokens ----------------------------------------------------------------------


def test_max_tokens_caps_a_file_and_the_account_says_so() -> None:
    capped = block("c", Part("must", lines=lines("c", 50)), max_tokens=60)
    f = fit([capped], 1000)
    assert f.must_over == 0
    text = texts(f)[path("c")]
    assert lines_cost(text.split("\n")) + 0.5 <= 60 < lines_cost(text.split("\n")) + 0.5 + 5
    [(_, acc)] = f.sections
    assert acc.notes == ["must text cut: over its max_tokens (60)"]
    assert must_cost([capped]) == 60


# -- records ---------------------------------------------------------------------------


def test_a_record_shows_its_newest_items_and_counts_the_rest() -> None:
    what = newest_caption("decisions", ".agent/r")
    part = Part("record", items=[[ln] for ln in lines("r", 40)], least=3, caption=what)
    part.what = "decisions"
    f = fit([block("r", part)], 80)
    text = texts(f)[path("r")]
    rows = shown(text, "r")
    assert rows == lines("r", 40)[40 - len(rows) :] and len(rows) >= 3
    assert f"_(the newest {len(rows)} of 40 decisions; read .agent/r for the rest)_" in text
    assert 80 - 5 < spent(f) <= 80
    [(_, acc)] = f.sections
    assert acc.notes == [f"decisions: the newest {len(rows)} of 40 shown (3 guaranteed)"]
    assert acc.keep == "record"


def test_an_uncounted_record_says_plus() -> None:
    part = Part("record", items=[[ln] for ln in lines("r", 10)], least=2, unread=None)
    f = fit([block("r", part)], 1000)
    [(_, acc)] = f.sections
    assert acc.notes == ["items: the newest 10 of 10+ shown (2 guaranteed)"]
    part.unread = 5
    [(_, acc)] = fit([block("r", part)], 1000).sections
    assert acc.notes == ["items: the newest 10 of 15 shown (2 guaranteed)"]


def test_a_record_squeezed_by_must_keep_facts_says_so() -> None:
    facts = block("m", Part("must", lines=lines("m", 10)))
    part = Part("record", items=[[ln] for ln in lines("r", 10)], least=5)
    f = fit([facts, block("r", part)], frame("m") + 50 + frame("r") + 12)
    accounts = {acc.name: acc for _, acc in f.sections}
    [note] = accounts[path("r")].notes
    assert note.endswith("(5 guaranteed): the budget went to must-keep facts first")
    assert path("r") in f.cut and path("m") not in f.cut


# -- the account -----------------------------------------------------------------------


def test_the_account_names_each_file_its_keeps_and_its_whole_cost() -> None:
    mixed = block(
        "x",
        Part("must", lines=lines("m", 2)),
        Part("record", items=[[ln] for ln in lines("r", 3)], least=1),
        Part("must", lines=lines("n", 1)),
        lead=["a lead line"],
        notes=["a note from the reader"],
        complete=False,
    )
    f = fit([mixed], 1000)
    [(text, acc)] = f.sections
    assert acc.name == path("x") and acc.keep == "must+record"
    assert acc.total == lines_cost(["## x", "", "a lead line"]) + 6 * 5
    assert acc.notes == [
        "a note from the reader",
        "items: the newest 3 of 3 shown (1 guaranteed)",
        "only part of the file was read (it is large)",
    ]
    assert acc.as_dict() == {
        "name": path("x"),
        "keep": "must+record",
        "tokens": 0,
        "total": round(acc.total),
        "notes": acc.notes,
    }
    assert text is not None and text.endswith(marker("x"))  # a read cap: there is more
    assert f.cut == [path("x")]
    assert fit([block("e")], 1000).sections == []  # a file with nothing in it: no section


def test_a_cut_part_shows_from_room_for_a_stub_of_min_body_tokens() -> None:
    part = Part("must", lines=lines("m", 50, width=31))  # 8 tokens a line
    at_least = frame("m") + marker_cost(part) + MIN_BODY_TOKENS
    f = fit([block("m", part)], at_least)
    assert shown(texts(f)[path("m")], "m") == lines("m", 1, width=31)
    assert path("m") not in texts(fit([block("m", part)], at_least - 0.25))


def test_a_cut_of_one_line_is_paid_before_the_rest_of_the_file() -> None:
    now = Part("must", lines=lines("n", 20, width=47), now=True)  # 12 tokens a line
    rest = Part("must", lines=lines("r", 10), gap=True)
    budget = frame("m") + marker_cost(now) + 23  # room for one line of `now`
    f = fit([block("m", rest, now)], budget)
    text = texts(f)[path("m")]
    assert len(shown(text, "n")) == 1 and shown(text, "r") == []
    assert spent(f) <= budget


def test_a_part_given_no_lines_costs_nothing_to_the_rest_of_the_file() -> None:
    now = Part("must", lines=lines("n", 50), now=True)
    rest = Part("must", lines=lines("r", 4))  # 20 tokens
    f = fit([block("m", rest, now)], frame("m") + 20.5)  # too little for a cut of `now`
    text = texts(f)[path("m")]
    assert shown(text, "r") == lines("r", 4) and shown(text, "n") == []


def test_a_fenced_part_cut_leaves_the_next_part_only_what_is_left() -> None:
    now = Part("must", lines=lines("n", 20, width=119), now=True, fence="text")  # 30 a line
    rest = Part("must", lines=lines("r", 10), gap=True)
    for budget in (b / 4 for b in range(400, 800)):
        f = fit([block("m", rest, now)], budget)
        assert spent(f) <= budget, budget


def record(tag: str, n: int, least: int, **kw: object) -> Part:
    items = [[f"{tag}{'x' * (i % 3) * 6}"] for i in range(n)]  # 0.5, 2 or 3.5 tokens
    caption = newest_caption("items", path(tag))
    return Part("record", items=items, least=least, caption=caption, **kw)  # type: ignore[arg-type]


def planned(f: Fitted, gaps: int = 0) -> float:
    """What the fit reckoned it spent: a gap is reckoned 0.5, and not shown at a file's top."""
    return spent(f) + 0.5 * gaps


def test_records_fill_the_room_to_the_last_item_that_fits() -> None:
    for kw, gaps in (({}, 0), ({"gap": True}, 1), ({"fence": "log"}, 0)):
        for budget in (b / 4 for b in range(60, 260)):
            f = fit([block("r", record("r", 40, 2, **kw))], budget)
            if path("r") not in texts(f):
                continue
            rows = shown(texts(f)[path("r")], "r") or [
                ln for ln in texts(f)[path("r")].split("\n") if ln.startswith("r")
            ]
            n = len(rows)
            assert planned(f, gaps) <= budget, (kw, budget)
            if n < 40:  # the next older item would not have fit
                nxt = 0.5 + 1.5 * ((40 - n - 1) % 3)
                caption = 0.25 if n + 1 == 10 else 0.0  # a digit more
                assert planned(f, gaps) + nxt + caption > budget, (kw, budget, n)


def test_every_record_gets_its_guaranteed_items_before_any_gets_more() -> None:
    a = Part("record", items=[["a"]] * 10, least=1)
    b = Part("record", items=[["b"]] * 10, least=3)
    budget = frame("a") + frame("b") + 4 * 0.5  # four items, no caption (no_caption)
    f = fit([block("a", a), block("b", b)], budget)
    t = texts(f)
    assert t[path("a")].split("\n")[2:] == ["a"] and t[path("b")].split("\n")[2:] == ["b"] * 3


def test_a_left_out_record_or_free_file_says_why() -> None:
    facts = block("m", Part("must", lines=lines("m", 100)))
    rec = block("r", Part("record", items=[["r"]] * 5, least=2))
    free = block("f", Part("free", lines=lines("f", 5)))
    f = fit([facts, rec, free], 100)
    accounts = {acc.name: acc for _, acc in f.sections}
    assert accounts[path("r")].notes[-1] == "left out: no room left after the must-keep facts"
    assert accounts[path("f")].notes == ["left out: nothing left for free text"]
    f = fit([block("m", Part("must", lines=lines("m", 3))), rec, free], 20 + frame("m") + 1)
    accounts = {acc.name: acc for _, acc in f.sections}
    assert accounts[path("f")].notes == ["left out: free text gets only what is left"]


def test_a_record_with_no_room_for_its_newest_item_does_not_hold_back_the_others() -> None:
    huge = Part("record", items=[["h" * 4000]], least=1)
    b = Part("record", items=[["b"]] * 10, least=3)
    c = Part("record", items=[["c"]] * 10, least=1)
    budget = frame("b") + frame("c") + 4 * 0.5  # four items: b's three and c's one
    t = texts(fit([block("h", huge), block("b", b), block("c", c)], budget))
    assert path("h") not in t
    assert t[path("b")].split("\n")[2:] == ["b"] * 3 and t[path("c")].split("\n")[2:] == ["c"]


def test_a_files_heading_is_paid_once_for_all_its_parts() -> None:
    mixed = block(
        "x",
        Part("must", lines=lines("m", 2)),
        Part("record", items=[["r"]] * 200, least=1),
    )
    for budget in (b / 4 for b in range(100, 140)):
        f = fit([mixed], budget)
        assert budget - 0.5 < spent(f) <= budget, budget  # filled to the last item


def test_max_tokens_bounds_all_of_a_files_parts_together() -> None:
    capped = block(
        "x",
        Part("must", lines=lines("m", 2)),
        Part("record", items=[["r"]] * 200, least=1),
        max_tokens=40,
    )
    f = fit([capped], 1000)
    assert 40 - 0.5 < spent(f) <= 40


def test_a_record_shown_whole_is_not_reported_cut() -> None:
    f = fit([block("r", Part("record", items=[["r"]] * 3, least=3))], 1000)
    assert f.cut == [] and texts(f)[path("r")].split("\n")[2:] == ["r"] * 3
    f = fit([block("m", Part("must", lines=lines("m", 3)))], 1000)
    assert f.cut == []


def test_a_files_text_ends_with_its_last_line_as_written() -> None:
    x = Part("must", lines=["a line", "ends in X", ""])
    br = Part("must", lines=["a markdown break  "])
    t = texts(fit([block("x", x), block("b", br)], 1000))
    assert t[path("x")] == "## x\n\na line\nends in X"
    assert t[path("b")] == "## b\n\na markdown break  "


def test_the_left_out_line_is_accounted_at_its_cost() -> None:
    f = fit([block("a", Part("must", lines=lines("a", 40)))], 0.5)
    [(text, acc)] = [(t, a) for t, a in f.sections if a.name == "left-out"]
    assert text is not None and acc.total == estimate_tokens(text) and acc.keep == "fixed"
