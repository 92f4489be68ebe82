"""The line agentd's own PreCompact hook writes to the session's terminal.

The hook (``agentctl hook pre-compact``) writes it; the session's matcher
reads it like any output and the supervisor restarts the session.
"""

import re

PRECOMPACT_LINE = "agentd-hook: pre-compact"
PRECOMPACT_RULE = re.compile(r"agentd-hook: pre-compact\b")
