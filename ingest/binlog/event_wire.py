"""How the binlog's events cross from the reading process to ingest (``ingest.binlog.process``):
plain tuples, tagged by their first element, packed with ``marshal`` when they hold only
builtin values and with ``pickle`` otherwise. The reading loop (``ingest.binlog.native_loop``) makes
the frequent kinds in this form straight away; ``encode`` turns any other event into it."""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Callable
from typing import Any

from ingest.binlog.events import (
    BinlogEvent,
    Heartbeat,
    RowsChanged,
    StatementExecuted,
    TransactionCommitted,
    TransactionStarted,
)
from tidemark.contracts.changelog import Operation
from tidemark.contracts.source_tables import SourceTable
from tidemark.source import BinlogPosition

#: the tags (first elements) of the tuples
STARTED, ROWS, COMMITTED, STATEMENT, HEARTBEAT, STRUCTURE = range(6)
OPERATIONS = tuple(Operation)
OPERATION_INDEX = {operation: index for index, operation in enumerate(OPERATIONS)}
#: ``BinlogPosition((file, offset))`` without the named tuple's own ``__new__`` (a Python call)
_position = tuple.__new__
#: the first byte of a packed message: how the rest is written
_MARSHAL, _PICKLE = b"m", b"p"

Item = tuple[Any, ...]
#: structures by key (their callable's id), each callable kept so that its id stays its own
Structures = dict[int, Callable[[], SourceTable | None]]


def structure_key(
    structure: Callable[[], SourceTable | None] | None, known: Structures
) -> tuple[int, Item | None]:
    """The key of a row event's structure, and the first time the item describing it (it is
    described once, where the callable can be called), to go before the row event's."""
    if structure is None:
        return -1, None
    key = id(structure)
    if key in known:
        return key, None
    known[key] = structure
    return key, (STRUCTURE, key, structure())


def encode(
    event: BinlogEvent,
    batch: list[Item],
    structures: Structures,
) -> None:
    """``event`` as items appended to ``batch``."""
    position = event.position
    if isinstance(event, RowsChanged):
        key, description = structure_key(event.structure, structures)
        if description is not None:
            batch.append(description)
        batch.append(
            (
                ROWS,
                event.database,
                event.table,
                OPERATION_INDEX[event.operation],
                event.columns,
                event.rows,
                position.file,
                position.offset,
                event.event_time_ms,
                key,
            )
        )
    elif isinstance(event, TransactionStarted):
        batch.append((STARTED, event.gtid, position.file, position.offset))
    elif isinstance(event, TransactionCommitted):
        batch.append((COMMITTED, position.file, position.offset, event.event_time_ms))
    elif isinstance(event, StatementExecuted):
        batch.append(
            (
                STATEMENT,
                event.database,
                event.statement,
                position.file,
                position.offset,
                event.event_time_ms,
            )
        )
    else:
        batch.append((HEARTBEAT, position.file, position.offset))


def decode(item: Item, structures: Structures) -> BinlogEvent | None:
    """The event an item stands for; None for a structure's description (kept in
    ``structures``, for the row events after it)."""
    tag = item[0]  # the kinds in the order of their frequency
    if tag == ROWS:
        _, database, table, operation, columns, rows, file, offset, time_ms, key = item
        return RowsChanged(
            database,
            table,
            OPERATIONS[operation],
            columns,
            rows,
            _position(BinlogPosition, (file, offset)),
            time_ms,
            structures.get(key),
        )
    if tag == STARTED:
        return TransactionStarted(item[1], _position(BinlogPosition, item[2:]))
    if tag == COMMITTED:
        return TransactionCommitted(_position(BinlogPosition, item[1:3]), item[3])
    if tag == STATEMENT:
        return StatementExecuted(item[1], item[2], BinlogPosition(item[3], item[4]), item[5])
    if tag == HEARTBEAT:
        return Heartbeat(BinlogPosition(item[1], item[2]))
    structure = item[2]
    structures[item[1]] = lambda: structure
    return None


def pack(message: Any) -> bytes:
    """A message as bytes: with ``marshal`` when it holds only builtin values (five times as
    fast as ``pickle`` on a batch of sysbench events, and both ends run the same Python),
    else with ``pickle`` (dates, decimals, structures)."""
    try:
        return _MARSHAL + marshal.dumps(message)
    except ValueError:
        return _PICKLE + pickle.dumps(message, pickle.HIGHEST_PROTOCOL)


def unpack(message: bytes) -> Any:
    body = memoryview(message)[1:]
    return marshal.loads(body) if message[:1] == _MARSHAL else pickle.loads(body)
