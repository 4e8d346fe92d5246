"""The window jobs: each window's mirror merges, then the users' Spark SQL over the mirrors.

``merge/`` merges a window of a changelog into its mirror (the request, the changelog bound,
the stamps, the merge PyIceberg alone commits, the Arrow merge, Spark's ``MERGE`` and the worker
processes). Beside it: ``window_jobs`` (the API the scheduler and the CLI call), ``user_sql``
(the users' SQL files), ``session`` (the only place a Spark session is built), ``run_window``
(the ``spark-submit`` entry) with its ``arguments``, ``executor`` (the scheduler's executor on
Spark), ``backfill`` and ``maintenance``.
"""
