"""The bootstrap: the state files rendered within a token budget (``render``)."""
