"""The agent's memory: the state dir on disk, layouts, and the bootstrap.

- at the root: layouts (``layout``, data checked by ``schema``;
  ``layouts/*.yaml`` with their init templates), the state dir read cheaply
  and bounded (``statedir``) and what git says of the workdir (``gitinfo``);
- ``formats/``: the files the layouts keep, each read and written: Markdown
  sections and list items (``markdown``), the items of a record in whatever
  shape the agent wrote them (``items``, ``jsonitems``), the outline of a
  must-keep file (``outline``: what to do now, growing lists), decision lines
  (``decisions``), the task state (``taskstate``), snapshots, the completion
  mark (``complete``), readonly files' hashes (``readonly``);
- ``bootstrap/``: the renderer (``render``): each kind of layout file as
  budget parts (``kinds``, ``parts``), fitted to the budget (``fit``),
  control characters shown, never sent (``escapes``);
- ``verbs/``: the ``agentctl state`` verbs: the state dir they work on
  (``ops``) and the layout target each writes (``targets``), the recording
  verbs (``record``), ``init``, ``check``, ``archive`` and ``handoffs``.

Pure of the runtime: imports only the shared leaves (``agentd.errors``,
``agentd.tokens``, ``agentd.fileio``); never configuration, a session,
processes, the supervisor, the daemon or the command line.
"""
