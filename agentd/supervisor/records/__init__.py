"""A unit's records on disk, kept across daemon restarts and ``kill -9``.

Its session history (``history``: ``logs/UNIT/history.jsonl``), its
lifecycle (``lifecycle``: enablement and the state a person or its end left
it in), the session running now (``sessions``: ``run/sessions/UNIT.json``),
who owns a unit or a state dir (``locks``: ``lock_state_dir`` is the one
function that takes a state dir's own flock), and the ending of what a dead
agentd left running (``reclaim``).

Imports the process layer (to end a lost session) and the shared leaves;
never the daemon or the command line.
"""
