"""The command line: ``agentd`` (``agentd/``) and ``agentctl`` (``agentctl/``).

What both share (one-line errors, the attached terminal's size, transcript
text) is ``common``; ``python -m agentd.cli`` is ``agentd``.

The outermost layer: it may import anything; nothing imports it.
"""
