"""Configuration: what a unit is, read from files people write.

The unit schema: the ``Unit`` (``unit``), its sections (``sections``) and
the field types they share (``fields``); the agent-CLI presets (``presets``,
data in ``cli_presets/*.yaml``); unit files and their permission checks
(``unitfile``), read as YAML with line numbers (``yamllines``), their errors
as ``file:line: key: message`` (``problems``); the small converters from what people write to
values (``convert``: durations, sizes, signals), placeholders in commands
(``placeholders``) and reset times (``times``).

Pure: imports only ``agentd.memory.layout`` (a unit names its layout) and the
shared leaves (``agentd.errors``, ``agentd.tokens``); never a session,
process, supervisor, daemon or command-line module.
"""
