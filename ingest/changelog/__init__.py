"""Where ingest writes: sink tables (Iceberg changelogs, Paimon primary-key tables), their
error tables, and commit reports.

Entry points: ``catalogs.open_sink_catalog`` (the lake by the sink's ``type``: Iceberg's tables
are ``table.ChangelogTable``, Paimon's ``paimon_table.PaimonChangelog``, each committing rows and
progress in one commit as ``tidemark.sinks.protocols.ChangelogWriter`` says),
``error_table.open_error_table``, ``reports.CommitReportPublisher`` (the only module of ingest
that imports ``confluent_kafka``; reports are built from ``tidemark.sinks`` commits) and
``status.table_status`` (for ``tidemark status``). What a commit means (progress, one writer:
``fencing``) is decided here; its files are written by ``tidemark.lake``, the only package that
touches PyIceberg's internals (and, in ``tidemark.lake.paimon``, pypaimon's).
"""
