#!/usr/bin/env python3
"""The mutation score of the pure cores and the guarantees, per module (mutmut).

usage: scripts/mutation_score.py [--list] [--only GROUP ...] [--jobs N] [--work DIR]
                                 [--survivors]

`scripts/mutations.py` names the bugs we thought of; this runs mutmut, which
makes every one-token bug it can (an operator, a constant, a string, a
dropped call or argument) in the modules of each group below, and runs only
that group's tests against each (of those, only the tests that call the
mutated function: mutmut records which do on a first clean run). A mutant
is *killed* when a test fails, times out or crashes; it *survived* when they
all pass. Mutants that change nothing a caller could see are listed in
``EQUIVALENT`` with why, and counted apart; a survivor that is not listed
there is a test we still owe.

Each group runs in a copy of the repository, from scratch (``--work DIR``
keeps the copies in DIR, to look further with ``mutmut results`` and ``mutmut
show NAME`` there).
The tests of a group run in-process (mutmut forks a worker per mutant); the
subprocesses a test starts import the unmutated package, so a group's tests
are ones that call its code in the test's own process. Prints a table per
module and the total; exits 1 if the score of the chosen groups is below
``TARGET`` or a group could not run. With ``--jobs 1`` (the default) about an
hour for every group on 2 busy cores: run it on demand, not in CI.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = 0.90
COPIED = ("agentd", "tests", "docs", "scripts", "README.md", "pyproject.toml")


@dataclass(frozen=True)
class Group:
    name: str
    modules: tuple[str, ...]  # files under agentd/ to mutate
    tests: tuple[str, ...]  # the tests about them (paths or node ids)


GROUPS = (
    Group(
        "memory-writes",
        ("agentd/fileio.py",),
        (
            "tests/test_guards_fileio.py",
            "tests/memory/test_guards_writes.py",
            # its in-process tests: the end-to-end one fails under load in mutmut's run
            "tests/test_logfiles.py::test_the_event_log_rotates_by_size_and_reopens_a_deleted_file",
            "tests/test_logfiles.py::test_history_keeps_its_newer_half_past_max_bytes",
        ),
    ),
    Group(
        "decisions",
        ("agentd/memory/formats/decisions.py",),
        (
            "tests/memory/test_guards_writes.py",
            "tests/memory/test_guards_decisions.py",
            "tests/memory/test_state_verbs.py",
        ),
    ),
    Group(
        "budget-fit",
        ("agentd/memory/bootstrap/fit.py", "agentd/supervisor/budget.py"),
        (
            "tests/memory/test_fit.py",
            "tests/memory/test_priority.py",
            "tests/supervisor/test_budget.py",
        ),
    ),
    Group(
        "matcher-echo",
        ("agentd/terminal/matcher.py", "agentd/terminal/echo.py"),
        (
            "tests/terminal/test_echo_filter.py",
            "tests/terminal/test_matcher.py",
            "tests/terminal/test_matcher_bulk.py",
            "tests/terminal/test_guards_echo.py",
            # the matcher's fast in-process tests of screens, redraws and captures
            "tests/terminal/test_echo_case.py",
            "tests/terminal/test_echo_grown_rows.py",
            "tests/terminal/test_real_captures.py",
            "tests/terminal/test_resize.py",
            "tests/terminal/test_rows_again.py",
            "tests/terminal/test_screen.py",
        ),
    ),
    Group(
        "process-ending",
        ("agentd/process/ending.py",),
        (
            "tests/process/test_ending_steps.py",
            "tests/process/test_tree.py",
            "tests/process/test_guards_grace.py",
        ),
    ),
    Group(
        "policy",
        ("agentd/supervisor/policy.py",),
        (
            "tests/supervisor/test_policy.py",
            "tests/supervisor/test_refusal.py",
            "tests/supervisor/test_guards_policy.py",
        ),
    ),
    Group(
        "triggers",
        ("agentd/supervisor/triggers.py",),
        ("tests/supervisor/test_guards_triggers.py",),
    ),
    Group(
        "pauses-reclaim",
        ("agentd/supervisor/records/reclaim.py", "agentd/supervisor/records/history.py"),
        (
            "tests/supervisor/test_history.py",
            "tests/supervisor/test_reclaim.py",
            # not test_guards_pauses.py: it reaches these through whole sessions in a
            # Supervisor, and a mutant that breaks reclaim makes it wait out its 20 s
            # bounds (30 s a mutant); its pauses read restored_pause, tested here
            "tests/supervisor/test_records.py",
        ),
    ),
    Group(
        "control-caps",
        ("agentd/daemon/control/connections.py",),
        ("tests/daemon/test_guards_caps.py",),
    ),
)

# Mutants no test can kill because nothing a caller sees changes: (module, the
# function, a regex the mutated line matches) -> why. Matched against mutmut's diff.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    (
        "agentd/supervisor/policy.py",
        "xǁRestartPolicyǁ_failure",
        r"zip\(history, failed, (strict=(None|False))?\s*\)",
    ): ("`failed` is built from `history` one for one: zip's strict check never fires"),
    ("agentd/supervisor/triggers.py", "xǁTriggersǁ_check_idle", r"if remaining < 0:"): (
        "at exactly 0 left it re-arms a 0 s timer, whose check then fires: the same end"
    ),
    ("agentd/daemon/control/connections.py", "x_drain", r"ConnectionResetError\("): (
        "its text is shown nowhere: each caller ends the connection quietly on a ConnectionError"
    ),
    ("agentd/daemon/control/connections.py", "x_stream_idle", r'getattr\(reader, "_buffer", \)'): (
        "every asyncio.StreamReader has a _buffer: the default is never used"
    ),
    ("agentd/daemon/control/connections.py", "x_stream_idle", r"poll\.poll\(1\)"): (
        "waiting 1 ms for a request instead of none: the same answer, 1 ms later"
    ),
    ("agentd/daemon/control/connections.py", "xǁClientsǁwaiting", r"busy = None"): (
        "None is as false as False"
    ),
    (
        "agentd/daemon/control/connections.py",
        "xǁClientsǁ_refuse",
        r"len\(self\._refused\) > MAX_CLIENTS",
    ): "old refusals forgotten one refusal later: one more entry a while, the same said",
    ("agentd/daemon/control/connections.py", "xǁClientsǁ_refuse", r"now - t <= REFUSED_EVERY"): (
        "a refusal exactly REFUSED_EVERY old is said again whether it is kept or forgotten"
    ),
    ("agentd/supervisor/records/reclaim.py", "x_reclaim_orphans", r"claim_name\(None, "): (
        "the name is only in the text of why the lock was not taken, which is not used here"
    ),
    ("agentd/supervisor/records/history.py", "x_recent_events_of", r"recent\(limit=1000001\)"): (
        "256 KiB hold fewer than 90,000 records (3 bytes at least): a million never binds"
    ),
    ("agentd/supervisor/records/history.py", "xǁHistoryǁ_rotate", r"if cut <= 1 or"): (
        "cut is 1 only for a file of one byte, which cut >= len(data) leaves whole too"
    ),
    ("agentd/supervisor/records/history.py", "xǁHistoryǁfsync", r"self\.unsynced = None"): (
        "None is as false as False"
    ),
    (
        "agentd/supervisor/records/reclaim.py",
        "x__from_history",
        r"\), None, (None|1), 0\.0\)\)$|\), None, 0, (None|1\.0)\)\)$",
    ): "a session found in the history is ended with its unit's stop: these are never read",
    ("agentd/supervisor/records/history.py", "xǁHistoryǁ_append", r"ensure_ascii=None"): (
        "None is as false as False"
    ),
    ("agentd/supervisor/records/history.py", "xǁHistoryǁ_append", r"os\.pread\(fd, 2, end - 1\)"): (
        "a read of 2 bytes at the last byte's offset returns that one byte"
    ),
    ("agentd/supervisor/records/history.py", "xǁHistoryǁ_append", r'encode\("UTF-8"\)'): (
        "the same codec"
    ),
    ("agentd/supervisor/records/history.py", "xǁHistoryǁfsync", r"os\.O_RDONLY & os\.O_CLOEXEC"): (
        "os.open makes every fd non-inheritable anyway (PEP 446): O_CLOEXEC adds nothing"
    ),
    ("agentd/memory/formats/decisions.py", "x__field", r"_label\(None\)"): (
        "not equivalent but out of mutmut's reach: it runs at import, building the line's "
        "pattern, before mutmut picks a mutant (a bad label there fails every test)"
    ),
    ("agentd/memory/formats/decisions.py", "x_scan_file", r'decode\("UTF-8"'): "the same codec",
    ("agentd/memory/bootstrap/fit.py", "x__level", r"if n \* count >= left:"): (
        "at n * count == left the share left / count is n, the level the loop goes on to"
    ),
    ("agentd/memory/bootstrap/fit.py", "x__level", r"max\(left, 1\.0\) / count"): (
        "left < 1: a share under 1 token either way, below MIN_BODY_TOKENS: the same parts out"
    ),
    (
        "agentd/memory/bootstrap/fit.py",
        "x__level",
        r"return max\((needs, (default=(None|1\.0))?\s*|None, default=0\.0|default=0\.0)\)",
    ): "unreachable: called only when the needs exceed the room, the loop returns first",
    ("agentd/memory/bootstrap/fit.py", "x__lines_fitting", r"return \(?(0|count), 1\.0\)?"): (
        "the room returned is read only for a part of one huge line (count -1)"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁ_again", r"(return|else) -2$"): (
        "-2 is 'not found' to every caller, as -1 is: they ask < 0 or >= 0"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁ_near_cursor", r"return -2$"): (
        "-2 is 'not found' to every caller, as -1 is: they ask < 0 or >= 0"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁconsume", r"self\.version \+= 2"): (
        "the version is only compared for equality: a step of 2 never repeats a value either"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁexpect", r"self\.version \+= 2"): (
        "the version is only compared for equality: a step of 2 never repeats a value either"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁconsume", r'before: str = "XXXX"'): (
        "a line of 4 word characters is never remembered (_REDRAW_MIN 8): nothing to discard"
    ),
    ("agentd/memory/bootstrap/fit.py", "x__records", r"progress = None"): (
        "None is false as False is: the loop ends the same"
    ),
    (
        "agentd/process/ending.py",
        "xǁ_Endingǁ__init__",
        r"self\._(tracked_any|group_alive) = None",
    ): ("only ever read as `not ...`: None is as false as False"),
    ("agentd/memory/bootstrap/fit.py", "x_marker_cost", r'path="X" \* 40'): (
        "a path of 40 X costs what one of 40 x does: the same length"
    ),
    (
        "agentd/terminal/matcher.py",
        "xǁLineMatcherǁ_block",
        r"end = len\(text\) if (\(unfinished >= 0\) or True|unfinished (> 0|>= 1)|.* \+ 1$)",
    ): (
        "the block's end only takes in the LF after its last line (an empty line, never "
        "matched); its unfinished line is never its first (a chunk with no LF is not scrolled)"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ__init__", r"self\._rules_new = (None|True)"): (
        "never read before add_rule sets it: with no rule at all check_partial returns first"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁcheck_partial", r"self\._rules_new = None"): (
        "only passed on as settle's force, read as a truth value: None is as false as False"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁfeed", r"final=None"): (
        "ChunkCut.whole reads final as a truth value: None is as false as False"
    ),
    ("agentd/memory/bootstrap/fit.py", "x__records", r"stopped\.add\(None\)"): (
        "a record's next item that did not fit is tried again at the same cost in less room: "
        "it never fits later"
    ),
    ("agentd/memory/bootstrap/fit.py", "x_must_cost", r"Plan\(blocks, (None|1\.0)\)"): (
        "must_cost reads the frames and limits of its plan, never its room"
    ),
    ("agentd/process/ending.py", "xǁ_Endingǁ__init__", r'self\._group_sig: int \| None = ""'): (
        "only compared with a signal number: the empty string equals none, as None does"
    ),
    ("agentd/process/ending.py", "xǁ_Endingǁsend", r'self\._group_sig = ""'): (
        "only compared with a signal number: the empty string equals none, as None does"
    ),
    ("agentd/process/ending.py", "xǁ_Endingǁkill_now", r"if pid in self\.killed\)"): (
        "kill_now runs when the ending is cancelled or failed: no EndResult reads `killed` then"
    ),
    ("agentd/memory/bootstrap/fit.py", "xǁPlanǁlimit", r'float\("INF"\)'): (
        'float("INF") is float("inf")'
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁcheck_partial", r"_rules_new = (None|True)"): (
        "a forced look at an unchanged line finds only the hits it fired already (None is "
        "false): it costs time, it changes no hit"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ__init__", r"_rules_new = (None|True)"): (
        "a forced look at an unchanged line finds only the hits it fired already (None is "
        "false): it costs time, it changes no hit"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁfeed", r"final=None\)"): (
        "None is as false as False"
    ),
    ("agentd/supervisor/budget.py", "x__count", r"value >= 0 else 0"): (
        "a count of 0 is 0 either way"
    ),
    ("agentd/supervisor/budget.py", "x__day_of", r'record\.get\("at", ?(None|"XXXX")?\)'): (
        "a record without a time: `None` or `XXXX` fails to parse as the empty string does"
    ),
    ("agentd/fileio.py", "x_append_line", r"os\.pread\(fd, 2, size - 1\)"): (
        "a read of 2 bytes at the last byte's offset returns that one byte"
    ),
    ("agentd/fileio.py", "x_append_line", r'encode\("UTF-8"\)'): "the same codec",
    ("agentd/fileio.py", "x_write_atomic", r'encode\("UTF-8"\)'): "the same codec",
    ("agentd/fileio.py", "x_hold", r'decode\("UTF-8"'): "the same codec",
    ("agentd/fileio.py", "x_tail_lines", r'decode\("UTF-8"'): "the same codec",
    ("agentd/fileio.py", "x_tail_window", r'decode\("UTF-8"'): "the same codec",
    ("agentd/fileio.py", "x_tail_lines", r'count\(b"\\n", None,'): "count's start None is 0",
    ("agentd/fileio.py", "x_tail_window", r"if begin > start:"): (
        "at begin == start it reads 0 bytes and adds no line: the same result"
    ),
    ("agentd/fileio.py", "x_tail_window", r"if \(cut >= 0\) or True"): (
        "with no newline in the window its bytes split into no whole line either way"
    ),
    ("agentd/fileio.py", "x_tail_lines", r"final_nl = f\.read\((None|2)\)"): (
        "read at the last byte's offset: any size returns that one byte"
    ),
    ("agentd/fileio.py", "x_hold", r"os\.read\(fd, 4097\)"): (
        "a holder's line is `PID NOTE`, far shorter than either read size"
    ),
    ("agentd/fileio.py", "x_hold", r"os\.ftruncate\(fd, 1\)"): (
        "the line then written from offset 0 is longer than the 1 byte kept: it covers it"
    ),
    ("agentd/fileio.py", "x_write_atomic", r"os\.urandom\(7\)"): (
        "the temp name's random part is 56 bits, not 48: still unique"
    ),
    ("agentd/fileio.py", "x_write_atomic", r"os\.O_EXCL & os\.O_CLOEXEC"): (
        "without O_EXCL and O_CLOEXEC: no one can have put a file at a 48-bit random name "
        "first, and the fd lives only through one write (no exec in between)"
    ),
    # -- the matcher's plain text: how much of it the bulk takes (agentd.terminal.bulk) --
    # scroll_lines gives the same screen and hits as drawing the lines one by one
    # (test_matcher_bulk.py, test_matcher_props.py): a mutant that only hands the bulk
    # less, or a window of another size, changes the speed, not what is seen. Handing
    # it more (an unfinished line before the read ends) is not equivalent: tested.
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_plain", r'if "XX\\nXX" not in text'): (
        "a piece with no LF goes to the loop: the bulk takes it as the read's unfinished "
        "line only where draw would give the same (it is the last piece), else draw does"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_plain", r"while pos <= size"): (
        "one more turn at the end: scroll_lines of nothing writes nothing, then pos >= size"
    ),
    (
        "agentd/terminal/matcher.py",
        "xǁLineMatcherǁ_plain",
        r"stop = (None$|min\(size, pos - self\._window\))",
    ): (
        "a window of the whole text (its unfinished line drawn one by one) or of none: "
        "the same screen and hits"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_plain", r"unfinished=None$"): (
        "the unfinished line drawn one by one instead of in bulk: the same screen and hits"
    ),
    (
        "agentd/terminal/matcher.py",
        "xǁLineMatcherǁ_plain",
        r"if \(complete\) (and False|or True) else WINDOW_MIN|min\(3 \* self\._window",
    ): "the window's size: how many lines one call takes, not what is drawn",
    (
        "agentd/terminal/matcher.py",
        "xǁLineMatcherǁ_plain",
        r'nl = text\.(rfind\("\\n", pos\)|find\("XX\\nXX", pos\))|if nl (<= 0|< 1):',
    ): (
        "more than one line to draw at once: draw takes each LF as CR LF, as this loop "
        "does; only the bulk is not tried again for the lines after the first"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_plain", r"if done and pos <= size:"): (
        "at pos == size the loop ends either way"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_plain", r"if pos > size:"): (
        "at pos == size (the bulk wrote the rest) it draws an empty string: write('') "
        "moves no cell and counts nothing; the stroke it notes at the new row's start "
        "changes nothing, as bulk_drawn left the stroke unsettled"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_plain", r"^\s*return$"): (
        "the break it replaces is the loop's last statement, and the function's"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_ingest", r'decode\("UTF-8"'): ("the same codec"),
    (
        "agentd/terminal/matcher.py",
        "xǁLineMatcherǁ_ingest",
        r"^\s*(self\._screen\.)?narrow = (None|False)$",
    ): (
        "narrow false (None is) only sends the text down the path that works out each "
        "character's cells (Screen.write, bulk.scroll_lines): narrow text's cells are its "
        "characters, the same screen, slower"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁ_ingest", r'count_cjk\("XXXX"\.join'): (
        "X is no CJK character: the test's truth is the same"
    ),
    (
        "agentd/terminal/matcher.py",
        "xǁLineMatcherǁ_ingest",
        r"last=(None|i == len\(pieces\) (\+ 1|- 2))\)",
    ): (
        "last then holds for no text piece (split's pieces alternate text and sequence, "
        "an odd count): the read's unfinished line is drawn one by one, the same screen"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁ__init__", r"self\._misses = (None|1)$"): (
        "a miss is counted only while echo is awaited, and expect sets the count to 0 first"
    ),
    ("agentd/terminal/echo.py", "xǁEchoFilterǁ__init__", r"self\.version = 1"): (
        "the version is only compared for equality: where it starts changes no comparison"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁline", r"^\s*echo = None$"): (
        "echo is read as a truth value only: None is as false as False"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁline", r"if hits or not echo:"): (
        "on an echo line line_hits leaves out the echo-checked rules, and the filter "
        "only takes out hits of those: it takes out nothing"
    ),
    ("agentd/terminal/matcher.py", "xǁLineMatcherǁline", r"_replace\(dirty=None\)"): (
        "dirty is read as a truth value only: None is as false as False"
    ),
}


@dataclass
class Mutant:
    module: str
    name: str  # mutmut's name, e.g. agentd.fileio.x_write_atomic__mutmut_3
    status: str  # killed, survived, timeout, no tests, ...
    diff: str = ""
    equivalent: str = ""

    @property
    def function(self) -> str:
        return self.name.rsplit(".", 1)[-1].split("__mutmut_")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the groups and exit")
    parser.add_argument("--only", action="append", default=[], metavar="GROUP")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--work", type=Path, help="keep each group's copy in DIR/GROUP")
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    parser.add_argument(
        "--no-run", action="store_true", help="report the last run kept in --work DIR, run nothing"
    )
    args = parser.parse_args(argv)
    if args.list:
        for g in GROUPS:
            print(f"{g.name:16} {' '.join(g.modules)}\n{'':16} tests: {' '.join(g.tests)}")
        return 0
    names = {g.name for g in GROUPS}
    unknown = sorted(set(args.only) - names)
    if unknown:
        print(f"mutation_score: no such group: {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    chosen = [g for g in GROUPS if not args.only or g.name in args.only]
    if args.no_run and args.work is None:
        print("mutation_score: --no-run reads a kept run: give its --work DIR", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="mutscore-"))
    failed = False
    found: list[Mutant] = []
    for group in chosen:
        print(f"== {group.name}: mutating {' '.join(group.modules)}", flush=True)
        if args.no_run:
            mutants: list[Mutant] | None = read_results(work / group.name, group)
        else:
            mutants = run_group(group, work / group.name, args.jobs)
        if mutants is None:
            failed = True
            continue
        found += mutants
        print(table(mutants, by="module"), flush=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    if not found:  # each group failed, and said why: there is no score to print
        return 1
    print()
    print(table(found, by="module"))
    if args.survivors:
        for m in found:
            if m.status != "killed" and not m.equivalent:
                print(f"\n# {m.name}: {m.status}\n{m.diff}")
    score = ratio(found)
    print(f"\nkilled {score:.1%} of the mutants that change behaviour (target {TARGET:.0%})")
    return 1 if failed or score < TARGET else 0


def run_group(group: Group, copy: Path, jobs: int) -> list[Mutant] | None:
    """Run mutmut over ``group`` in ``copy`` (made if new); its mutants, None on failure."""
    missing = [t for t in group.tests if not (REPO / t.split("::")[0]).exists()]
    missing += [m for m in group.modules if not (REPO / m).is_file()]
    if missing:
        print(f"mutation_score: {group.name}: no such file: {' '.join(missing)}", file=sys.stderr)
        return None
    # Every run from scratch: mutmut keeps a verdict while the mutated function is
    # unchanged, even when the tests changed, and a score must be of the tests as they are.
    shutil.rmtree(copy / "mutants", ignore_errors=True)
    copy_repo(copy)  # pyproject.toml fresh from the repository, then mutmut's settings
    with (copy / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(mutmut_config(group))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTD_", "PYTEST_"))}
    env["PYTHONPYCACHEPREFIX"] = str(copy / ".pyc")
    mutmut = Path(sys.executable).with_name("mutmut")
    log = copy / "mutmut.log"
    with log.open("w") as out:
        proc = subprocess.run(
            [str(mutmut), "run", "--max-children", str(max(1, jobs))],
            cwd=copy,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        print(f"mutation_score: {group.name}: mutmut exited {proc.returncode}:", file=sys.stderr)
        print("\n".join(tail), file=sys.stderr)
        return None
    return read_results(copy, group)


def mutmut_config(group: Group) -> str:
    def toml_list(items: tuple[str, ...] | list[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["agentd/"]\n'
        f"only_mutate = {toml_list(group.modules)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(group.tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-n", "0", "--timeout=300"]\n'
        f"also_copy = {toml_list(['docs/', 'scripts/', 'README.md'])}\n"
        "use_git_change_detection = false\n"
    )


def copy_repo(dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
    dst.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dst / name)


def read_results(copy: Path, group: Group) -> list[Mutant] | None:
    """The kept run of ``group`` in ``copy``; None, saying why, if there is none."""
    missing = [m for m in group.modules if not (copy / "mutants" / f"{m}.meta").is_file()]
    if missing:
        print(
            f"mutation_score: {group.name}: no kept run in {copy} (no result for "
            f"{', '.join(missing)}): run the group first with --work {copy.parent}",
            file=sys.stderr,
        )
        return None
    mutants: list[Mutant] = []
    statuses = _statuses()
    for module in group.modules:
        meta = json.loads((copy / "mutants" / f"{module}.meta").read_text(encoding="utf-8"))
        found = [
            Mutant(module, name, statuses.get(code, "suspicious"))
            for name, code in sorted(meta["exit_code_by_key"].items(), key=lambda kv: _order(kv[0]))
        ]
        survived = [m.name for m in found if m.status != "killed"]
        diffs = _diffs(copy / "mutants" / module, module, survived)
        for m in found:
            m.diff = diffs.get(m.name, "")
            m.equivalent = equivalent(m) if m.status != "killed" else ""
        mutants += found
    return mutants


def _diffs(mutated: Path, module: str, names: list[str]) -> dict[str, str]:
    """Each mutant's diff against the original function (mutmut's ``show``, one parse)."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function

    tree = cst.parse_module(mutated.read_text(encoding="utf-8"))
    out = {}
    for name in names:
        before, after = (
            cst.Module([f(tree, name)]).code.strip().splitlines()
            for f in (read_original_function, read_mutant_function)
        )
        out[name] = "\n".join(difflib.unified_diff(before, after, module, module, lineterm="", n=1))
    return out


def _order(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("__mutmut_")
    return head, int(number) if number.isdigit() else 0


def _statuses() -> dict[int | None, str]:
    from mutmut.stats import status_by_exit_code

    return {
        code: ("killed" if s in ("timeout", "segfault") else s)
        for code, s in status_by_exit_code.items()
    }


def equivalent(m: Mutant) -> str:
    added = [
        line[1:]
        for line in m.diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    for (module, function, pattern), why in EQUIVALENT.items():
        if (
            module == m.module
            and function == m.function
            and any(re.search(pattern, line) for line in added)
        ):
            return why
    return ""


def ratio(mutants: list[Mutant]) -> float:
    counted = [m for m in mutants if not m.equivalent]
    killed = sum(1 for m in counted if m.status == "killed")
    return killed / len(counted) if counted else 1.0


def table(mutants: list[Mutant], *, by: str) -> str:
    rows = [
        "| module | mutants | killed | survived | no test | equivalent | score |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    modules = list(dict.fromkeys(m.module for m in mutants))
    for module in [*modules, "total"] if len(modules) > 1 else modules:
        ms = [m for m in mutants if module in ("total", m.module)]
        c = Counter("equivalent" if m.equivalent else m.status for m in ms)
        rows.append(
            f"| {module} | {len(ms)} | {c['killed']} | {c['survived']} | {c['no tests']} "
            f"| {c['equivalent']} | {ratio(ms):.0%} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
