"""The daemon's edge: ``agentd serve``, its control socket, and its host.

Two ideas side by side: the control socket (``control/``: the wire format,
the client ``agentctl`` uses, the server and its commands) and the host of the
units dir: the serve loop (``serve``), the unit files it finds (``unitdir``)
and applies (``loader``), the units-dir watcher (``watch``), systemd and
launchd (``notify``); with ``agentd serve --http``, the web dashboard
(``dashboard/``: its pages answer from the control commands' handlers).

Talks to units only through ``agentd.supervisor.api.Supervisor``. Never
imports the command line.
"""
