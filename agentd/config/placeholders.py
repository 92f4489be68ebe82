"""Placeholders (``{bootstrap}``, ``{unit}``...) in commands, env values and
notify commands: which a template uses, whether agentd knows them, filling them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDERS = ("bootstrap", "bootstrap_file", "unit", "session", "workdir", "event")

# `{{`/`}}` are literal braces; `${NAME}` is left to the environment (never a
# placeholder); `{name}` is a placeholder; any other brace is literal, so shell
# snippets like `f() { ...; }` pass through.
_TOKEN = re.compile(r"\{\{|\}\}|\$\{[^{}]*\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders_in(template: str) -> set[str]:
    """The ``{name}`` placeholders ``template`` uses (known or not)."""
    return {m.group(1) for m in _TOKEN.finditer(template) if m.group(1)}


def check_placeholders(template: str, known: tuple[str, ...] = PLACEHOLDERS) -> None:
    """Raise ValueError if ``template`` uses a placeholder outside ``known``."""
    unknown = sorted(placeholders_in(template) - set(known))
    if unknown:
        raise ValueError(_unknown_message(unknown[0], known))


def _unknown_message(name: str, known: tuple[str, ...] | list[str]) -> str:
    names = ", ".join("{" + k + "}" for k in known)
    return f"unknown placeholder {{{name}}}; known: {names} (write {{{{ and }}}} for braces)"


def fill_placeholders(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` replaced by ``values[name]``."""

    def replace(match: re.Match[str]) -> str:
        token, name = match.group(0), match.group(1)
        if name is None:
            return token[0] if token in ("{{", "}}") else token
        if name not in values:
            order = [k for k in PLACEHOLDERS if k in values]
            raise ValueError(_unknown_message(name, order + sorted(set(values) - set(order))))
        return values[name]

    return _TOKEN.sub(replace, template)
