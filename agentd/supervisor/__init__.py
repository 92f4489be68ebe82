"""The supervisor: each unit's life, and the public API over all units.

One unit: its state machine, its sessions and the waits between them, every
arc in one place (``service``); its definition now and for the next session
(``definition``); its bootstraps (``briefing``, rendered and written off the
loop: ``offloop``); why a running session ends (``triggers``) and the
graceful handoff (``handoff``); its records on disk (``records/``: history,
lifecycle, the session running now, locks and reclaim). Pure: unit states and
their arcs (``states``), the restart decision (``policy``), daily budgets
(``budget``). Around them: notify commands (``notifier``), SIGCHLD and
orphans (``children``), what status says (``report``), and
``api.Supervisor``: the only door the daemon and the CLIs use.

May import every layer below it: session, process, terminal, memory,
configuration, the shared leaves. Never the daemon or the command line.
"""
