"""``agentd``: the daemon's command line (``main``: serve, run, check, demo).

``agentd run`` supervises one unit in the foreground (``run``; with ``-i`` the
agent's terminal in yours: ``attached``); ``agentd demo`` runs the bundled
demo agent (``demo/``, package data).
"""
