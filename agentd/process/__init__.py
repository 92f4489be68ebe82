"""Processes: find and end everything a session started, reap orphans.

The process table scan (``table``), the session's tree and how it is ended
(``tree``), the child subreaper (``reaper``).

Imports only the standard library and psutil: nothing of agentd.
"""
