"""Where a run starts reading: the tables' own progress, else the pipeline's startup mode."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime

from ingest.startup.binlog_search import binlog_files, position_after_gtids, position_at_time
from ingest.startup.gtid import parse_gtid_set
from tidemark.config.model import Startup, StartupMode
from tidemark.contracts.progress import TableProgress
from tidemark.errors import ConfigError
from tidemark.source import BinlogPosition, SourceConnection, current_position

logger = logging.getLogger(__name__)


def start_position(
    source: SourceConnection,
    startup: Startup,
    progress: Mapping[str, TableProgress | None],
) -> BinlogPosition:
    """The smallest position any table has reached; for a pipeline that has committed nothing
    yet, the position ``scan.startup.mode`` names.

    Tables that have no progress while others do are new to the pipeline. Without
    ``scan.newly-added-table.enabled`` they start at that smallest position too, without the
    rows they held before it, and a warning says so.
    """
    known = {sink: p for sink, p in progress.items() if p is not None}
    if known:
        fresh = sorted(sink for sink, p in progress.items() if p is None)
        if fresh:
            logger.warning(
                "Tables new to this pipeline start streaming now, without their existing rows "
                "(set scan.newly-added-table.enabled: true to bootstrap them): %s",
                ", ".join(fresh),
            )
        resume = min(p.position for p in known.values())
        logger.info("Resuming at %s, the oldest position the tables have committed", resume)
        return resume
    start = _startup_position(source, startup)
    logger.info("Starting at %s (scan.startup.mode %s)", start, _describe(startup))
    return start


def _startup_position(source: SourceConnection, startup: Startup) -> BinlogPosition:
    mode = startup.mode
    if mode is StartupMode.LATEST_OFFSET:
        return current_position(source)
    if mode is StartupMode.EARLIEST_OFFSET:
        return BinlogPosition(binlog_files(source)[0], 4)
    if mode is StartupMode.SPECIFIC_OFFSET:
        # as in Flink CDC, a GTID set wins over a file and position given beside it
        text = startup.specific_offset_gtid_set
        if text is not None:
            return position_after_gtids(source, parse_gtid_set(text), text)
        if startup.specific_offset_file is None or startup.specific_offset_pos is None:
            raise ConfigError(
                "scan.startup.mode 'specific-offset' needs scan.startup.specific-offset.file and "
                ".pos, or scan.startup.specific-offset.gtid-set"
            )
        return BinlogPosition(startup.specific_offset_file, startup.specific_offset_pos)
    if mode is StartupMode.TIMESTAMP:
        if startup.timestamp_millis is None:
            raise ConfigError("scan.startup.mode 'timestamp' needs scan.startup.timestamp-millis")
        return position_at_time(source, startup.timestamp_millis)
    # ingest.launch bootstraps new pipelines in these modes before asking
    raise ValueError(f"scan.startup.mode '{mode.value}' starts with a bootstrap")


def _describe(startup: Startup) -> str:
    if startup.mode is StartupMode.TIMESTAMP and startup.timestamp_millis is not None:
        instant = datetime.fromtimestamp(startup.timestamp_millis / 1000, UTC).isoformat()
        return f"timestamp, the first transaction at or after {instant}"
    if startup.mode is StartupMode.SPECIFIC_OFFSET and startup.specific_offset_gtid_set:
        return f"specific-offset, after GTID set {startup.specific_offset_gtid_set}"
    return startup.mode.value
