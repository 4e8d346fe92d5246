"""Where ingest writes: Iceberg changelog tables, their error tables, and commit reports.

Entry points: ``table.open_changelog`` (rows and progress in one commit),
``error_table.open_error_table``, ``reports.CommitReportPublisher`` (the only module of ingest that
imports ``confluent_kafka``) and ``status.table_status`` (for ``tidemark status``). What a commit
means (progress, one writer: ``fencing``) is decided here; its files are written by
``tidemark.lake``, the only package that touches PyIceberg's internals.
"""
