"""``python -m agentd.cli``: the ``agentd`` command."""

from agentd.cli.agentd import main

main()
