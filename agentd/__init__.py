"""agentd: keep AI coding-agent CLIs working for hours, unattended.

The agent forgets when its context is compacted; agentd notices (a sentinel
in its output, or exit code 42), ends the session's whole process tree, starts
a fresh one and injects a bootstrap rendered from the agent's state files.
"""

__version__ = "0.1.0"
