"""pydantic's search for plugins (every installed distribution's entry points, through
importlib.metadata) is not made for agentd's models: a stand-in loader finds none, and
gives any other name from pydantic's own loader."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from agentd.config.unitfile import parse_unit
from agentd.daemon.control.requests import parse_request
parse_unit("command: [sh]\\nworkdir: /\\npreset: claude-code\\n", file="/u.yaml", name="u")
parse_request(b'{"cmd": "status", "args": {"units": ["u"]}}')
from pydantic.plugin import _loader
print("importlib.metadata" in sys.modules, _loader.get_plugins())
print(_loader.PYDANTIC_ENTRY_POINT_GROUP, "importlib.metadata" in sys.modules)
real = sys.modules["pydantic.plugin._loader"]
print(real.__file__.endswith("_loader.py"), _loader.PYDANTIC_ENTRY_POINT_GROUP)
print(sys.modules["pydantic.plugin._loader"] is real)  # asked again: the same module
"""


def test_models_are_built_without_the_search_and_the_loader_still_answers() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split("\n")
    assert out[:4] == ["False ()", "pydantic True", "True pydantic", "True"]
