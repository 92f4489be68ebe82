"""Configuration: what a unit is, read from files people write.

The unit schema (``unit``), unit files with line numbers and permission
checks (``unitfile``), the CLI presets (``cli_presets/*.yaml``) and the small
converters from what people write to values (``convert``).

Pure: imports only ``agentd.memory.layout`` (a unit names its layout) and the
shared leaves (``agentd.errors``, ``agentd.tokens``); never a session,
process, supervisor, daemon or command-line module.
"""
