"""How ingest paces itself. Defaults keep the lake within seconds of the source.

The settings a pipeline file can change (``tidemark.ingest``) start from the defaults their
options declare (``IngestOptions``, where each is explained); the others are ingest's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.config.model import IngestOptions

_FILE_DEFAULTS = IngestOptions()

#: commits in flight by catalog type, where ``tidemark.ingest.commit-threads`` does not say: on
#: a JDBC catalog and a local disk a commit spends about half its time waiting for the database
#: and the files, and more threads than a few only wait for Python's lock; a REST catalog's
#: commit waits for the server and the object store several times as long (bench/README.md,
#: the commit benchmark: 59 commits/s with 4 threads, 72 with 16 on the stack's)
COMMIT_THREADS = {"jdbc": 4, "rest": 16}


@dataclass(frozen=True)
class IngestSettings:
    #: tidemark.ingest.flush-interval
    flush_interval_seconds: float = _FILE_DEFAULTS.flush_interval.total_seconds()
    #: tidemark.ingest.flush-rows
    flush_rows: int = _FILE_DEFAULTS.flush_rows
    #: tidemark.ingest.max-transaction-rows
    max_transaction_rows: int = _FILE_DEFAULTS.max_transaction_rows
    #: tidemark.ingest.idle-commit-interval
    idle_commit_seconds: float = _FILE_DEFAULTS.idle_commit_interval.total_seconds()
    #: tidemark.ingest.watermark-report-interval
    watermark_report_seconds: float = _FILE_DEFAULTS.watermark_report_interval.total_seconds()
    #: tables a watermark report names at most: a message of its own for each more
    watermark_report_tables: int = 2_000
    #: the server sends a heartbeat when the binlog has been idle this long
    heartbeat_seconds: float = 1.0
    #: reconnect attempts in a row before giving up
    max_reconnects: int = 5
    progress_log_seconds: float = 30.0
    #: tidemark.ingest.commit-threads: threads committing changelog tables in the background
    #: (``ingest.stream.background_commits``)
    commit_threads: int = 4
    #: how long one tick may spend on idle tables' empty commits before reading goes on
    tick_budget_seconds: float = 0.5
    #: decode the binlog in a process of its own (``ingest.binlog.process``): a second core
    #: decodes while this one assembles and commits; False reads it in this process
    decode_in_process: bool = True
    #: tidemark.ingest.snapshot-max-rows-per-second
    snapshot_max_rows_per_second: int | None = _FILE_DEFAULTS.snapshot_max_rows_per_second
    #: tidemark.ingest.snapshot-max-threads-running
    snapshot_max_threads_running: int | None = _FILE_DEFAULTS.snapshot_max_threads_running
    #: tidemark.ingest.snapshot-resource-group
    snapshot_resource_group: str | None = _FILE_DEFAULTS.snapshot_resource_group

    @classmethod
    def from_options(cls, options: IngestOptions, catalog_type: str = "jdbc") -> IngestSettings:
        """The file's options, on a catalog of ``catalog_type`` (``catalog.properties.type``)."""
        flush_interval = options.flush_interval.total_seconds()
        return cls(
            commit_threads=options.commit_threads or COMMIT_THREADS.get(catalog_type.lower(), 4),
            flush_interval_seconds=flush_interval,
            flush_rows=options.flush_rows,
            max_transaction_rows=options.max_transaction_rows,
            idle_commit_seconds=options.idle_commit_interval.total_seconds(),
            watermark_report_seconds=options.watermark_report_interval.total_seconds(),
            # heartbeats are how an idle stream hands control back for timed flushes
            heartbeat_seconds=min(1.0, flush_interval),
            snapshot_max_rows_per_second=options.snapshot_max_rows_per_second,
            snapshot_max_threads_running=options.snapshot_max_threads_running,
            snapshot_resource_group=options.snapshot_resource_group,
        )
