"""The command line: ``agentd`` and ``agentctl``.

``agentd`` (``agentd``: serve, run, check, demo) and ``agentctl``
(``agentctl``) with its verb groups: the daemon verbs (``ctl_*``), the
state verbs (``state``), the CLI hooks (``hooks``), and the bundled demo
(``demo/``).

The outermost layer: it may import anything; nothing imports it.
"""
