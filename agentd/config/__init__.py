"""Configuration: what a unit is, read from files people write.

- the schema: the ``Unit`` and its cross-key checks (``unit``), its sections
  (``sections``; ``handoff``), the field types and checks they share (``fields``), the
  agent-CLI presets it may start from (``presets``, ``cli_presets/*.yaml``), the
  bounds of a session's terminal size (``ptysize``: light, ``agentctl attach`` uses it);
- unit files: found and permission-checked (``unitfile``), read as YAML with
  the line of every key (``yamllines``), errors as ``file:line: key: message``
  (``problems``);
- values: durations, sizes and signals (``convert``), placeholders such as
  ``{bootstrap}`` (``placeholders``); reset times and ISO stamps are the
  leaf ``agentd.times``'s.

Pure: imports only ``agentd.memory.layout`` (a unit names its layout) and the
shared leaves (``agentd.errors``, ``agentd.tokens``); never a session,
process, supervisor, daemon or command-line module.
"""
