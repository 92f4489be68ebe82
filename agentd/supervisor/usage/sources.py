"""Where each CLI keeps a session's usage records, and reading them (on a worker thread).

A ``Source`` is made per session before it is spawned (``prepare``), which
may add to its command line or environment what fixes where the records go:
Claude Code and Gemini CLI take ``--session-id UUID`` (only when the
command's program is that CLI and names no session of its own), aider is
told to write its analytics log to a file agentd chose. Then every
``read`` finds the session's file(s), if not found yet, and follows them
(``files.Follower``) into a ``Spent``:

- ``claude-transcript``: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then
  ``projects/<the workdir, non-alphanumerics as "-">/<UUID>.jsonl`` (any
  project dir holding ``<UUID>.jsonl`` if that one is not there; without an
  id, the newest transcript of the workdir written since the session
  started). Once the session is over, the totals Claude Code 2.1.197 keeps in
  ``~/.claude.json`` for the project, if its ``lastSessionId`` is this one.
- ``codex-rollout``: ``$CODEX_HOME`` or ``~/.codex``, then
  ``sessions/YYYY/MM/DD/rollout-*.jsonl`` of the days the session ran, whose
  first record (``session_meta``) names the workdir and a start after the
  session's (all of them: one session may start several threads).
- ``gemini-chats``: ``$GEMINI_CLI_HOME/.gemini`` or ``~/.gemini``, then
  ``tmp/*/chats/session-*-<UUID[:8]>.jsonl`` whose first record names the
  session id (without one, the newest chat of the project ``projects.json``
  maps the workdir to, written since the session started).
- ``aider-analytics``: the log agentd set (or the unit's own
  ``AIDER_ANALYTICS_LOG``, read from where it ended when the session began).

``$HOME`` and the others are the session's environment, not agentd's. A file
that is no regular file, or leads outside that directory, is not read: the
reason is kept (``problems``) and reported once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any

from agentd.config.unit import Unit
from agentd.memory.statedir import MAX_ENTRIES, NotReadable
from agentd.supervisor.usage.files import MAX_BYTES, PASS_BYTES, Follower, first_line, open_inside
from agentd.supervisor.usage.formats import (
    AiderAnalytics,
    ClaudeTranscript,
    CodexRollout,
    Fold,
    GeminiChats,
)
from agentd.supervisor.usage.tally import Spent, merged

SLACK = 5.0  # s: clocks and mtimes that round; a file a little older than the start is its
CONFIG_MAX_BYTES = 64 << 20  # ~/.claude.json grows with every project a person opened
LOCK_WAIT = 60.0  # s: a read that still holds the files (a hung one) makes the next give up
AIDER_LOG = "AIDER_ANALYTICS_LOG"

# The options that name a session of the CLI's own: agentd then gives it no id.
_OWN_SESSION = {
    "claude-transcript": ("--session-id", "--resume", "-r", "--continue", "-c", "--fork-session"),
    "gemini-chats": ("--session-id", "--resume", "-r"),
}
_PROGRAMS = {"claude-transcript": ("claude", "claude.exe"), "gemini-chats": ("gemini",)}


@dataclass(frozen=True)
class SessionFiles:
    """What tells where a session's CLI keeps its records."""

    env: Mapping[str, str]  # the session's environment
    workdir: Path
    started: float  # wall clock, just before the spawn
    session_id: str | None = None  # the id agentd gave the CLI, if it did
    log: Path | None = None  # aider's analytics log
    log_offset: int = 0  # where this session's part of it begins
    own_log: bool = False  # agentd chose the log (and removes it once read)

    @property
    def real_workdir(self) -> str:
        return os.path.realpath(self.workdir)

    def home(self) -> Path | None:
        home = self.env.get("HOME")
        return Path(home) if home else None


@dataclass(frozen=True)
class Prepared:
    argv: list[str]
    env: dict[str, str]
    source: Source | None


def prepare(
    unit: Unit, argv: list[str], env: dict[str, str], *, number: int, logs_dir: Path, now: float
) -> Prepared:
    """The session's command line and environment with what fixes where its usage
    records go, and the ``Source`` that reads them (None: the screen estimate)."""
    kind = unit.usage.source
    if kind == "estimate":
        return Prepared(argv, env, None)
    session_id: str | None = None
    log: Path | None = None
    offset, own = 0, False
    if kind in _PROGRAMS and _takes_session_id(kind, argv):
        session_id = str(uuid.uuid4())
        argv = [argv[0], "--session-id", session_id, *argv[1:]]
    if kind == "aider-analytics":
        log, offset, env = _aider_log(argv, env, unit.workdir, logs_dir, number)
        own = (
            AIDER_LOG in env
            and env[AIDER_LOG] == str(log)
            and offset == 0
            and log.parent == logs_dir / "usage"
        )
    files = SessionFiles(env, unit.workdir, now, session_id, log, offset, own)
    return Prepared(argv, env, SOURCES[kind](files))


def _takes_session_id(kind: str, argv: list[str]) -> bool:
    if not argv or PurePath(argv[0]).name not in _PROGRAMS[kind]:
        return False  # a wrapper: it would take the option for its own
    own = _OWN_SESSION[kind]
    return not any(a in own or a.startswith(tuple(f"{o}=" for o in own)) for a in argv[1:])


def _aider_log(
    argv: list[str], env: dict[str, str], workdir: Path, logs_dir: Path, number: int
) -> tuple[Path, int, dict[str, str]]:
    """aider's analytics log for this session: the unit's own (``--analytics-log``,
    ``AIDER_ANALYTICS_LOG``), read from its end at the start, else one agentd sets."""
    given = next(
        (argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--analytics-log"),
        next((a.split("=", 1)[1] for a in argv if a.startswith("--analytics-log=")), None),
    ) or env.get(AIDER_LOG)
    if given:
        path = Path(given) if Path(given).is_absolute() else workdir / given
        try:
            offset = os.stat(path).st_size
        except OSError:
            offset = 0
        return path, offset, env
    folder = logs_dir / "usage"
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"aider-{number}.jsonl"
    with contextlib.suppress(OSError):
        path.unlink()  # a session of that number before (a reset history)
    return path, 0, {**env, AIDER_LOG: str(path)}


class Source:
    """One session's usage records of one CLI. ``read`` runs on a worker thread,
    one at a time; the loop takes its result and ``problems``."""

    name = ""

    def __init__(self, files: SessionFiles) -> None:
        self.files = files
        self.followers: dict[Path, Follower] = {}
        self.problems: list[str] = []  # not reported yet (the loop takes them)
        self._refused: set[Path] = set()
        self._lock = threading.Lock()
        self.looked: str = ""  # where it looked, for "not found"

    # -- per CLI ---------------------------------------------------------------------
    def root(self) -> Path | None:
        """The CLI's own directory: no record file may lead outside it."""
        raise NotImplementedError

    def find(self, root: Path) -> Iterator[Path]:
        """Record files of this session not followed yet."""
        raise NotImplementedError

    def fold(self) -> Fold:
        raise NotImplementedError

    def finish(self, root: Path) -> None:
        """After the session: what the CLI writes on exit besides its records."""

    def settle(self, spent: Spent, fold: Fold, final: bool) -> Spent:
        """What one file's records add up to, with what the CLI says of them."""
        return spent

    # -- reading -----------------------------------------------------------------------
    def read(self, *, final: bool = False) -> Spent | None:
        """What the records say so far (None: none found yet, or busy)."""
        if not self._lock.acquire(timeout=LOCK_WAIT):
            return None
        try:
            return self._read(final)
        finally:
            self._lock.release()

    def _read(self, final: bool) -> Spent | None:
        root = self.root()
        if root is None:
            return None
        try:
            for path in self.find(root):
                if path not in self.followers and path not in self._refused:
                    self.followers[path] = self._follower(path, root)
        except NotReadable as exc:
            self.problems.append(str(exc))
        except OSError:
            pass  # not there (yet)
        for path, follower in list(self.followers.items()):
            try:
                follower.read(MAX_BYTES if final else PASS_BYTES, final=final)
            except NotReadable as exc:  # a FIFO, a device, a link out: never read
                self.problems.append(str(exc))
                self._refused.add(path)
                del self.followers[path]
            except OSError:
                continue  # vanished or unreadable for now: what was read counts
        if final:
            with contextlib.suppress(OSError, ValueError):
                self.finish(root)
        parts = []
        for follower in self.followers.values():
            spent = follower.fold.spent()
            if spent is None:
                continue
            spent = self.settle(spent, follower.fold, final)
            for why in (follower.shortfall, _bad(follower)):
                if why:
                    spent = spent.with_partial(why)
            parts.append(spent)
        return merged(parts, self.name)

    def _follower(self, path: Path, root: Path) -> Follower:
        return Follower(path, root, self.fold())

    def shortfalls(self) -> list[str]:
        """What kept the files followed from being read whole (too large, bad lines)."""
        said = [f.shortfall for f in self.followers.values()]
        said += [_bad(f) for f in self.followers.values()]
        return [why for why in said if why]


def _bad(follower: Follower) -> str | None:
    if not (follower.bad_lines or follower.long_lines):
        return None
    said = []
    if follower.bad_lines:
        said.append(f"{follower.bad_lines} line(s) not JSON")
    if follower.long_lines:
        said.append(f"{follower.long_lines} line(s) too long")
    return f"{follower.path}: {', '.join(said)}, skipped"


def _entries(directory: Path, limit: int = MAX_ENTRIES) -> list[os.DirEntry[str]]:
    """At most ``limit`` entries of ``directory`` (none if it cannot be listed)."""
    try:
        with os.scandir(directory) as it:
            return [entry for _, entry in zip(range(limit), it, strict=False)]
    except OSError:
        return []


def _newest_since(directory: Path, started: float, pattern: re.Pattern[str]) -> Path | None:
    """The newest regular file of ``directory`` named like ``pattern``, written since
    ``started`` (a session without an id of its own: the best guess)."""
    best: tuple[float, Path] | None = None
    for entry in _entries(directory):
        if not pattern.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_mtime >= started - SLACK and (best is None or st.st_mtime > best[0]):
            best = (st.st_mtime, Path(entry.path))
    return best[1] if best else None


def _env_dir(files: SessionFiles, var: str, default: str) -> Path | None:
    given = files.env.get(var)
    if given:
        return Path(given)
    home = files.home()
    return home / default if home else None


class Claude(Source):
    name = "claude-transcript"
    _transcript = re.compile(r"[0-9a-fA-F-]{36}\.jsonl")

    def root(self) -> Path | None:
        return _env_dir(self.files, "CLAUDE_CONFIG_DIR", ".claude")

    def fold(self) -> Fold:
        return ClaudeTranscript()

    def find(self, root: Path) -> Iterator[Path]:
        if self.followers:
            return  # one transcript per session
        projects = root / "projects"
        here = projects / re.sub(r"[^A-Za-z0-9]", "-", self.files.real_workdir)
        sid = self.files.session_id
        if sid is None:
            self.looked = f"{here}/*.jsonl (since the session started)"
            newest = _newest_since(here, self.files.started, self._transcript)
            if newest is not None:
                yield newest
            return
        self.looked = f"{projects}/*/{sid}.jsonl"
        if os.path.lexists(here / f"{sid}.jsonl"):
            yield here / f"{sid}.jsonl"
            return
        for entry in _entries(projects):  # a long path is named otherwise
            if os.path.lexists(Path(entry.path) / f"{sid}.jsonl"):
                yield Path(entry.path) / f"{sid}.jsonl"
                return

    def settle(self, spent: Spent, fold: Fold, final: bool) -> Spent:
        if final and isinstance(fold, ClaudeTranscript) and not fold.has_totals:
            return spent.with_partial(
                "Claude Code wrote no totals (it did not exit by itself): its summary "
                "and title requests are not counted, nor its cost"
            )
        return spent

    def finish(self, root: Path) -> None:
        """Claude Code 2.1.197 keeps the session's totals (every request, the cost) in
        ``~/.claude.json`` on exit, under the project, with ``lastSessionId``."""
        for path, follower in self.followers.items():
            fold = follower.fold
            if not isinstance(fold, ClaudeTranscript):
                continue
            if self.files.env.get("CLAUDE_CONFIG_DIR"):
                config, inside = root / ".claude.json", root
            else:
                config, inside = root.parent / ".claude.json", root.parent
            with open_inside(inside, config) as f:
                raw = f.read(CONFIG_MAX_BYTES + 1)
            if len(raw) > CONFIG_MAX_BYTES:
                return
            projects = json.loads(raw).get("projects")
            if not isinstance(projects, Mapping):
                return
            entry = projects.get(self.files.real_workdir) or projects.get(str(self.files.workdir))
            if isinstance(entry, Mapping) and entry.get("lastSessionId") == path.stem:
                fold.claude_config(entry)


class Codex(Source):
    name = "codex-rollout"
    _rollout = re.compile(r"rollout-.*\.jsonl")

    def __init__(self, files: SessionFiles) -> None:
        super().__init__(files)
        self._checked: set[str] = set()  # rollouts known not to be this session's

    def root(self) -> Path | None:
        return _env_dir(self.files, "CODEX_HOME", ".codex")

    def fold(self) -> Fold:
        return CodexRollout()

    def find(self, root: Path) -> Iterator[Path]:
        sessions = root / "sessions"
        self.looked = f"{sessions}/YYYY/MM/DD/rollout-*.jsonl (of {self.files.workdir})"
        started = self.files.started
        for day in _days(started, time.time()):
            folder = sessions / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}"
            for entry in _entries(folder):
                path = Path(entry.path)
                if entry.name in self._checked or not self._rollout.fullmatch(entry.name):
                    continue
                if path in self.followers:
                    continue
                try:
                    if entry.stat(follow_symlinks=False).st_mtime < started - SLACK:
                        self._checked.add(entry.name)
                        continue
                except OSError:
                    continue
                meta = first_line(root, path)
                if meta is None:
                    continue  # not written yet: looked at again next time
                self._checked.add(entry.name)
                if self._ours(meta):
                    yield path

    def _ours(self, meta: Any) -> bool:
        if not isinstance(meta, Mapping) or meta.get("type") != "session_meta":
            return False
        payload = meta.get("payload")
        if not isinstance(payload, Mapping) or not isinstance(payload.get("cwd"), str):
            return False
        at = _when(payload.get("timestamp"))
        if at is None or at < self.files.started - SLACK:
            return False
        return bool(os.path.realpath(payload["cwd"]) == self.files.real_workdir)


def _days(start: float, end: float) -> list[date]:
    """The calendar days from ``start`` to ``end``, local and UTC (Codex names its
    folders by one of them)."""
    out: list[date] = []
    for tz in (None, UTC):
        day = datetime.fromtimestamp(start, tz).date()
        last = datetime.fromtimestamp(end, tz).date()
        while day <= last and len(out) < 64:
            if day not in out:
                out.append(day)
            day += timedelta(days=1)
    return out


def _when(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


class Gemini(Source):
    name = "gemini-chats"
    _chat = re.compile(r"session-.*\.jsonl")

    def root(self) -> Path | None:
        given = self.files.env.get("GEMINI_CLI_HOME")
        if given:
            return Path(given) / ".gemini"
        home = self.files.home()
        return home / ".gemini" if home else None

    def fold(self) -> Fold:
        return GeminiChats()

    def find(self, root: Path) -> Iterator[Path]:
        if self.followers:
            return  # one chat record per session
        tmp = root / "tmp"
        sid = self.files.session_id
        if sid is None:
            name = self._project(root)
            self.looked = f"{tmp}/{name or '?'}/chats/session-*.jsonl (since the session started)"
            if name is not None:
                newest = _newest_since(tmp / name / "chats", self.files.started, self._chat)
                if newest is not None:
                    yield newest
            return
        self.looked = f"{tmp}/*/chats/session-*-{sid[:8]}.jsonl"
        for project in _entries(tmp):
            for entry in _entries(Path(project.path) / "chats"):
                if entry.name.startswith("session-") and entry.name.endswith(f"-{sid[:8]}.jsonl"):
                    header = first_line(root, Path(entry.path))
                    if isinstance(header, Mapping) and header.get("sessionId") == sid:
                        yield Path(entry.path)
                        return

    def _project(self, root: Path) -> str | None:
        """The short name Gemini CLI gave the workdir (``projects.json``)."""
        try:
            with open_inside(root, root / "projects.json") as f:
                data = json.loads(f.read(1 << 20))
        except (OSError, ValueError):
            return None
        projects = data.get("projects") if isinstance(data, Mapping) else None
        name = projects.get(self.files.real_workdir) if isinstance(projects, Mapping) else None
        return (
            name if isinstance(name, str) and "/" not in name and name not in (".", "..") else None
        )


class Aider(Source):
    name = "aider-analytics"

    def root(self) -> Path | None:
        return self.files.log.parent if self.files.log is not None else None

    def fold(self) -> Fold:
        return AiderAnalytics()

    def find(self, root: Path) -> Iterator[Path]:
        log = self.files.log
        self.looked = str(log)
        if log is not None and not self.followers and os.path.lexists(log):
            yield log

    def _follower(self, path: Path, root: Path) -> Follower:
        return Follower(path, root, self.fold(), offset=self.files.log_offset)


SOURCES: dict[str, type[Source]] = {
    "claude-transcript": Claude,
    "codex-rollout": Codex,
    "gemini-chats": Gemini,
    "aider-analytics": Aider,
}
