"""The control protocol between ``agentctl`` and ``agentd``: the wire format.

Both sides import this module and nothing heavier: the client
(``agentd.daemon.control.client``, what ``agentctl`` imports) and the server
(``agentd.daemon.control.server``, whose request models are ``requests``).

Transport: a Unix stream socket at ``Paths.socket``, mode 0600 inside a 0700
directory. The daemon serves only peers running as its own uid.

Framing: newline-delimited JSON (UTF-8). A request is one line holding one
object; each request gets one reply line::

    -> {"cmd": "status", "args": {"units": ["web"]}}
    <- {"ok": true, "result": [{"unit": "web", "state": "running", ...}]}
    -> {"cmd": "stop", "args": {"units": ["nope"]}}
    <- {"ok": false, "error": "unknown unit: nope", "code": 4}

A connection may carry several requests, one after the other. ``args`` may
be left out when a command takes none; unknown keys are errors.

Error ``code`` values are agentctl's exit codes: 1 the command failed, 2 a bad
request (not JSON, not an object, unknown command or argument, a wrong type,
an invalid unit name), 4 an unknown unit. A request line longer than
``MAX_REQUEST`` (1 MiB) gets a code-2 reply and the daemon closes that
connection without reading the rest; nothing else is affected.

Streaming: ``events`` with ``"follow": true`` replies as usual (``result``
holds the recent events) with ``"stream": true``, then sends one line per
new event until the client disconnects::

    <- {"ok": true, "result": [...], "stream": true}
    <- {"event": {"timestamp": "...", "event": "unit.state", ...}}
    <- {"end": "daemon stopping"}        (or "client too slow")

The stream also ends when the client closes its side or sends anything.

``attach`` ({unit}) replies ``{"ok": true, "result": {unit, session, state},
"stream": true}`` and then relays the unit's terminal both ways, across its
sessions, until either side closes: the daemon sends ``{"data": BASE64}``
(raw pty output) and ``{"end": WHY}``; the client sends ``{"input": BASE64}``
(typed into the live session). The first ``data`` repaints the unit's current
screen (clear, then its text, colours and cursor), so what was shown before
the client came is there at once; then the output streams as it comes.

Commands (args with defaults) -> result:

=========  ===================================================  ==========================
ping       {}                                                   {pid, version, units, socket,
                                                                 dashboard: URL or null}
status     {units: []}                                          [status]  (all when empty)
start      {units: [], all: false}                              [status]  once started
stop       {units: [], all: false}                              [status]  once ended
restart    {units: [], all: false, reason: "manual"}            [status]  new session up
enable     {units: [], all: false, now: false}                  [status]  (now: started)
disable    {units: [], all: false, now: false}                  [status]  (now: stopped)
reload     {}                                                   {loaded, changed, removed,
                                                                 invalid: [{file, line, error}]}
logs       {unit, lines: 50}                                    {path, text, size}
events     {unit: null, lines: 20, follow: false}               [event]
history    {unit, lines: 20}                                    [session]
bootstrap  {unit}                                               {session, text, tokens,
                                                                 warnings}
attach     {unit}                                               {unit, session, state}, then
                                                                 a two-way stream
screen     {unit}                                               {rows: [text], cursor: [row,
                                                                 col], cols, session, running,
                                                                 ran, reason, ended_at}
describe   {units: [], lines: 10}                               [status + unit_file, command,
                                                                 workdir, state_dir, processes,
                                                                 today, last_lines...]
unit       {unit}                                               {unit, file, preset,
                                                                 preset_file, effective}
resize     {unit, cols, rows}                                   {unit, cols, rows}
precompact {unit, session}                                      {ending: bool}: the CLI's
                                                                 PreCompact hook; true when
                                                                 that session is being ended
verify     {unit}                                               {ok, command, exit_code,
                                                                 said, duration_s, output,
                                                                 ...} once the check ended
worktree   {unit}                                               {path, repo, branch, base,
                                                                 ahead, behind, exists}
=========  ===================================================  ==========================

``status`` objects: unit, state, pid (null), session, uptime_s, output_bytes
(of the running session), restarts, last_reason, last_at, since, enabled,
paused_until (when paused), detail (what a failed or stalled state says
more, e.g. the OS error of a command that cannot be executed), invalid (when
the unit file does not load: file, line, key, message, and problems when
there are several), conflict as the state of a unit that waits for its state
dir (detail names the unit that holds it). ``screen`` draws the last
session's screen (running or not; after a daemon restart the one kept on
disk; ``ran`` false: the unit never ran) as a terminal would show it; rows
are cut of trailing blanks, like ``tmux capture-pane -p``. ``describe`` is
``agentctl status UNIT``: the status and the unit's file, effective command,
places, session processes, today's budget use and the transcript's last
``lines`` (escapes removed). ``unit`` is the unit's effective definition
(after its preset and the defaults) and its file. ``resize`` gives the unit the size of an attached
terminal (``agentctl attach`` sends it, and again on each SIGWINCH): cols and
rows within ``PTY_MIN``..``PTY_MAX``, or a code-2 error; the running session's
pty is resized (the agent gets SIGWINCH) and later sessions start at that size,
which stays until another resize or a reload that changes the unit's ``pty:``.
``logs`` returns the
raw transcript tail (agentctl strips ANSI) and the file's path and size, from
which ``agentctl logs -f`` follows the file itself.
"""

from __future__ import annotations

import json
import re
from enum import IntEnum
from typing import Any

from agentd.config.names import UNIT_NAME

MAX_REQUEST = 1024 * 1024  # a request line longer than this is refused (code 2)
MAX_REPLY = 256 * 1024 * 1024  # a bound for the client, far above any real reply


class Code(IntEnum):
    FAILURE = 1
    BAD_REQUEST = 2
    UNKNOWN_UNIT = 4


def check_unit_name(name: str) -> str:
    if not re.fullmatch(UNIT_NAME, name):
        raise ValueError(
            f"invalid unit name {name!r}: a unit is named by its file stem, {UNIT_NAME} (no paths)"
        )
    return name


def encode(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str).encode() + b"\n"


def ok(result: Any, **extra: Any) -> bytes:
    """A success reply line."""
    return encode({"ok": True, "result": result, **extra})


def error(message: str, code: int = Code.FAILURE) -> bytes:
    """An error reply line; ``code`` is agentctl's exit code."""
    return encode({"ok": False, "error": message, "code": int(code)})
