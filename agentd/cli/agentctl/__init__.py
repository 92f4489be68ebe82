"""``agentctl``: control a running agentd over its socket, and ``agentctl state``,
which works on a state dir without the daemon.

The console script (``main``) does what agents run most without click: the
state writes (``statefast``) and a plain ``status`` (``status``); everything
else goes through the click group (``group``), whose verb groups are modules
of their own, imported only when one of their verbs runs: the daemon verbs
(``units``, ``logs``, ``attach``, ``watch`` with ``top``, ``dashboard``,
``service``, over ``client``, ``params`` and ``output``), the state verbs
(``state``) and the CLIs' hooks (``hooks``).

Importing this package loads nothing: it must stay click-free, so that the
fast path keeps its speed.
"""
