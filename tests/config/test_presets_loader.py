"""A preset file reads the same through libyaml (what agentd uses where PyYAML has it:
a tenth of the time) as through PyYAML's pure-Python loader."""

from __future__ import annotations

import pytest
import yaml

from agentd.config.presets import _CLI_PRESETS, _preset_file, cli_preset_names


@pytest.mark.parametrize("name", cli_preset_names())
def test_each_preset_reads_as_the_pure_python_loader_reads_it(name: str) -> None:
    text = (_CLI_PRESETS / f"{name}.yaml").read_text(encoding="utf-8")
    assert _preset_file(name) == yaml.load(text, Loader=yaml.SafeLoader)
