"""The command line: ``agentd`` and ``agentctl``.

``agentd`` (``agentd``: serve, run, check, demo; ``run``, ``run_attach`` for
``run -i``; ``termsize``, the attached terminal's size, which ``ctl_attach``
uses too) and ``agentctl`` (``agentctl``), whose verb groups are modules of
their own, imported only when one of their verbs runs: the daemon verbs
(``ctl_units``, ``ctl_logs``, ``ctl_attach``, ``ctl_watch`` with ``top``,
``ctl_service``, over ``ctl_client``, ``ctl_params``, ``ctl_status`` and
``ctl_format``), the state verbs (``state``), the CLI hooks (``ctl_hooks`` over
``hooks``); and the bundled demo (``demo/``). The console script (``ctlmain``)
does the commands agents run most without click: the state writes
(``statefast``) and a plain ``status`` (``ctl_status``).

The outermost layer: it may import anything; nothing imports it.
"""
