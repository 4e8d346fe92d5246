"""Where a run starts reading: the tables' own progress, else the pipeline's startup mode."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ingest.progress import TableProgress
from tidemark.config.model import Startup, StartupMode
from tidemark.errors import ConfigError
from tidemark.source import BinlogPosition, SourceConnection, current_position

logger = logging.getLogger(__name__)

_BOOTSTRAP_MODES = (StartupMode.INITIAL, StartupMode.SNAPSHOT)


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
        return min(p.position for p in known.values())
    return _startup_position(source, startup)


def _startup_position(source: SourceConnection, startup: Startup) -> BinlogPosition:
    mode = startup.mode
    if mode is StartupMode.LATEST_OFFSET:
        return current_position(source)
    if mode is StartupMode.EARLIEST_OFFSET:
        return _earliest_position(source)
    if mode is StartupMode.SPECIFIC_OFFSET:
        if startup.specific_offset_file is None or startup.specific_offset_pos is None:
            raise ConfigError(
                "scan.startup.mode 'specific-offset' needs scan.startup.specific-offset.file and "
                "scan.startup.specific-offset.pos in Tidemark (a GTID set alone is not supported "
                "yet)"
            )
        return BinlogPosition(startup.specific_offset_file, startup.specific_offset_pos)
    if mode in _BOOTSTRAP_MODES:
        # ingest.pipeline bootstraps new pipelines in these modes before asking
        raise ValueError(f"scan.startup.mode '{mode.value}' starts with a bootstrap")
    raise ConfigError(
        f"scan.startup.mode '{mode.value}' is not supported by Tidemark yet: use "
        "'latest-offset', 'earliest-offset' or 'specific-offset'"
    )


def _earliest_position(source: SourceConnection) -> BinlogPosition:
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SHOW BINARY LOGS")
        first = cursor.fetchone()
    if first is None:
        raise ConfigError(f"the binlog is off on {source.host}:{source.port}")
    return BinlogPosition(str(first[0]), 4)
