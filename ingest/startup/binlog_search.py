"""Where to start reading for the start modes that name a time or a GTID set.

Both search the binlog the server still has: first file by file (each file's first transaction,
a binary search), then transaction by transaction from the file found, without decoding rows.
A start is always a transaction boundary, as every Tidemark resume point is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime

from ingest.binlog.reader import TransactionMark, transaction_marks
from ingest.startup.gtid import GtidSet, MariaDBGtidSet, MySQLGtidSet, parse_gtid_set
from tidemark.errors import ConfigError
from tidemark.source import BinlogPosition, SourceConnection, current_position

logger = logging.getLogger(__name__)


def binlog_files(source: SourceConnection) -> list[str]:
    """The binlog files the server still has, oldest first."""
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SHOW BINARY LOGS")
        files = [str(row[0]) for row in cursor.fetchall()]
    if not files:
        raise ConfigError(f"the binlog is off on {source.host}:{source.port}")
    return files


def position_at_time(source: SourceConnection, timestamp_ms: int) -> BinlogPosition:
    """The start of the first transaction, in binlog order, whose binlog timestamp is at or
    after ``timestamp_ms``; the binlog's end when there is none yet.

    Binlog timestamps are whole seconds and are when a transaction's first statement started,
    not when it committed (docs/architecture.md#source-facts).
    """
    end = current_position(source)
    files = binlog_files(source)
    first = _last_file_where(source, files, lambda mark: mark.event_time_ms < timestamp_ms)
    if first is None:
        logger.warning(
            "scan.startup.timestamp-millis %s is not after the first transaction of the oldest "
            "binlog the server still has (%s): starting there; changes older than that file, if "
            "any, are no longer on the server",
            _instant(timestamp_ms),
            files[0],
        )
        first = 0
    with closing(transaction_marks(source, BinlogPosition(files[first], 4))) as marks:
        for mark in marks:
            if mark.event_time_ms >= timestamp_ms:
                return mark.start
    logger.info(
        "No transaction at or after %s yet: starting at the binlog's end", _instant(timestamp_ms)
    )
    return end


def position_after_gtids(source: SourceConnection, gtids: GtidSet, text: str) -> BinlogPosition:
    """The start of the first transaction the GTID set does not cover.

    Tidemark starts at one position and reads on from there, so it refuses a set that does not
    cut the binlog in two (a covered transaction after an uncovered one), and a set whose next
    transaction was purged.
    """
    end = current_position(source)
    files = binlog_files(source)
    searched_from = _last_file_where(source, files, lambda mark: _covers(gtids, text, mark))
    first = 0 if searched_from is None else searched_from
    start: TransactionMark | None = None
    with closing(transaction_marks(source, BinlogPosition(files[first], 4))) as marks:
        for mark in marks:
            covered = _covers(gtids, text, mark)
            if start is None and not covered:
                start = mark
                if searched_from is None and _next_purged(source, gtids, str(mark.gtid)):
                    raise ConfigError(
                        f"the transactions right after scan.startup.specific-offset.gtid-set "
                        f"'{text}' were purged from the binlog (the oldest left is {mark.gtid}, "
                        f"in {files[0]}): re-bootstrap the tables with scan.startup.mode: initial"
                    )
            elif start is not None and covered:
                raise ConfigError(
                    f"scan.startup.specific-offset.gtid-set '{text}' does not name one point in "
                    f"the binlog: {mark.gtid} is in the set but comes after {start.gtid}, which "
                    "is not. Tidemark starts at one position and reads everything after it: "
                    "give scan.startup.specific-offset.file and .pos instead"
                )
    if start is None:
        logger.warning(
            "Every transaction in the binlog is in scan.startup.specific-offset.gtid-set '%s': "
            "starting at the binlog's end, %s",
            text,
            end,
        )
        return end
    return start.start


def _next_purged(source: SourceConnection, gtids: GtidSet, oldest_left: str) -> bool:
    """Whether transactions the set lacks were purged, the oldest transaction left in the
    binlog being ``oldest_left``: on MariaDB, when that is not the next one of its domain; on
    MySQL, when ``@@gtid_purged`` is not all in the set (the set's own gaps are no sign)."""
    if isinstance(gtids, MariaDBGtidSet):
        return not gtids.follows_directly(oldest_left)
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT @@GLOBAL.gtid_purged")
        row = cursor.fetchone()
    purged = str(row[0] if row else "").strip()
    if not purged:
        return False
    parsed = parse_gtid_set(purged)
    return isinstance(parsed, MySQLGtidSet) and not gtids.includes(parsed)


def _last_file_where(
    source: SourceConnection, files: list[str], before: Callable[[TransactionMark], bool]
) -> int | None:
    """The index of the last file whose first transaction satisfies ``before``, which holds for
    a prefix of the binlog; None when not even the oldest file's does."""
    low, high = 0, len(files) - 1
    found: int | None = None
    while low <= high:
        middle = (low + high) // 2
        with closing(transaction_marks(source, BinlogPosition(files[middle], 4))) as marks:
            mark = next(marks, None)
        if mark is not None and before(mark):
            found, low = middle, middle + 1
        else:
            high = middle - 1
    return found


def _covers(gtids: GtidSet, text: str, mark: TransactionMark) -> bool:
    gtid = str(mark.gtid)
    if not gtids.same_form(gtid):
        raise ConfigError(
            f"scan.startup.specific-offset.gtid-set '{text}' is not in this server's GTID form: "
            f"its binlog has GTIDs like {gtid}. Take the set from the same server "
            "(@@gtid_binlog_pos on MariaDB, @@gtid_executed on MySQL)"
        )
    return gtids.covers(gtid)


def _instant(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat()
