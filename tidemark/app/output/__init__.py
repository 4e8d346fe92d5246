"""What commands and the demo show people: tables, progress and live views, one module a kind,
all drawn with ``rich`` through one Console per stream (``console``).

On a terminal: styled tables, progress bars and live views redrawn in place, with log lines
kept above them. Anywhere else (logs, pipes, CI, tests): plain text laid out as it always was,
and progress as log lines at most every few seconds.

Each view takes what a ``tidemark.app.pipeline.Pipeline`` method returned and renders it; none reads
a catalog, a source or the scheduler's state itself. Time comes from clocks passed in.
"""
