"""The supervisor: each unit's life, and the public API over all units.

Unit states and their arcs (``states``), the pure restart decision
(``policy``), daily budgets (``budget``), why a running session ends
(``triggers``). One unit: its state machine and control (``service``), which
owns the loop of its sessions (``sessionloop``), the life of one session
(``sessionrun``), the waits between them (``pauses``), its definition
(``definition``), its lock and the ending of what a dead agentd left
(``reclaim``) and its terminal for attached people (``attach``); its
bootstraps (``briefing``) and its history on disk (``history``). Notify
commands (``notifier``), and ``api.Supervisor``: the only door the daemon and
the CLIs use.

May import every layer below it: session, process, terminal, memory,
configuration, the shared leaves. Never the daemon or the command line.
``states``, ``policy`` and ``budget`` are pure.
"""
