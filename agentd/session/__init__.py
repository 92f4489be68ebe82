"""One session: the agent under a pty, its output read, its input typed.

The pty child (``child``, the only pexpect user), the non-blocking reader on
the event loop (``session``), how the bootstrap reaches the agent
(``inject``), the transcript on disk (``transcript``) and the current screen,
kept cheaply and drawn through pyte when asked (``screen``).

May import: ``agentd.terminal`` (matching), ``agentd.process`` (ending the
tree), ``agentd.config`` and the shared leaves. Never the supervisor, the
daemon or the command line.
"""
