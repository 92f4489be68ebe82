"""Processes: find and end everything a session started, reap orphans.

The process table scan (``table``), finding a session's processes
(``tree``), ending them (``ending``), the child subreaper (``reaper``).

Imports only the standard library and psutil: nothing of agentd.
"""
