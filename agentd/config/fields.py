"""Field types and value checks that the unit's sections share.

Converters as pydantic field types (``Duration``, ``Size``, ``SignalNum``),
the strict base model, and the text checks: regexes that compile,
``~``/``$VAR`` expansion, a command given as a string or a list.

A validator that knows a finer key than the one it is attached to raises
``agentd.errors.KeyProblem(path, message)``; the loader appends ``path`` to
the error's location (``inject`` + ``mode`` -> ``inject.mode``).

``without_plugin_search`` runs before pydantic builds agentd's first model.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import sys
import types
from signal import Signals
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from agentd.config.convert import parse_duration, parse_signal, parse_size
from agentd.config.placeholders import check_placeholders
from agentd.errors import KeyProblem

_PLUGIN_LOADER = "pydantic.plugin._loader"


def without_plugin_search() -> None:
    """Before agentd's first model: pydantic looks for plugins (the ``pydantic`` entry
    points of every installed distribution, such as an observability tool's) when it
    builds its first model, through importlib.metadata with email, zipfile and csv:
    about 40 ms and 1.3 MiB of every agentd process, ``agentd check`` too, for plugins
    agentd's models do not take (``PYDANTIC_DISABLE_PLUGINS`` skips the search, not
    the imports). So its loader is stood in for by one that finds none; any other name
    asked of it comes from pydantic's own loader, which then takes its place. Nothing
    changes where that loader is loaded already."""
    if _PLUGIN_LOADER in sys.modules:
        return
    stand_in = types.ModuleType(_PLUGIN_LOADER, "pydantic's plugin loader finding none")
    vars(stand_in).update(get_plugins=_no_plugins, __getattr__=_from_pydantic_loader)
    sys.modules[_PLUGIN_LOADER] = stand_in


def _no_plugins() -> tuple[()]:
    return ()


def _from_pydantic_loader(name: str) -> Any:
    if name.startswith("__"):  # the import system's questions (__path__...): not a package
        raise AttributeError(name)
    loaded = sys.modules.get(_PLUGIN_LOADER)
    if loaded is not None and vars(loaded).get("get_plugins") is _no_plugins:  # the stand-in
        del sys.modules[_PLUGIN_LOADER]
    return getattr(importlib.import_module(_PLUGIN_LOADER), name)


without_plugin_search()

Duration = Annotated[float, BeforeValidator(parse_duration)]
Size = Annotated[int, BeforeValidator(parse_size)]
SignalNum = Annotated[Signals, BeforeValidator(parse_signal)]
NonNegative = Annotated[int, Field(ge=0)]
ExitCode = Annotated[int, Field(ge=0, le=255)]


class StrictModel(BaseModel):
    """A model whose unknown keys are errors: a typo must not become a default.

    The docstring under each field is its description (``docs/units.md`` is
    generated from them by ``scripts/gen_docs.py``, through
    ``agentd.config.keys``, which reads them from the source: pydantic's
    ``use_attribute_docstrings`` would read it at every import).
    """

    model_config = ConfigDict(extra="forbid")


def compile_regex(pattern: str) -> re.Pattern[str]:
    """``re.compile`` whose error says what is wrong and where, as a ValueError."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ValueError(f"invalid regex: {exc.msg}{where}") from None
    except (RecursionError, OverflowError):
        raise ValueError("invalid regex: nested too deeply") from None


def _compiles(pattern: str) -> str:
    compile_regex(pattern)
    return pattern


# A regular expression that must compile; its error names the key (the fields
# still compile it again once the model is whole, to keep the compiled form).
Regex = Annotated[str, AfterValidator(_compiles)]


def expand(text: str) -> str:
    """``~`` and ``$VAR``/``${VAR}`` expanded; unknown variables stay as written."""
    return os.path.expandvars(os.path.expanduser(text))


def command_argv(value: Any) -> Any:
    """A command given as a string is split like a shell; scalars become strings."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:  # "No closing quotation"
            raise ValueError(f"cannot split command: {exc}") from None
    if isinstance(value, list):
        return [scalar_text(item) for item in value]
    return value


def scalar_text(value: Any) -> Any:
    """YAML ``true``/``3``/``1.5`` as the text a command line or env would carry."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def expanded_argv(argv: list[str]) -> list[str]:
    """Each element expanded and its placeholders checked (KeyProblem names the index)."""
    if not argv:
        raise ValueError("must not be empty")
    if not argv[0].strip():
        raise KeyProblem((0,), "the program name is empty")
    out = [expand(arg) for arg in argv]
    for index, arg in enumerate(out):
        try:
            check_placeholders(arg)
        except ValueError as exc:
            raise KeyProblem((index,), str(exc)) from None
    return out
