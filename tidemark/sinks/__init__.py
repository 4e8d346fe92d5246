"""The seam between the pipeline and the lake format its changelog tables are written in.

Ingest, the scheduler's status and the window jobs need little of a changelog table: commit
rows with their progress (binlog position, watermark, order range, bootstrap state) in one
atomic commit, read the newest commit's progress back, and list the commits a table keeps. That
is said here once, format-neutral (no PyIceberg type in a signature), so that a second format
(Paimon's primary-key tables) is one more implementation, not a fork of the pipeline:

- ``commits``: ``Commit``, what one commit of a table made and carries, and what the stages
  compute from a table's commits (the newest progress, the watermark over time).
- ``protocols``: ``ChangelogHistory`` (what the window jobs and status read) and
  ``ChangelogWriter`` (what ingest writes and reads back).
- ``iceberg``: the reading side for Iceberg, commits from snapshots; ingest's writer,
  ``ingest.changelog.table.ChangelogTable``, builds on it, and ingest opens it through the
  registry of formats ``ingest.changelog.catalogs``.

A second format implements both protocols (its writer in ``ingest/changelog/``, registered in
``ingest.changelog.catalogs``; its history here) and stores the same keys
(``tidemark.contracts.progress``, ``tidemark.contracts.bootstrap_state``) in each commit.
Shared core: imports no stage.
"""
