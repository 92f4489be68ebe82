"""What a terminal shows: raw pty bytes in, lines and sentinel hits out.

The escape grammar (``ansi``), the line matcher (``matcher``), the rules it
searches for and how (``rules``), the filter that tells the echo of injected
text from real output (``echo``) and the literal pre-filter for regexes
(``regexlit``).

Pure: values in, values out; imports only the shared leaves. No I/O.
"""
