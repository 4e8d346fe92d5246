"""What ingest, the scheduler, the Spark jobs and users rely on: change one and readers break.

- ``changelog``: a changelog row's metadata columns and operations, the snapshot summary keys.
- ``progress``: a changelog commit's watermark and binlog position (``TableProgress``).
- ``bootstrap_state``: how far a table's bootstrap has come, in the same summaries.
- ``source_tables`` and ``schema_history``: every structure a source table has had.
- ``mirror``: what a mirror table's commits say about the windows it holds.
- ``reports``: the commit report on the Kafka topic.

Add, never rename. This package imports no stage.
"""
