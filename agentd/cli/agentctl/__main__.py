"""``python -m agentd.cli.agentctl``: the ``agentctl`` console script (hook settings
written by ``agentctl hooks`` run it this way)."""

from agentd.cli.agentctl.main import main

main()
