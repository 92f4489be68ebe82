"""Agent-CLI presets (README, "Presets"): what ``preset: NAME`` brings into a unit.

Each preset is ``agentd/config/cli_presets/NAME.yaml``: unit keys (command,
inject, sentinels...) and, under ``examples``, real output lines each sentinel
must match. A unit is deep-merged over its preset; the unit wins.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from agentd.errors import KeyProblem

# Next to this module, not via importlib.resources: an editable install made
# before agentd/__init__.py existed maps `agentd` as a namespace package, and
# resources.files() then fails outside the source tree.
_CLI_PRESETS = Path(__file__).resolve().parent / "cli_presets"


def cli_preset_names() -> list[str]:
    """Names accepted by ``preset:``: the files in ``agentd/config/cli_presets``."""
    return sorted(p.stem for p in _CLI_PRESETS.glob("*.yaml"))


def preset_path(name: str) -> Path | None:
    """The file of preset ``name`` (``agentctl cat`` shows it); None if there is none."""
    path = _CLI_PRESETS / f"{name}.yaml"
    return path if name in cli_preset_names() else None


# libyaml where PyYAML has it: the same document, in a tenth of the time (a unit of
# ``preset: claude-code`` is checked or loaded about 40 ms sooner)
_SAFE_LOADER: type[Any] = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


@cache
def _preset_file(name: str) -> dict[str, Any]:
    text = (_CLI_PRESETS / f"{name}.yaml").read_text(encoding="utf-8")
    data = yaml.load(text, Loader=_SAFE_LOADER)
    if not isinstance(data, dict):
        raise ValueError(f"cli preset {name} is not a mapping")  # a packaging bug
    return data


def load_cli_preset(name: str) -> dict[str, Any]:
    """The unit keys preset ``name`` supplies (a fresh copy, safe to mutate)."""
    if not isinstance(name, str) or name not in cli_preset_names():
        known = ", ".join(cli_preset_names())
        raise KeyProblem(("preset",), f"unknown preset {name!r}; choose one of: {known}")
    return copy.deepcopy({k: v for k, v in _preset_file(name).items() if k != "examples"})


def cli_preset_examples(name: str) -> dict[str, list[str]]:
    """Real output lines each sentinel of preset ``name`` must match (for tests)."""
    return {
        rule: [record["line"] for record in records]
        for rule, records in cli_preset_example_records(name).items()
    }


def cli_preset_example_records(name: str) -> dict[str, list[dict[str, str]]]:
    """Each rule's real lines with the CLI version and where each was seen
    (``line``, ``version``, ``source``; a bare line has neither)."""
    out: dict[str, list[dict[str, str]]] = {}
    for rule, items in (_preset_file(name).get("examples") or {}).items():
        out[rule] = [
            {k: str(v) for k, v in item.items()} if isinstance(item, dict) else {"line": str(item)}
            for item in items or []
        ]
    return out


def apply_preset(data: Any) -> Any:
    """``data`` deep-merged over its ``preset:`` (the unit wins; lists replace)."""
    if not isinstance(data, dict) or data.get("preset") is None:
        return data
    return deep_merge(load_cli_preset(data["preset"]), data)


def deep_merge(base: dict[Any, Any], over: dict[Any, Any]) -> dict[Any, Any]:
    """``over`` on top of ``base``: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
