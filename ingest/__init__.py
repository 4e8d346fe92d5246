"""Ingest: a MySQL or MariaDB binlog into append-only Iceberg changelog tables, exactly once.

Entry point: ``ingest.service.run``, the long-running ingest (a standby until it holds the
pipeline's lease, then the stream), which builds each term's run with
``ingest.launch.build_runner`` (a pipeline file's tables onboarded, checked, bootstrapped and
ready to stream). The stages, in the order the data flows through them:

- ``startup``: refuse a source that would lose changes; find where to start reading.
- ``binlog``: the replication stream decoded into Tidemark's own events, in a process of its
  own; the only package that imports ``mysql-replication``.
- ``schema``: source table structures, their history and evolution, and the type mapping from
  MySQL values to the lake's.
- ``bootstrap``: the existing rows of newly onboarded tables, read without locks.
- ``stream``: events assembled into per-table flushes at transaction boundaries, and the loop
  that commits them.
- ``changelog``: the Iceberg changelog and error tables, and the commit reports to Kafka.

A stage may use what an earlier one defines, and one uses a later one's: ``binlog`` decodes
text with ``schema.charsets`` into the values ``schema.values`` documents (the type mapping's
input). ``schema.tracker`` evolves the changelog table through the lake-format seam
(``tidemark.sinks.protocols.ChangelogWriter``), whichever format writes it
(``changelog.catalogs``). What a changelog row and commit mean to readers (the scheduler, the
Spark jobs, users) is in ``tidemark.contracts``, not here.
"""
