"""``agentctl top``: a full-screen live view of every unit, on textual.

One row per unit (of the daemon and of every ``agentd run``): state, pid,
session, uptime, restarts, last reason, its completion check (``checking``,
``passed``, ``failed (...)``), output rate, the tokens, cost and context fill
of its session (the running one's so far, from its CLI's records; else the
last one's) and the last line of its screen. The table is fetched again when
an event comes on a socket's event stream (``events -f``, read by one thread
per socket), not on a poll; only what changes without events (the output
rates, the usage, the screen lines) is refreshed every ``ACTIVITY`` seconds
while a unit runs. Keys start, stop,
restart and attach (agentctl attach, with the view suspended).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from agentd.cli.agentctl.client import open_client, run_units
from agentd.cli.agentctl.output import check_said
from agentd.daemon.control.client import Client, RemoteError, Unreachable
from agentd.paths import Paths
from agentd.spent import context_cell, cost_cell, tokens_cell
from agentd.terminal.cells import to_cells
from agentd.times import span

ACTIVITY = 2.0  # seconds between refreshes of output rates and screen lines
COLUMNS = (
    "UNIT",
    "STATE",
    "PID",
    "SESSION",
    "UPTIME",
    "RESTARTS",
    "LAST",
    "CHECK",
    "OUT/s",
    "TOKENS",
    "COST",
    "CTX",
    "SCREEN",
)
# Each action's verb and how long it may take (stop waits until the processes are gone).
ACTIONS = {"start": 180.0, "stop": None, "restart": 180.0}


def run_top() -> None:
    Top().run()


class Top(App[None]):
    TITLE = "agentctl top"
    CSS = "DataTable { height: 1fr; } #said { height: 1; padding: 0 1; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "act('start')", "Start"),
        Binding("x", "act('stop')", "Stop"),
        Binding("r", "act('restart')", "Restart"),
        Binding("a,enter", "attach", "Attach"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._followed: set[Path] = set()
        self._rates: dict[str, tuple[int, int, float]] = {}  # unit -> session, bytes, when
        self._screens: dict[str, str] = {}
        self._rate_shown: dict[str, str] = {}
        self._statuses: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Static("", id="said")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_units(activity=True)
        self.set_interval(ACTIVITY, self._tick)

    # -- data ----------------------------------------------------------------------------
    def _tick(self) -> None:
        if any(s["state"] == "running" for s in self._statuses):
            self.refresh_units(activity=True)

    @work(thread=True, exclusive=True, group="refresh")
    def refresh_units(self, activity: bool = False) -> None:
        """Fetch every unit's status (and with ``activity`` their screens), then redraw."""
        statuses, why = _statuses()
        if activity:
            for s in statuses:
                self._screens[s["unit"]] = _screen_line(s["unit"])
        self._follow_new_sockets()
        self.call_from_thread(self._show, statuses, why)

    def _follow_new_sockets(self) -> None:
        paths = Paths.resolve()
        for path in [paths.socket, *(paths.run_socket(u) for u in run_units())]:
            if path not in self._followed:
                self._followed.add(path)
                threading.Thread(target=self._follow, args=(path,), daemon=True).start()

    def _follow(self, path: Path) -> None:
        """Redraw on every event of the agentd at ``path``, until it goes away."""
        try:
            with Client(path, timeout=10.0) as client:
                client.request("events", lines=0, follow=True)
                for item in client.stream():
                    if "event" in item:
                        self.call_from_thread(self.refresh_units)
        except (Unreachable, RemoteError, OSError, ValueError, RuntimeError):
            pass  # not there (yet), or gone; RuntimeError: the app has ended
        self._followed.discard(path)  # found again on a later refresh, if it comes back

    # -- the view ------------------------------------------------------------------------
    def _show(self, statuses: list[dict[str, Any]], why: str) -> None:
        self._statuses = statuses
        table = self.query_one(DataTable)
        chosen = self._chosen()
        now = time.monotonic()
        rows = [self._cells(s, now) for s in statuses]
        # Each column as wide as its widest cell, set here: DataTable widens its own
        # only when its message queue runs empty, and under a stream of events (a
        # loaded machine, many units) it showed every cell cut to its header's width.
        table.clear(columns=True)
        for i, label in enumerate(COLUMNS):
            width = max([len(label)] + [len(to_cells(cells[i])) for cells in rows])
            table.add_column(label, key=label, width=width)
        for s, cells in zip(statuses, rows, strict=True):
            table.add_row(*cells, key=s["unit"])
        names = [s["unit"] for s in statuses]
        if chosen in names:
            table.move_cursor(row=names.index(chosen))
        if why:
            self._say(why)

    def _cells(self, s: dict[str, Any], now: float) -> list[str]:
        running = s.get("pid") is not None
        return [
            s["unit"],
            s["state"],
            str(s["pid"]) if running else "-",
            str(s["session"]),
            span(s.get("uptime_s")) if running else "-",
            str(s.get("restarts", 0)),
            s.get("last_reason") or "-",
            check_said(s, time.time(), short=True) or "-",  # the completion check
            self._rate(s, now) if running else "-",
            tokens_cell(s.get("usage")),  # the running session's so far, else the last one's
            cost_cell(s.get("usage")),
            context_cell(s.get("usage")),
            self._screens.get(s["unit"], ""),
        ]

    def _rate(self, s: dict[str, Any], now: float) -> str:
        """Output bytes per second since the unit's previous refresh."""
        unit, session, out = s["unit"], s["session"], int(s.get("output_bytes") or 0)
        before = self._rates.get(unit)
        self._rates[unit] = (session, out, now)
        if before is None or before[0] != session or now - before[2] < 0.5:
            return self._rate_shown.get(unit, "-")
        shown = _size((out - before[1]) / (now - before[2]))
        self._rate_shown[unit] = shown
        return shown

    def _chosen(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        with contextlib.suppress(Exception):
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        return None

    def _say(self, text: str) -> None:
        self.query_one("#said", Static).update(text)

    # -- keys ----------------------------------------------------------------------------
    def action_act(self, verb: str) -> None:
        unit = self._chosen()
        if unit is not None:
            self._say(f"{verb} {unit}...")
            self._act(verb, unit)

    @work(thread=True)
    def _act(self, verb: str, unit: str) -> None:
        try:
            with open_client(unit, timeout=ACTIONS[verb]) as client:
                result = client.call(verb, units=[unit])[0]
            said = f"{unit}: {result['state']} (session {result['session']})"
        except (Unreachable, RemoteError, OSError) as exc:
            said = f"{verb} {unit}: {exc}"
        self.call_from_thread(self._say, said)
        self.call_from_thread(self.refresh_units)

    def action_attach(self) -> None:
        unit = self._chosen()
        if unit is None:
            return
        with self.suspend():
            subprocess.run(
                [sys.executable, "-m", "agentd.cli.agentctl", "attach", unit], check=False
            )
        self.refresh_units(activity=True)


def _statuses() -> tuple[list[dict[str, Any]], str]:
    """Every unit's status (the daemon's and every run's), and what went wrong if anything."""
    found: dict[str, dict[str, Any]] = {}
    why = ""
    try:
        with open_client(None, timeout=10.0) as client:
            found = {s["unit"]: s for s in client.call("status", units=[])}
    except (Unreachable, RemoteError, OSError) as exc:
        why = str(exc).split(". ")[0]
    for unit in run_units():
        with (
            contextlib.suppress(Unreachable, RemoteError, OSError),
            open_client(unit, timeout=10.0) as client,
        ):
            found[unit] = client.call("status", units=[unit])[0]
    if found:
        why = ""
    return [found[name] for name in sorted(found)], why


def _screen_line(unit: str) -> str:
    """The last row of the unit's screen that is not blank (its prompt, its spinner)."""
    try:
        with open_client(unit, timeout=10.0) as client:
            rows = client.call("screen", unit=unit)["rows"]
    except (Unreachable, RemoteError, OSError):
        return ""
    return next((row.strip() for row in reversed(rows) if row.strip()), "")


def _size(per_second: float) -> str:
    for unit in ("B", "K", "M"):
        if per_second < 1024:
            return f"{per_second:.0f}{unit}" if unit == "B" else f"{per_second:.1f}{unit}"
        per_second /= 1024
    return f"{per_second:.1f}G"
