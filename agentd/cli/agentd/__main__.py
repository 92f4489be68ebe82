"""``python -m agentd.cli.agentd``: the ``agentd`` command (as ``python -m agentd.cli``)."""

from agentd.cli.agentd.script import main

main()
