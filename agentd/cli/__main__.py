"""``python -m agentd.cli``: the ``agentd`` command."""

from agentd.cli.agentd.main import main

main()
