"""The echo filter on its own: which lines it takes for the echo of what agentd
typed, as a TUI draws, grows and redraws them (``agentd.terminal.echo``)."""

from __future__ import annotations

from agentd.terminal.echo import EchoFilter


def echoing(text: str) -> EchoFilter:
    f = EchoFilter()
    f.expect(text)
    return f


def test_lines_of_the_injected_text_are_echo_in_order_and_once() -> None:
    f = echoing("Read the state files first.\nThen run the tests.\n")
    assert f.active
    assert f.consume("> Read the state files first.")[0]
    assert f.consume("  Then run the tests.")[0]
    assert not f.active  # all of it echoed: nothing more expected
    assert not f.consume("ok")[0]  # the agent's own words now


def test_a_line_without_words_is_never_echo() -> None:
    f = echoing("--- a rule ---\n")
    assert f.consume("  ---  ") == (False, None)
    assert not f.peek(">  ")
    assert f.active  # and it moved nothing


def test_case_is_kept() -> None:
    assert not echoing("say sentinel:go when done").consume("GO")[0]


def test_a_line_is_echo_up_to_the_look_ahead_limit_past_the_cursor() -> None:
    line = "the sentinel text itself comes here"  # 29 word characters
    for skipped, echo in ((256, True), (257, False)):
        f = echoing("x" * skipped + " " + line)
        assert f.consume(line)[0] is echo, skipped


def test_a_row_that_grows_is_found_where_it_was_and_not_consumed_twice() -> None:
    f = echoing("one two three four five six seven")
    assert f.consume("one two") == (True, 0)
    echo, at = f.consume("three four")
    assert (echo, at) == (True, 6)
    assert f.peek("three four fi", since=at)  # drawn so far, where it was
    assert f.consume("three four five", since=at, before="three four") == (True, 6)
    assert f.active and f.consume("six seven")[0]
    assert not f.active
    # the row as it was is no longer remembered as an echo line: only as it grew
    assert not f.consume("three four")[0]
    assert f.consume("three four five")[0]


def test_a_row_that_grows_from_the_start_of_the_text() -> None:
    f = echoing("alpha beta gamma delta")
    assert f.consume("alpha beta") == (True, 0)
    assert f.peek("alpha beta gam", since=0)
    assert f.consume("alpha beta gamma", since=0, before="alpha beta") == (True, 0)
    assert f.consume("delta")[0] and not f.active
    assert not f.consume("alpha beta")[0]  # (only the whole row is remembered)


def test_positions_run_on_across_injections() -> None:
    f = echoing("first line here")
    assert f.consume("first line here") == (True, 0)
    f.expect("second text here")
    echo, at = f.consume("second text")
    assert (echo, at) == (True, 13)
    assert f.consume("second text here", since=at, before="second text") == (True, 13)
    assert not f.active


def test_a_row_showing_new_echo_in_place_of_old_keeps_the_old_as_a_redraw() -> None:
    f = echoing("aaaa bbbb")
    assert f.consume("aaaa bbbb") == (True, 0)
    f.expect("cccc dddd eeee")
    echo, at = f.consume("cccc dddd")
    assert (echo, at) == (True, 8)
    f.expect("ffff")
    # the same screen row now shows the next echo: found near the cursor, not at `at`
    assert f.consume("eeee ffff", since=at, before="cccc dddd")[0]
    assert f.consume("cccc dddd")[0]  # a TUI redrawing the old prompt line: still echo


def test_echo_lines_are_remembered_as_redraws_from_8_word_characters() -> None:
    f = echoing("abcd efgh\nabc defg\nok\n")
    assert f.consume("abcd efgh")[0] and f.consume("abc defg")[0] and f.consume("ok")[0]
    assert not f.active
    assert f.consume("abcd efgh")[0]  # 8: redrawn, still echo
    assert f.peek("abcd efgh")
    assert not f.consume("abc defg")[0]  # 7: too common a line to remember
    assert not f.consume("ok")[0]


def test_a_short_echo_row_drawn_again_where_it_was_is_echo() -> None:
    f = echoing("ab cd")
    assert f.consume("ab cd") == (True, 0)
    assert not f.active
    assert f.peek("ab cd", since=0)  # the same row, offered again
    assert not f.peek("ab cd")  # elsewhere: too short to be remembered


def test_a_row_redrawn_with_other_text_keeps_the_old_line_remembered() -> None:
    f = echoing("alpha beta gamma")
    assert f.consume("alpha beta gamma") == (True, 0)
    assert not f.consume("zzz other", since=0, before="alpha beta gamma")[0]
    assert f.consume("alpha beta gamma")[0]  # drawn again later: a redraw


def test_peek_does_not_take_other_lines_for_echo() -> None:
    f = echoing("alpha beta gamma")
    assert not f.peek("the agent's own words")
    assert f.consume("alpha beta gamma")[0] and not f.active
    assert not f.peek("the agent's own words")
    assert f.peek("alpha beta gamma")  # a redraw


def test_at_most_4096_echo_lines_are_remembered() -> None:
    f = EchoFilter()
    lines = [f"remembered line {i:05d}" for i in range(4097)]
    for line in lines:
        f.expect(line)
        assert f.consume(line)[0]
    assert f.consume(lines[4095])[0]  # the 4096th: remembered
    assert not f.consume(lines[4096])[0]  # the 4097th: not


def test_expectation_ends_after_1000_other_lines_in_a_row() -> None:
    f = echoing("first line of it\nsecond line of it\n")
    for i in range(1000):
        assert not f.consume(f"noise {i}")[0]
    assert f.consume("first line of it")[0]  # 1000 are not yet too many
    for i in range(1000):
        assert not f.consume(f"noise {i}")[0]
    assert f.consume("second line of it")[0]  # an echo line starts the count again
    assert not f.active

    f = echoing("first line of it\nsecond line of it\n")
    for i in range(1001):
        assert not f.consume(f"noise {i}")[0]
    assert not f.active  # the TUI folded it away: expect it no more
    assert not f.consume("first line of it")[0]


def test_the_version_changes_with_every_call_that_may_change_a_verdict() -> None:
    f = EchoFilter()
    seen = {f.version}
    f.expect("some text")
    assert f.version not in seen
    seen.add(f.version)
    f.consume("some")
    assert f.version not in seen
    seen.add(f.version)
    f.consume("unrelated")
    assert f.version not in seen
    seen.add(f.version)
    f.expect("more")
    assert f.version not in seen
    before = f.version
    f.peek("more")
    assert f.version == before  # peek changes nothing


def test_positions_run_on_past_text_given_up_on() -> None:
    f = echoing("alpha beta")
    for i in range(1001):
        f.consume(f"noise {i}")
    assert not f.active
    f.expect("gamma delta")
    assert f.consume("gamma delta") == (True, 9)  # after the 9 word characters given up on
