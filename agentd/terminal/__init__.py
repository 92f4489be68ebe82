"""What a terminal shows: raw pty bytes in, a screen and sentinel hits out.

The line matcher (``matcher``) runs the bytes through the escape grammar
(``ansi``) and what each control does (``controls``) onto a model of the
screen (``screen``, on ``rows``; display widths in ``cells``; runs of plain
lines at C speed in ``bulk``), and matches its logical lines against the
rules (``rules``; a literal pre-filter from ``regexlit``), telling the echo of
injected text from real output (``echo``) and, after a resize, a TUI's
redraw from new lines (``redraw``).

Pure: values in, values out; imports only the shared leaves. No I/O.
"""
