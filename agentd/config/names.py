"""What a unit may be named: its file stem, no paths, none of agentd's own.

A unit's logs live in ``logs/UNIT/`` beside agentd's own files there
(``agentd.jsonl`` and its rotations, ``agentd.err.log``): names that begin
with ``agentd.`` (in any case, for case-insensitive file systems) are
reserved, so a unit can never collide with them.
"""

UNIT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
RESERVED_PREFIX = "agentd."


def reserved(name: str) -> bool:
    """Is ``name`` one agentd keeps for its own files?"""
    return name.lower().startswith(RESERVED_PREFIX)
