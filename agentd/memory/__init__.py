"""The agent's memory: the state dir on disk, layouts, and the bootstrap.

Layouts are data (``layout``, checked by ``schema``; ``layouts/*.yaml`` with
their init templates); ``statedir`` reads cheaply, ``statewrite`` writes
atomically under a lock; the formats the seeds use (``markdown`` sections,
``mdlists`` list items, ``decisions``, ``taskstate``, ``snapshots``); the
renderer (``bootstrap``, ``filekinds`` (with ``kindbase``, ``structkinds``),
``fit`` with ``fitplan`` and ``fittext``, ``readonly``, ``gitinfo``); and the
state verbs behind ``agentctl state`` (``ops``, ``targets``, ``record``,
``init``, ``check``, ``archive``).

Pure of the runtime: imports only the shared leaves (``agentd.errors``,
``agentd.tokens``); never configuration, a session, processes, the
supervisor, the daemon or the command line.
"""
