"""How ingest paces itself. Defaults keep the lake within seconds of the source."""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.config.model import IngestOptions


@dataclass(frozen=True)
class IngestSettings:
    #: commit what is buffered at least this often
    flush_interval_seconds: float = 2.0
    #: ... or as soon as this many rows wait
    flush_rows: int = 50_000
    #: a transaction with more rows than this is committed in parts (memory stays bounded)
    max_transaction_rows: int = 100_000
    #: tables without changes get an empty commit this often, so their watermark moves
    idle_commit_seconds: float = 10.0
    #: the server sends a heartbeat when the binlog has been idle this long
    heartbeat_seconds: float = 1.0
    #: reconnect attempts in a row before giving up
    max_reconnects: int = 5
    progress_log_seconds: float = 30.0
    #: decode the binlog in a process of its own (``ingest.binlog.process``): a second core
    #: decodes while this one assembles and commits; False reads it in this process
    decode_in_process: bool = True
    #: caps each bootstrap reader; None: as fast as it goes
    snapshot_max_rows_per_second: int | None = None

    @classmethod
    def from_options(cls, options: IngestOptions) -> IngestSettings:
        flush_interval = options.flush_interval.total_seconds()
        return cls(
            flush_interval_seconds=flush_interval,
            flush_rows=options.flush_rows,
            max_transaction_rows=options.max_transaction_rows,
            idle_commit_seconds=options.idle_commit_interval.total_seconds(),
            # heartbeats are how an idle stream hands control back for timed flushes
            heartbeat_seconds=min(1.0, flush_interval),
            snapshot_max_rows_per_second=options.snapshot_max_rows_per_second,
        )
