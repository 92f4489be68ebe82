"""The supervisor: each unit's life, and the public API over all units.

Unit states and their arcs (``states``), the pure restart decision
(``policy``), daily budgets (``budget``), why a running session ends
(``triggers``), one unit's state machine and session loop (``service``),
its bootstraps (``briefing``), its history on disk (``history``), ending what
a dead agentd left (``reclaim``), notify commands (``notifier``), and
``api.Supervisor``: the only door the daemon and the CLIs use.

May import every layer below it: session, process, terminal, memory,
configuration, the shared leaves. Never the daemon or the command line.
``states``, ``policy`` and ``budget`` are pure.
"""
