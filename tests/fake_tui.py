#!/usr/bin/env python3
"""A fake agent that takes its input as a full-screen TUI does (Claude Code, Codex).

usage: fake_tui.py   (writes its verdict to $FAKE_TUI_FILE as JSON, and prints it)

In raw mode, as such a TUI: no line discipline, no echo, every key as it
comes. It turns bracketed paste on with a switch that reaches the terminal
in two writes (``ESC[?20`` then ``04h``: a TUI's output is cut where its
buffer ends, so the pty delivers it in two reads), then draws ``READY>`` and
reads. Then what a TUI does with what it is given:

- a paste (``ESC[200~ ... ESC[201~``) is one message, newlines and all;
  without one, the first CR or LF submits what came before it (a bootstrap
  typed as keys is submitted line by line, its first line alone);
- a key that comes with the paste's end, in the same read or within
  ``WITH_PASTE`` seconds of it, belongs to the paste (an Enter that comes
  at once is taken as a newline in the text, and nothing is submitted);
- a CR after that submits.

It stops at the submit (or after ``GIVE_UP`` seconds) and says what it got:
``{"paste": bool, "submitted": bool, "text": str, "enter_after_s": float|null}``.
"""

from __future__ import annotations

import json
import os
import select
import sys
import termios
import time
import tty

START, END = b"\x1b[200~", b"\x1b[201~"
WITH_PASTE = 0.05  # seconds after a paste in which a key is still part of it
SPLIT = 0.3  # seconds between the two halves of the mode switch
GIVE_UP = 10.0


def write(data: bytes) -> None:
    while data:
        data = data[os.write(1, data) :]


def main() -> int:
    old = termios.tcgetattr(0)
    tty.setraw(0, termios.TCSANOW)
    try:
        verdict = take_input()
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, old)
    out = os.environ.get("FAKE_TUI_FILE")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(verdict, f)
    write(f"\r\nTUI:{json.dumps({k: v for k, v in verdict.items() if k != 'text'})}\r\n".encode())
    return 0


def take_input() -> dict[str, object]:
    write(b"\x1b[?20")
    time.sleep(SPLIT)  # the halves reach the terminal apart (they may still be read together)
    write(b"04h")
    write(b"READY> ")
    buf = b""
    pasted: bytes | None = None
    paste_end_at: float | None = None
    deadline = time.monotonic() + GIVE_UP
    while time.monotonic() < deadline:
        ready, _, _ = select.select([0], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(0, 65536)
        now = time.monotonic()
        if not chunk:
            break
        if pasted is None:
            buf += chunk
            if buf.startswith(START) and END in buf:
                body, _, after = buf[len(START) :].partition(END)
                pasted, paste_end_at = body, now
                after = after.replace(b"\r", b"\n")  # a key with the paste's end is in it
                pasted += after
                continue
            if not buf.startswith(START[: len(buf)]) and (b"\r" in buf or b"\n" in buf):
                first = buf.replace(b"\r", b"\n").split(b"\n", 1)[0]
                return {
                    "paste": False,
                    "submitted": True,
                    "text": first.decode(),
                    "enter_after_s": None,
                }
            continue
        assert paste_end_at is not None
        since = now - paste_end_at
        if since < WITH_PASTE:  # still part of the paste: an Enter here is a newline
            pasted += chunk.replace(b"\r", b"\n")
            continue
        if b"\r" in chunk:
            return {
                "paste": True,
                "submitted": True,
                "text": pasted.decode(),
                "enter_after_s": round(since, 3),
            }
    return {
        "paste": pasted is not None,
        "submitted": False,
        "text": (pasted or buf).decode(errors="replace"),
        "enter_after_s": None,
    }


if __name__ == "__main__":
    sys.exit(main())
