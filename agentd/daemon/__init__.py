"""The daemon's edge: ``agentd serve``, its control socket, and its host.

The serve loop (``serve``), the unit files it loads (``unitdir``) and applies
(``loader``), the control server (``control``: its socket and connections),
what each command does (``commands``) and the streaming ones (``streams``),
their wire format (``protocol``, shared with ``agentctl``), the units-dir
watcher (``watch``) and systemd/launchd (``notify``); with ``agentd serve
--http``, the web dashboard (``dashboard``: its pages answer from the same
handlers).

Talks to units only through ``agentd.supervisor.api.Supervisor``. Never
imports the command line.
"""
