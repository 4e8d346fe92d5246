"""The boundary with ``mysql-replication``: the only module that imports it.

It turns the library's events into Tidemark's own typed ``RowChange`` records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from tidemark.contracts import Operation
from tidemark.source import BinlogPosition, SourceConnection

_ROW_EVENTS = [WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent]
_OPERATIONS = {
    WriteRowsEvent: Operation.INSERT,
    UpdateRowsEvent: Operation.UPDATE,
    DeleteRowsEvent: Operation.DELETE,
}


@dataclass(frozen=True)
class RowChange:
    database: str
    table: str
    operation: Operation
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    #: the position just after the event that carried this row
    position: BinlogPosition
    event_time_ms: int


class BinlogReader:
    """Reads row changes from ``start`` on; stops at the current end unless ``follow``.

    MariaDB trap (DESIGN.md section 5): with ``is_mariadb=True`` and no GTID the library ignores
    the file and offset and streams from the first binlog, and without ``resume_stream`` it
    restarts at offset 4. So a file/offset start is always a plain ``COM_BINLOG_DUMP`` with
    ``resume_stream``, which MariaDB serves like MySQL.
    """

    def __init__(
        self, source: SourceConnection, start: BinlogPosition, *, follow: bool = False
    ) -> None:
        self._stream = BinLogStreamReader(
            connection_settings=source.pymysql_settings(),
            server_id=source.server_id,
            log_file=start.file,
            log_pos=start.offset,
            resume_stream=True,
            blocking=follow,
            only_events=_ROW_EVENTS,
            is_mariadb=False,
        )

    def __iter__(self) -> Iterator[RowChange]:
        for event in self._stream:
            operation = _OPERATIONS[type(event)]
            position = BinlogPosition(self._stream.log_file, self._stream.log_pos)
            for row in event.rows:
                before, after = _images(operation, row)
                yield RowChange(
                    database=event.schema,
                    table=event.table,
                    operation=operation,
                    before=before,
                    after=after,
                    position=position,
                    event_time_ms=event.timestamp * 1000,
                )

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> BinlogReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _images(operation: Operation, row: dict[str, Any]) -> tuple[dict[str, Any] | None, ...]:
    """The (before, after) row images of one row of a row event."""
    if operation is Operation.UPDATE:
        return row["before_values"], row["after_values"]
    if operation is Operation.INSERT:
        return None, row["values"]
    return row["values"], None
