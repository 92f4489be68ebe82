"""The sizes a session's terminal may have (a unit's ``pty``, or an attached
terminal's): kept apart from the schema, so that ``agentctl attach`` bounds
its terminal's size without loading pydantic."""

PTY_MIN, PTY_MAX = 10, 1000  # columns and rows of a session's terminal


def bounded(n: int) -> int:
    """``n`` columns or rows, within the bounds of a session's terminal."""
    return max(PTY_MIN, min(PTY_MAX, n))
