"""The ``agentctl state`` verbs: writes under the state dir's lock, and ``init``, ``check``,
``archive``."""
