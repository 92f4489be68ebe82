"""Regexes that run on what an agent prints: in linear time, or within a time budget.

The agent controls the text its unit's sentinels are searched in, so no
search may hold the daemon's loop: Python's ``re`` backtracks, and
``(a+)+$`` takes minutes on a 30-character line. So a pattern (written, and
validated, in Python's syntax) is searched with RE2 (google-re2), whose time
is linear in the text, wherever RE2 can express it with the same matches
(``translate``: Python's Unicode ``\\d``, ``\\s`` and ``\\w`` spelled out).
What RE2 cannot express (lookarounds, backreferences, ``\\b`` outside ASCII
mode, possessive repeats, atomic groups, counts over 1000) runs on the
``regex`` module (the same syntax and matches as ``re``) with a timeout
(``MATCH_BUDGET``), which it checks as it goes, in any thread. Only a pattern
that ``regex`` does not compile runs on ``re`` itself: in the main thread a
timer interrupts a search that runs over the budget (``re`` checks for
signals as it goes), elsewhere it is measured after the fact. Either way
``MatchTimeout`` says so and the caller disables what runs the pattern
(``agentd.terminal.rules``).

``backtracking`` tells, from a pattern's structure, why a backtracking engine
could take exponential or polynomial time on it (``agentd check`` warns).

A shared leaf: it imports no layer of agentd.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
import signal
import sys
import threading
import time
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any, Protocol


@functools.cache
def _engine(name: str) -> Any:
    """The module ``re2`` or ``regex``, imported at the first pattern compiled on it (not
    at import: ``agentd check`` of a unit whose patterns do not backtrack, and a daemon
    whose units have none, never load them); None where it is not installed (every
    pattern then runs on ``re``, within the budget)."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - the package lists both
        return None


MATCH_BUDGET = 0.1  # s of CPU one search may take before its rule is disabled
# re's flags that regex takes (the same numbers but ASCII: _regex_flags; VERSION0, its
# default, is re's behaviour)
_REGEX_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII | re.UNICODE
_WALL_TRIES = 5  # a search interrupted while the process did not run it is tried again
RE2_MAX_MEM = 1 << 20  # bytes of DFA cache per RE2 pattern (past it: its NFA, still linear)
RE2_MAX_REPEAT = 1000


class MatchTimeout(Exception):
    """A search ran over ``MATCH_BUDGET``: the pattern backtracks on this text."""


class Found(Protocol):
    """What a search finds (``re.Match`` and RE2's match alike)."""

    def span(self, group: int = ...) -> tuple[int, int]: ...
    def start(self, group: int = ...) -> int: ...
    def groupdict(self) -> dict[str, Any]: ...


# --- the searcher ---------------------------------------------------------------------


class Searcher:
    """Searches of one pattern: on RE2 when it can (``linear``), else on ``regex``
    (or ``re``) within ``MATCH_BUDGET`` (``MatchTimeout``)."""

    __slots__ = ("_dollar", "_re2", "_regex", "linear", "pattern")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self._re2, self._dollar = _compiled_re2(pattern.pattern, pattern.flags)
        self.linear = self._re2 is not None
        needed = self._re2 is None or self._dollar
        self._regex = _compiled_regex(pattern.pattern, pattern.flags) if needed else None

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Found | None:
        """The first match in ``text[pos:endpos]``, as ``re.Pattern.search``."""
        end = len(text) if endpos is None else endpos
        if self._re2 is not None and not (self._dollar and "\n" in text):
            with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate: re, below
                found: Found | None = self._re2.search(text, pos, end)
                return found
        found = self._bounded("search", text, pos, end)
        return found

    def sub(self, repl: str, text: str) -> str:
        """``text`` with every match replaced by ``repl`` (a plain string)."""
        escaped = repl.replace("\\", "\\\\")
        if self._re2 is not None and not (self._dollar and "\n" in text):
            with contextlib.suppress(UnicodeEncodeError):
                done: str = self._re2.sub(escaped, text)
                return done
        return str(self._bounded("sub", escaped, text))

    def _bounded(self, method: str, *args: Any) -> Any:
        if self._regex is not None:
            return timed(getattr(self._regex, method), *args)
        return bounded(getattr(self.pattern, method), *args)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where every match in ``text`` is, as ``re.finditer`` finds them."""
        found = []
        pos = 0
        while pos <= len(text):
            m = self.search(text, pos)
            if m is None:
                break
            start, end = m.span()
            found.append((start, end))
            pos = end if end > start else end + 1
        return found

    def search_bytes(self, data: bytes, pos: int, endpos: int) -> Found | None:
        """The first match in UTF-8 ``data[pos:endpos]`` (byte offsets, bytes groups);
        only for a ``linear`` searcher: the text is encoded once for many searches."""
        assert self._re2 is not None and not self._dollar, "search_bytes() of a pattern on re"
        found: Found | None = self._re2.search(data, pos, endpos)
        return found


@functools.lru_cache(maxsize=4096)
def searcher(pattern: re.Pattern[str]) -> Searcher:
    """The ``Searcher`` of ``pattern`` (one per pattern: 100 units share a preset's)."""
    return Searcher(pattern)


@functools.lru_cache(maxsize=4096)
def _compiled_re2(source: str, flags: int) -> tuple[Any, bool]:
    """(the RE2 pattern or None, whether a text with a newline must go to ``re``)."""
    re2 = _engine("re2")
    if re2 is None:
        return None, False
    spelled, dollar = _translated(re.compile(source, flags))
    if spelled is None:
        return None, False
    options = re2.Options()
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    try:
        return re2.compile(spelled, options), dollar
    except re2.error:
        return None, False


@functools.lru_cache(maxsize=4096)
def _compiled_regex(source: str, flags: int) -> Any:
    """The pattern on ``regex``, or None (no ``regex``, or one it does not compile)."""
    regex = _engine("regex")
    if regex is None:
        return None
    try:
        return regex.compile(source, _regex_flags(regex, flags))
    except Exception:  # its syntax differs here: re, below
        return None


def _regex_flags(regex: Any, flags: int) -> int:
    """``re``'s flags as ``regex`` spells them: the same numbers, but for ASCII (256 in
    ``re``; 128 in ``regex``, whose 256 is another flag)."""
    out = flags & _REGEX_FLAGS & ~re.ASCII
    return out | regex.ASCII if flags & re.ASCII else out


# --- the budget ---------------------------------------------------------------------------


def timed(call: Any, *args: Any) -> Any:
    """``call(*args)`` (a ``regex`` pattern's method) with its timeout; MatchTimeout
    past the budget. The timeout is of the wall clock: one that ran out while this
    thread was not running (a loaded machine) is tried again."""
    for _ in range(_WALL_TRIES):
        started = time.thread_time()
        try:
            return call(*args, timeout=MATCH_BUDGET)
        except TimeoutError:
            used = time.thread_time() - started
            if used >= MATCH_BUDGET / 2:  # it ran, and ran long: it backtracks
                raise MatchTimeout(f"a search ran over {MATCH_BUDGET:g}s") from None
    raise MatchTimeout(f"a search did not end within {MATCH_BUDGET:g}s, {_WALL_TRIES} times")


class _Overrun(Exception):
    pass


class _Alarm:
    """SIGALRM as an interruption of the one search under way in the main thread."""

    armed = False
    installed = False

    @classmethod
    def usable(cls) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False  # a signal is handled in the main thread only
        if not cls.installed:
            if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
                return False  # someone else's timer: measure after the fact instead
            signal.signal(signal.SIGALRM, cls._handler)
            cls.installed = True
        return signal.getsignal(signal.SIGALRM) == cls._handler

    @classmethod
    def _handler(cls, _sig: int, _frame: Any) -> None:
        if cls.armed:
            raise _Overrun


def bounded(call: Any, *args: Any) -> Any:
    """``call(*args)`` (a ``re.Pattern`` method), MatchTimeout past the budget (for
    a pattern ``regex`` does not compile)."""
    if not _Alarm.usable():
        started = time.thread_time()
        found = call(*args)
        if time.thread_time() - started > MATCH_BUDGET:
            raise MatchTimeout(f"a search took {time.thread_time() - started:.2f}s")
        return found
    for _ in range(_WALL_TRIES):
        started = time.thread_time()
        try:
            try:
                _Alarm.armed = True
                signal.setitimer(signal.ITIMER_REAL, MATCH_BUDGET)
                found = call(*args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                _Alarm.armed = False
            return found
        except _Overrun:
            _Alarm.armed = False
            used = time.thread_time() - started
            if used >= MATCH_BUDGET / 2:  # it ran, and ran long: it backtracks
                raise MatchTimeout(f"a search ran over {MATCH_BUDGET:g}s") from None
            # the process was not running it (a loaded machine): try again
    raise MatchTimeout(f"a search did not end within {MATCH_BUDGET:g}s, {_WALL_TRIES} times")


# --- Python's syntax in RE2's -------------------------------------------------------------


@functools.cache
def _unicode_spaces() -> str:
    """Every character Python's ``\\s`` takes outside ASCII mode (``str.isspace``), as
    items of an RE2 class; found once, at the first pattern with a ``\\s`` translated.

    Each plane's 65,536 characters are decoded as one string from their code points
    in UTF-32 and split at its spaces: what lies between two pieces are spaces (10 ms,
    where asking each of the 1,114,112 characters took 150)."""
    units = bytearray(4 << 16)  # a plane's code points, UTF-32-LE: the third byte is the plane
    units[0::4] = bytes(range(256)) * 256
    units[1::4] = b"".join(bytes([high]) * 256 for high in range(256))
    spaces: list[int] = []
    for plane in range((sys.maxunicode + 1) >> 16):
        units[2::4] = bytes([plane]) * (1 << 16)
        text = units.decode("utf-32-le", "surrogatepass")
        after = plane << 16  # the first character not yet placed
        for piece in text.split():  # a run of consecutive characters
            spaces += range(after, ord(piece[0]))
            after = ord(piece[-1]) + 1
        spaces += range(after, (plane + 1) << 16)
    return "".join(f"\\x{{{c:x}}}" for c in spaces)


_CLASS_ITEMS = {  # a category inside a class, in Unicode mode (None: not expressible there)
    C.CATEGORY_DIGIT: r"\p{Nd}",
    C.CATEGORY_NOT_DIGIT: r"\P{Nd}",
    C.CATEGORY_WORD: r"\p{L}\p{N}_",
}
_NEGATED = {C.CATEGORY_NOT_SPACE: C.CATEGORY_SPACE, C.CATEGORY_NOT_WORD: C.CATEGORY_WORD}
_ASCII_ITEMS = {
    C.CATEGORY_DIGIT: "0-9",
    C.CATEGORY_SPACE: r"\t\n\x{b}\f\r ",
    C.CATEGORY_WORD: "0-9A-Za-z_",
}
_AT = {
    C.AT_BEGINNING: "^",
    C.AT_BEGINNING_STRING: r"\A",
    C.AT_END: "$",
    C.AT_END_STRING: r"\z",
}
_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


class _Unsupported(Exception):
    pass


def translate(pattern: re.Pattern[str]) -> str | None:
    """``pattern`` in RE2's syntax with the same matches and groups, or None when RE2
    cannot express it (lookaround, backreference, a Unicode ``\\b``, a possessive or
    atomic repeat, a count over 1000). One difference is left: ``$`` outside
    MULTILINE matches before a last newline in ``re``, not in RE2: a ``Searcher`` asks
    ``re`` (within the budget) for such a pattern in a text with a newline."""
    return _translated(pattern)[0]


def _translated(pattern: re.Pattern[str]) -> tuple[str | None, bool]:
    """(the RE2 spelling or None, whether it holds a ``$`` outside MULTILINE)."""
    try:
        parsed = P.parse(pattern.pattern, pattern.flags)
        names = {number: name for name, number in pattern.groupindex.items()}
        emit = _Emit(names, bool(parsed.state.flags & re.ASCII))
        body = emit.seq(parsed.data)
    except (_Unsupported, RecursionError):
        return None, False
    except Exception:  # the private parser changed: re, within the budget
        return None, False
    letters = "".join(ch for flag, ch in _FLAG_LETTERS if parsed.state.flags & flag)
    dollar = emit.dollar and not parsed.state.flags & re.MULTILINE
    return (f"(?{letters})" if letters else "") + body, dollar


class _Emit:
    def __init__(self, names: dict[int, str], ascii_mode: bool) -> None:
        self.names = names
        self.ascii = ascii_mode
        self.dollar = False  # a `$` was spelled

    def seq(self, items: Any) -> str:
        return "".join(self.item(op, av) for op, av in items)

    def item(self, op: Any, av: Any) -> str:
        if op is C.LITERAL:
            return _char(av)
        if op is C.NOT_LITERAL:
            return f"[^{_char(av)}]"
        if op is C.ANY:
            return "."
        if op is C.IN:
            return self.charset(av)
        if op is C.BRANCH:
            return "(?:" + "|".join(self.seq(branch) for branch in av[1]) + ")"
        if op is C.SUBPATTERN:
            group, add, remove, inner = av
            body = self.seq(inner)
            if group is not None:
                name = self.names.get(group)
                return f"(?P<{name}>{body})" if name else f"({body})"
            on = "".join(ch for flag, ch in _FLAG_LETTERS if add & flag)
            off = "".join(ch for flag, ch in _FLAG_LETTERS if remove & flag)
            if (add | remove) & re.ASCII:
                raise _Unsupported("a scoped ASCII flag")
            flags = on + (f"-{off}" if off else "")
            return f"(?{flags}:{body})" if flags else f"(?:{body})"
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, high, inner = av
            if low > RE2_MAX_REPEAT or (high is not C.MAXREPEAT and high > RE2_MAX_REPEAT):
                raise _Unsupported("a count RE2 does not take")
            if (high is C.MAXREPEAT or high > 1) and _captures(inner) and _nullable(list(inner)):
                # re repeats it once more, empty, and keeps that; RE2 stops: another group
                raise _Unsupported("a repeated group that may match nothing")
            lazy = "?" if op is C.MIN_REPEAT else ""
            if high is C.MAXREPEAT:
                count = "*" if low == 0 else "+" if low == 1 else f"{{{low},}}"
            elif (low, high) == (0, 1):
                count = "?"
            else:
                count = f"{{{low}}}" if low == high else f"{{{low},{high}}}"
            return f"(?:{self.seq(inner)}){count}{lazy}"
        if op is C.AT:
            if av in _AT:
                self.dollar = self.dollar or av is C.AT_END
                return _AT[av]
            if self.ascii and av in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                return r"\b" if av is C.AT_BOUNDARY else r"\B"  # RE2's are ASCII's
            raise _Unsupported(f"the assertion {av}")
        raise _Unsupported(str(op))  # lookarounds, backreferences, atomic, possessive

    def charset(self, items: Any) -> str:
        negate = bool(items) and items[0][0] is C.NEGATE
        items = items[1:] if negate else items
        if len(items) == 1 and items[0][0] is C.CATEGORY and items[0][1] in _NEGATED:
            negate, items = not negate, [(C.CATEGORY, _NEGATED[items[0][1]])]
        parts = []
        for op, av in items:
            if op is C.LITERAL:
                parts.append(_char(av))
            elif op is C.RANGE:
                parts.append(f"{_char(av[0])}-{_char(av[1])}")
            elif op is C.CATEGORY:
                parts.append(self.category(av))
            else:
                raise _Unsupported(str(op))
        return ("[^" if negate else "[") + "".join(parts) + "]"

    def category(self, code: Any) -> str:
        if self.ascii:
            if code in _ASCII_ITEMS:
                return _ASCII_ITEMS[code]
            raise _Unsupported("a negated ASCII class among others")
        if code == C.CATEGORY_SPACE:
            return _unicode_spaces()
        if code in _CLASS_ITEMS:
            return _CLASS_ITEMS[code]
        raise _Unsupported("a negated class among others")  # [\S\d]: rare


def _captures(items: Any) -> bool:
    """Does ``items`` hold a capturing group?"""
    for op, av in items:
        if op is C.SUBPATTERN and (av[0] is not None or _captures(av[3])):
            return True
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and _captures(av[2]):
            return True
        if op is C.BRANCH and any(_captures(b) for b in av[1]):
            return True
    return False


def _nullable(items: list[Any]) -> bool:
    return _Shapes(ignore_case=False, dotall=False).nullable(items)


def _char(code: int) -> str:
    return chr(code) if chr(code).isalnum() and code < 128 else f"\\x{{{code:x}}}"


# --- what makes a backtracking engine slow -------------------------------------------------

# Characters standing for all others when two parts of a pattern are compared: if
# both take one of them, both can take the same text.
_SAMPLE = [chr(c) for c in range(128)] + list("\xa0\xe9\u0661\u202f\u4e2d\u2500\U0001f600")
_MANY = 16  # a repeat of at least this many is "unbounded" for the blow-up


def backtracking(pattern: re.Pattern[str]) -> str | None:
    """Why a backtracking engine (Python's ``re``) could take exponential or
    polynomial time on ``pattern`` for some line (None: no reason found).

    Three shapes are looked for: a repeat inside a repeat whose inner repeat
    can take what follows it (``(a+)+``, ``(\\w+\\s?)*``, ``(.*,)*``);
    alternatives under a repeat that can start alike (``(a|aa)*``,
    ``(\\w|\\d)+``); and repeats next to each other that take the same
    characters (``\\d+\\d+``, ``\\s*\\s+``, ``.*.*=``)."""
    try:
        parsed = P.parse(pattern.pattern, pattern.flags)
    except Exception:
        return None
    shapes = _Shapes(bool(parsed.state.flags & re.IGNORECASE), bool(parsed.state.flags & re.DOTALL))
    try:
        return shapes.find(list(parsed.data))
    except RecursionError:
        return "it nests too deep to check"


class _Shapes:
    def __init__(self, ignore_case: bool, dotall: bool) -> None:
        self.ignore_case = ignore_case
        self.dotall = dotall

    def find(self, items: list[Any]) -> str | None:
        """The first risky shape in the sequence ``items`` or inside it."""
        found = self._adjacent(items)
        if found:
            return found
        for op, av in items:
            if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                _, high, inner = av
                body = list(inner)
                if op is not C.POSSESSIVE_REPEAT and (high is C.MAXREPEAT or high >= _MANY):
                    found = self._nested(body) or self._overlapping_branches(body)
                    if found:
                        return found
                found = self.find(body)
            elif op is C.SUBPATTERN:
                found = self.find(list(av[3]))
            elif op is C.BRANCH:
                found = next((f for b in av[1] if (f := self.find(list(b)))), None)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                found = self.find(list(av[1]))
            elif op is C.ATOMIC_GROUP:
                found = None  # no backtracking into it
            if found:
                return found
        return None

    # -- the three shapes ----------------------------------------------------------------
    def _nested(self, body: list[Any]) -> str | None:
        """``body`` is repeated: can an inner repeat take what comes after it (in the
        same iteration or the next)? Then one text splits into iterations many ways."""
        if self._ambiguous(body, self.first(body)):
            return (
                "a repeat inside a repeat can split the same text in many ways "
                "(like (a+)+ or (\\w+\\s?)*): the time can grow exponentially with the line"
            )
        return None

    def _ambiguous(self, items: list[Any], after: frozenset[str]) -> bool:
        """Does an unbounded repeat in ``items`` take a character that may follow it
        (``after``: what may follow ``items``)?"""
        for i, (op, av) in enumerate(items):
            rest = items[i + 1 :]
            follow = self.first(rest) | (after if self.nullable(rest) else frozenset())
            if op in (C.MAX_REPEAT, C.MIN_REPEAT):
                inner = list(av[2])
                varies = av[1] is C.MAXREPEAT or av[1] > av[0]  # a?, a{1,3}, a+
                if varies and self.first(inner) & follow:
                    return True
                if self._ambiguous(inner, self.first(inner) | follow):
                    return True
            elif op is C.SUBPATTERN and self._ambiguous(list(av[3]), follow):
                return True
            elif op is C.BRANCH:
                branches = [list(b) for b in av[1]]
                if any(self.nullable(b) for b in branches) and any(
                    self.first(b) & follow for b in branches
                ):
                    return True  # (?:|a): an optional part, as a? is
                if any(self._ambiguous(b, follow) for b in branches):
                    return True
        return False

    def _overlapping_branches(self, body: list[Any]) -> str | None:
        for op, av in body:
            if op is C.SUBPATTERN:
                found = self._overlapping_branches(list(av[3]))
                if found:
                    return found
            if op is C.BRANCH:
                firsts = [self.first(list(b)) for b in av[1]]
                for i, a in enumerate(firsts):
                    if any(a & b for b in firsts[i + 1 :]):
                        return (
                            "alternatives under a repeat can start with the same text (like "
                            "(a|aa)*): the time can grow exponentially with the line"
                        )
        return None

    def _adjacent(self, items: list[Any]) -> str | None:
        """Two unbounded repeats with only optional parts between them, taking
        the same characters."""
        for i, (op, av) in enumerate(items):
            if not self._unbounded(op, av):
                continue
            takes = self.first(list(av[2]))
            for op2, av2 in items[i + 1 :]:
                if self._unbounded(op2, av2) and self.first(list(av2[2])) & takes:
                    return (
                        "repeats next to each other take the same characters (like "
                        "\\d+\\d+): the time can grow with a power of the line's length"
                    )
                if not self.nullable([(op2, av2)]):
                    break
        return None

    def _unbounded(self, op: Any, av: Any) -> bool:
        return op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[1] is C.MAXREPEAT

    # -- what a part takes ---------------------------------------------------------------
    def nullable(self, items: list[Any]) -> bool:
        for op, av in items:
            if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                if av[0] > 0 and not self.nullable(list(av[2])):
                    return False
            elif op in (C.SUBPATTERN,):
                if not self.nullable(list(av[3])):
                    return False
            elif op is C.ATOMIC_GROUP:
                if not self.nullable(list(av)):
                    return False
            elif op is C.BRANCH:
                if not any(self.nullable(list(b)) for b in av[1]):
                    return False
            elif op in (C.AT, C.ASSERT, C.ASSERT_NOT, C.GROUPREF, C.GROUPREF_EXISTS):
                continue
            else:
                return False
        return True

    def first(self, items: list[Any]) -> frozenset[str]:
        """Characters (of ``_SAMPLE``) a match of ``items`` can start with."""
        out: set[str] = set()
        for op, av in items:
            out |= self._takes(op, av)
            if not self.nullable([(op, av)]):
                break
        return frozenset(out)

    def _takes(self, op: Any, av: Any) -> frozenset[str]:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return frozenset(c for c in _SAMPLE if self._one(op, av, c))
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            return self.first(list(av[2]))
        if op is C.SUBPATTERN:
            return self.first(list(av[3]))
        if op is C.ATOMIC_GROUP:
            return self.first(list(av))
        if op is C.BRANCH:
            return frozenset().union(*(self.first(list(b)) for b in av[1]))
        if op is C.GROUPREF:
            return frozenset(_SAMPLE)  # whatever the group took
        return frozenset()

    def _one(self, op: Any, av: Any, ch: str) -> bool:
        if op is C.ANY:
            return self.dotall or ch != "\n"
        if op is C.LITERAL:
            return self._same(chr(av), ch)
        if op is C.NOT_LITERAL:
            return not self._same(chr(av), ch)
        negate = bool(av) and av[0][0] is C.NEGATE
        hit = any(self._in(item, ch) for item in (av[1:] if negate else av))
        return hit != negate

    def _in(self, item: tuple[Any, Any], ch: str) -> bool:
        op, av = item
        if op is C.LITERAL:
            return self._same(chr(av), ch)
        if op is C.RANGE:
            return av[0] <= ord(ch) <= av[1] or (
                self.ignore_case and any(av[0] <= ord(c) <= av[1] for c in (ch.lower(), ch.upper()))
            )
        if op is C.CATEGORY:
            return _category(av, ch)
        return True  # unknown: assume it takes it

    def _same(self, a: str, b: str) -> bool:
        return a == b or (self.ignore_case and a.casefold() == b.casefold())


_CATEGORY_RE = {
    C.CATEGORY_DIGIT: re.compile(r"\d"),
    C.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    C.CATEGORY_SPACE: re.compile(r"\s"),
    C.CATEGORY_NOT_SPACE: re.compile(r"\S"),
    C.CATEGORY_WORD: re.compile(r"\w"),
    C.CATEGORY_NOT_WORD: re.compile(r"\W"),
}


def _category(code: Any, ch: str) -> bool:
    test = _CATEGORY_RE.get(code)
    return True if test is None else test.fullmatch(ch) is not None
