"""``python -m agentd.cli``: the ``agentd`` command."""

from agentd.cli.agentd.script import main

main()
