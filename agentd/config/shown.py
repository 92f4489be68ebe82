"""A unit as ``agentctl show`` and ``agentctl cat`` print it: the effective definition
(its preset merged in, every default filled, ``$VARS`` and ``~`` expanded, the
stop signal by name) as plain data, with the file it came from and its preset's
file. Pure: a ``Unit`` in, a dict out."""

from __future__ import annotations

from typing import Any

from agentd.config.convert import signal_name
from agentd.config.presets import preset_path
from agentd.config.unit import Unit


def effective(unit: Unit) -> dict[str, Any]:
    """``{unit, file, preset, preset_file, effective}`` of ``unit``."""
    shown = unit.model_dump(mode="json", exclude={"source"})
    shown["stop"]["signal"] = signal_name(unit.stop.signal)
    preset = preset_path(unit.preset) if unit.preset else None
    return {
        "unit": unit.name,
        "file": str(unit.source) if unit.source else None,
        "preset": unit.preset,
        "preset_file": str(preset) if preset else None,
        "effective": shown,
    }
