"""One active ingest per pipeline: a lease on the source server, and standbys that wait for it.

The lease is a named lock of the source server (``GET_LOCK``), held by a connection of its
own. Why there (docs/architecture.md#one-active-ingest-per-pipeline):

- the server releases it the moment the holder's connection ends, however its process ended;
- it needs no privilege and no service besides the one ingest cannot do without; and
- a process cut off from the source loses it, so a standby that can reach the source takes
  over; a lease elsewhere would keep a pipeline with an active process that cannot read.

A holder whose host vanishes without closing its connection is dropped by the server after
``silent_seconds`` (the lease connection's ``wait_timeout``): the active process keeps its
connection busy, confirming the lease in a query that also shows who it is
(``tidemark.contracts.instance``). The lease decides who *should* write; the commit's fencing
(``ingest.changelog.fencing``) is what makes a second writer harmless when the lease is wrong
for a moment (a process frozen longer than ``silent_seconds``, then thawed).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pymysql

from tidemark.config.model import PipelineConfig, reveal
from tidemark.contracts.instance import Instance, LeaseHolders, Role, State, this_process
from tidemark.source import SourceConnection, open_connection

logger = logging.getLogger(__name__)

#: MySQL and MariaDB refuse longer lock names
_MAX_NAME = 64
#: how often, and how far apart, a standby reads the process list for the holder's query
_HOLDER_LOOKS = 5
_HOLDER_LOOK_PAUSE_SECONDS = 0.1


@dataclass(frozen=True)
class LeaseTiming:
    #: the active process confirms the lease this often, in a query that lasts as long
    check_seconds: int = 1
    #: a standby asks again this often (and sees then whether it was asked to stop)
    wait_seconds: int = 2
    #: a holder whose connection stays silent this long loses the lease (its host is gone)
    silent_seconds: int = 10


def lease_name(pipeline: str, scope: str) -> str:
    """The lock of ``pipeline`` writing to ``scope`` (its catalog): readable when it fits."""
    digest = hashlib.sha1(f"{pipeline}\0{scope}".encode()).hexdigest()[:12]
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in pipeline)
    return f"tidemark.ingest.{readable[: _MAX_NAME - 30]}.{digest}"


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SourceLease:
    """``name`` on ``source``: ``acquire`` waits as a standby until it holds it; ``lost`` is
    set when it no longer does; ``release`` gives it up."""

    def __init__(
        self,
        source: SourceConnection,
        name: str,
        pipeline: str,
        timing: LeaseTiming = LeaseTiming(),  # noqa: B008 - frozen
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._source = source
        self.name = name
        self._pipeline = pipeline
        self._timing = timing
        self._now = now
        self.lost = threading.Event()
        self._releasing = threading.Event()
        self._connection: pymysql.connections.Connection[Any] | None = None
        self._keeper: threading.Thread | None = None
        self.active: Instance | None = None

    def acquire(self, stop: threading.Event, deadline: float | None = None) -> bool:
        """Wait until this process holds the lease (True), or until ``stop`` is set or the
        monotonic ``deadline`` passes (False). Logs once for whom it waits, and again when
        that changes. Asks once at least, whatever the deadline, but never once ``stop`` is
        set: a lease granted while the stop came is given back at once."""
        if stop.is_set():
            return False

        # a read that outlasts every query here by the silence allowed means a dead network:
        # without a timeout, a lost connection could keep the keeper waiting for ever
        longest = max(self._timing.wait_seconds, self._timing.check_seconds)
        connection = open_connection(
            **self._source.pymysql_settings(),
            autocommit=True,
            read_timeout=longest + self._timing.silent_seconds,
        )
        standby = this_process(Role.INGEST, self._pipeline, State.STANDBY, self._now())
        waiting_for: Instance | str | None = None
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET SESSION wait_timeout = %s", (self._timing.silent_seconds,))
                while not stop.is_set():
                    cursor.execute(
                        f"SELECT {_sql(standby.tag())} GET_LOCK(%s, %s)",
                        (self.name, self._timing.wait_seconds),
                    )
                    row = cursor.fetchone()
                    if row is not None and row[0] == 1:
                        if stop.is_set():  # granted while the stop came: the close frees it
                            break
                        self._hold(connection)
                        return True
                    if deadline is not None and time.monotonic() >= deadline:
                        break
                    holder = _holder(cursor, self.name)
                    if holder != waiting_for and holder is not None:
                        who = holder.describe() if isinstance(holder, Instance) else holder
                        logger.warning(
                            "Waiting as a standby: ingest of pipeline %r is active %s; this "
                            "process takes over when that one ends or loses the source",
                            self._pipeline,
                            who,
                        )
                        waiting_for = holder
        except BaseException:
            connection.close()
            raise
        connection.close()
        return False

    def _hold(self, connection: pymysql.connections.Connection[Any]) -> None:
        self._connection = connection
        self.lost.clear()
        self._releasing.clear()
        self.active = this_process(Role.INGEST, self._pipeline, State.ACTIVE, self._now())
        logger.info(
            "Active: this process holds pipeline %r's lease (%s on %s:%d)",
            self._pipeline,
            self.name,
            self._source.host,
            self._source.port,
        )
        self._keeper = threading.Thread(target=self._keep, name="lease", daemon=True)
        self._keeper.start()

    def _keep(self) -> None:
        """Confirm the lease until released; set ``lost`` when it is gone."""
        assert self._connection is not None
        while not self._releasing.is_set():
            active = self.active
            assert active is not None
            # who it is, each time: ``waiting`` may have changed what it says
            query = f"SELECT {_sql(active.tag())} IS_USED_LOCK(%s) = CONNECTION_ID(), SLEEP(%s)"
            try:
                with self._connection.cursor() as cursor:
                    cursor.execute(query, (self.name, self._timing.check_seconds))
                    row = cursor.fetchone()
                held = row is not None and row[0] == 1
                reason = "another connection holds it"
            except (pymysql.Error, OSError) as error:
                held, reason = False, f"its connection failed: {error}"
            if not held:
                logger.error(
                    "Lost pipeline %r's lease (%s): stopping, and waiting as a standby again",
                    self._pipeline,
                    reason,
                )
                self.lost.set()
                return

    def waiting(self, why: str | None) -> None:
        """Say in the lease's query (what ``tidemark status`` reads) that the active process
        waits for ``why``, a service that is down; None when it no longer does."""
        active = self.active
        if active is not None:
            self.active = active.model_copy(update={"waiting_for": why})

    def release(self) -> None:
        """Give the lease up (a no-op when not held)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        self._releasing.set()
        if self._keeper is not None:
            self._keeper.join()  # at most check_seconds: its query runs that long
            self._keeper = None
        try:
            if not self.lost.is_set():
                with connection.cursor() as cursor:
                    cursor.execute("DO RELEASE_LOCK(%s)", (self.name,))
        except (pymysql.Error, OSError):
            pass  # the connection is gone: so is the lock
        finally:
            connection.close()
            self.active = None

    @contextmanager
    def held(self, stop: threading.Event, deadline: float | None = None) -> Iterator[bool]:
        """``acquire`` for the block, released after it."""
        try:
            yield self.acquire(stop, deadline)
        finally:
            self.release()


def lease_holders(source: SourceConnection, name: str) -> LeaseHolders:
    """Who holds ``name`` on ``source`` and who waits for it, from the server's process list
    (a user sees its own connections: the pipeline's user sees every instance's)."""
    with source.connect() as connection, connection.cursor() as cursor:
        active = _holder(cursor, name)
        cursor.execute("SHOW FULL PROCESSLIST")
        standbys = [
            instance
            for row in cursor.fetchall()
            if (info := row[7])
            and name in info
            and (instance := Instance.from_text(info)) is not None
            and instance.state is State.STANDBY
        ]
    return LeaseHolders(active, sorted(standbys, key=lambda instance: instance.since))


def _holder(cursor: Any, name: str) -> Instance | str | None:
    """The instance holding ``name``, as its lease query says; else its connection."""
    cursor.execute("SELECT IS_USED_LOCK(%s)", (name,))
    row = cursor.fetchone()
    if row is None or row[0] is None:
        return None
    connection_id = int(row[0])
    seen = f"on connection {connection_id}"
    # an active process is between two lease queries for a moment (longer on a starved
    # machine), when its connection shows no query: look again before settling for less
    for attempt in range(_HOLDER_LOOKS):
        if attempt:
            time.sleep(_HOLDER_LOOK_PAUSE_SECONDS)
        cursor.execute("SHOW FULL PROCESSLIST")
        for process in cursor.fetchall():
            if int(process[0]) == connection_id:
                instance = Instance.from_text(process[7])
                if instance is not None:
                    return instance
                seen = f"on connection {connection_id} from {process[2]}"
    return seen


def _sql(tag: str) -> str:
    """``tag`` inside a query that PyMySQL formats with arguments."""
    return tag.replace("%", "%%")


def ingest_lease(config: PipelineConfig) -> str:
    """The name of the lease on the source that a pipeline's active ingest holds: one per
    pipeline name and catalog, so two pipelines of one name on two lakes do not exclude
    each other."""
    properties = reveal(config.sink.catalog_properties)
    scope = [config.tidemark.catalog_name, properties.get("uri", "")]
    return lease_name(config.pipeline.name, "\0".join([*scope, properties.get("warehouse", "")]))
