"""The binlog read in a process of its own (``ingest.binlog.process``) hands on the events,
structures and errors that reading it here gives, on the real server's binlog."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bench.polling import wait_until
from ingest.binlog import event_wire, process
from ingest.binlog.events import RowsChanged, Woken
from ingest.binlog.process import BATCH_EVENTS, ProcessBinlogReader
from ingest.binlog.reader import BinlogReader, StreamInterruptedError
from tests.ingest.binlog.every_event import comparable, write_every_kind_of_event
from tidemark.source import BinlogPosition, SourceConnection, current_position
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source

QUIET_DEADLINE_SECONDS = 30


def _read(
    reader_type: type[BinlogReader] | type[ProcessBinlogReader],
    source: SourceConnection,
    database: str,
    start: BinlogPosition,
    end: BinlogPosition,
) -> tuple[list[Any], list[Any]]:
    """Every event from ``start`` to ``end``, and the structure of each row event."""
    events, structures = [], []
    with reader_type(source, start, databases=[database]) as reader:
        for event in reader:
            assert not isinstance(event, Woken), "nothing asked this reader to wake"
            if event.position > end:
                continue  # other tests' transactions
            events.append(comparable(event))
            if isinstance(event, RowsChanged):
                assert event.structure is not None
                structures.append(event.structure())
    return events, structures


def test_the_reading_process_hands_on_every_event_and_structure_as_reading_here_does(
    source: SourceEndpoint, source_database: str, admin_connection: Connection, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    start = current_position(cdc_source)
    write_every_kind_of_event(admin_connection, source.flavor)
    end = current_position(cdc_source)

    here = _read(BinlogReader, cdc_source, source_database, start, end)
    in_process = _read(ProcessBinlogReader, cdc_source, source_database, start, end)

    events, structures = here
    assert len(events) > 2 * BATCH_EVENTS  # several batches crossed
    assert {name for name, _ in events} >= {
        "TransactionStarted",
        "RowsChanged",
        "TransactionCommitted",
        "StatementExecuted",
    }
    assert len({structure for structure in structures if structure is not None}) > 10
    assert in_process == here


def test_a_quiet_stream_hands_on_what_it_has_without_waiting_for_a_full_batch(
    source: SourceEndpoint, source_database: str, admin_connection: Connection, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    start = current_position(cdc_source)
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE quiet (id INT PRIMARY KEY)")
        cursor.execute("INSERT INTO quiet VALUES (1)")
    end = current_position(cdc_source)

    with ProcessBinlogReader(cdc_source, start, follow=True, databases=[source_database]) as reader:
        # held back, they would never come: the process is stopped after a while instead
        deadline = threading.Timer(QUIET_DEADLINE_SECONDS, os.kill, (reader.pid, signal.SIGKILL))
        deadline.start()
        try:
            # the stream stays open: the events up to ``end`` come though no batch filled up
            for event in reader:
                assert not isinstance(event, Woken), "nothing asked this reader to wake"
                if event.position >= end:
                    break
        finally:
            deadline.cancel()
    assert not isinstance(event, Woken) and event.position == end


def test_a_killed_reading_process_is_a_broken_stream_to_resume(
    source: SourceEndpoint, source_database: str, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    start = current_position(cdc_source)
    with ProcessBinlogReader(
        cdc_source, start, follow=True, databases=[source_database], heartbeat_seconds=0.2
    ) as reader:
        events = iter(reader)
        next(events)  # a heartbeat: the process reads
        os.kill(reader.pid, signal.SIGKILL)
        with pytest.raises(StreamInterruptedError, match=r"exit code -9"):
            for _ in events:
                pass


def test_an_error_in_the_reading_process_is_raised_as_reading_here_raises_it(
    source: SourceEndpoint, source_database: str, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    missing = BinlogPosition("mariadb-bin.999998", 4)

    def error_of(reader_type: type[BinlogReader] | type[ProcessBinlogReader]) -> Exception:
        with pytest.raises(Exception) as raised:  # noqa: PT011 - compared below
            with reader_type(cdc_source, missing, databases=[source_database]) as reader:
                list(reader)
        return raised.value

    here, in_process = error_of(BinlogReader), error_of(ProcessBinlogReader)
    assert "1236" in str(here)  # the server cannot find the file
    assert (type(in_process), str(in_process)) == (type(here), str(here))
    assert "In the binlog reader process" in str(in_process.__cause__)


def test_a_batch_of_builtin_values_crosses_with_marshal_and_any_other_with_pickle() -> None:
    plain = [(1, "db", "t", 0, [(None, {"id": 1, "c": "x", "b": b"\0", "f": 0.5})], "f", 4, 0, 1)]
    dated = [(1, "db", "t", 0, [(None, {"d": dt.date(2020, 1, 1), "n": Decimal("1.50")})])]

    assert event_wire.pack(plain)[:1] == b"m"
    assert event_wire.pack(dated)[:1] == b"p"
    for batch in (plain, dated):
        assert event_wire.unpack(event_wire.pack(batch)) == batch


def test_a_warmed_up_reading_process_serves_the_next_reader_and_a_dead_one_is_replaced(
    source: SourceEndpoint, source_database: str, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    start = current_position(cdc_source)

    process.warm()
    spare = process._spare
    assert spare is not None
    with ProcessBinlogReader(cdc_source, start, databases=[source_database]) as reader:
        assert reader.pid == spare[0].pid
        assert not [event for event in reader if isinstance(event, RowsChanged)]

    process.warm()
    dead = process._spare
    assert dead is not None
    dead[0].kill()
    dead[0].wait()
    with ProcessBinlogReader(cdc_source, start, databases=[source_database]) as reader:
        assert reader.pid != dead[0].pid
        assert not [event for event in reader if isinstance(event, RowsChanged)]


#: a process reading a quiet binlog without heartbeats, as ingest's parent of a reading process
_PARENT = """
import sys
from ingest.binlog.process import ProcessBinlogReader
from tidemark.source import BinlogPosition, SourceConnection
source = SourceConnection.model_validate_json(sys.argv[1])
start = BinlogPosition(sys.argv[2], int(sys.argv[3]))
reader = ProcessBinlogReader(source, start, follow=True, databases=[sys.argv[4]])
print(reader.pid, flush=True)
for event in reader:
    pass
"""


def test_a_reading_process_ends_with_its_parent_killed_with_sigkill_on_a_quiet_stream(
    source: SourceEndpoint, source_database: str, server_id: int
) -> None:
    # without heartbeats nothing is written to the pipe, whose end would say the parent is gone
    cdc_source = source.cdc_source(server_id)
    start = current_position(cdc_source)
    settings = {
        **cdc_source.model_dump(mode="json"),
        "password": cdc_source.password.get_secret_value(),
    }
    arguments = [json.dumps(settings), start.file, str(start.offset), source_database]
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, *arguments], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    reader = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    wait_until("the reading process ended with its parent", lambda: not _alive(reader), 30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has ended; only its parent has not collected it yet
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
