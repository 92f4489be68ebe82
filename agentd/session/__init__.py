"""One session: the agent under a pty, its output read, its input typed.

Starting the agent without forking the daemon (``launch``: a clone by the fork
server ``forkserver``, whose program is ``zygote``, or where clone3 is refused
the exec stub ``execstub``), the pty child (``child``, the only pexpect user,
for where neither works), the non-blocking reader on
the event loop (``session``), how the bootstrap reaches the agent
(``inject``), the transcript on disk (``transcript``) and the current screen,
kept cheaply and drawn through pyte when asked (``screen``).

May import: ``agentd.terminal`` (matching), ``agentd.process`` (ending the
tree), ``agentd.config`` and the shared leaves. Never the supervisor, the
daemon or the command line.
"""
