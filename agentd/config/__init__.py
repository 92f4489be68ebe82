"""Configuration: what a unit is, read from files people write.

The unit schema: the ``Unit`` (``unit``), its sections (``sections``) and
the field types they share (``fields``); the agent-CLI presets (``presets``,
data in ``cli_presets/*.yaml``); unit files with line numbers and permission
checks (``unitfile``); and the small converters from what people write to
values (``convert``).

Pure: imports only ``agentd.memory.layout`` (a unit names its layout) and the
shared leaves (``agentd.errors``, ``agentd.tokens``); never a session,
process, supervisor, daemon or command-line module.
"""
