"""Before streaming: refuse a source that would lose or garble changes, and find where to start.

Entry points: ``checks.run_startup_checks`` and ``start_points.start_position`` (for the start
modes that name a time or a GTID set, through ``binlog_search``).
"""
