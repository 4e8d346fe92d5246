"""Paimon table maintenance with Paimon's own Java code, driven over py4j from the Spark driver.

Ingest writes Paimon tables with pypaimon, which neither compacts, merges manifests nor expires
snapshots (docs/paimon.md). A pass does all three on one table, in the driver's JVM, with
``paimon-bundle`` (or paimon-spark, which shades it) on the classpath:

1. *compaction*: a full compaction of every (partition, bucket), as ``CALL sys.compact`` does
   it (``TableWriteImpl.compact(partition, bucket, full=true)``);
2. *one commit*: the compaction's COMPACT snapshot, through a ``ManifestCommittable`` carrying
   the newest snapshot's watermark, so the table's watermark never goes down (Paimon also keeps
   the higher of it and the latest one's). Writing that snapshot merges the manifests. It has no
   ``tidemark.position``: it is not a progress commit, and readers skip it;
3. *expiry*: the snapshots the table's retention options (``snapshot.num-retained.*``,
   ``snapshot.time-retained``, consumers) let go, but never ``keep_from`` (the oldest snapshot
   a pending window still reads) or anything newer, nor the newest snapshot carrying
   ``tidemark.position``, where ingest resumes.

Ingest keeps committing meanwhile. Its tables are ``write-only``: its writers only add level-0
files and never delete one, so the compaction's commit, which only checks that the files it
replaces are still there, never conflicts with them, and a file they add while the pass runs
is not in the compaction and stays (Paimon's "write-only writers and one dedicated compactor"
model). One pass per table at a time: two compactors of one table would conflict.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from tidemark.contracts.changelog import SummaryKey
from tidemark.errors import TerminalError, TransientError, first_line
from tidemark.lake.paimon import publishing

logger = logging.getLogger(__name__)

#: a class of paimon-core, in paimon-bundle and in paimon-spark alike
PAIMON_CLASS = "org.apache.paimon.catalog.CatalogFactory"
COMMIT_USER = "tidemark-maintenance"


class PaimonJarMissingError(TerminalError):
    """The Spark session has no Paimon Java classes to maintain a table with."""


class PaimonCompactionCommitError(TransientError):
    """The compaction's commit failed: it lost the race for the next snapshot to ingest too
    often, say. The table is as it was; a later pass may succeed."""


#: the options of the compaction's commit
_COMMIT_OPTIONS = {
    # every manifest that is small or has deletes is rewritten: the base manifests of the new
    # snapshot are merged, whatever their number (Paimon waits for 30 by default)
    "manifest.full-compaction-threshold-size": "1 b",
    # ingest commits about every second, and each of its commits that lands first makes this
    # one try again: try more often than Paimon's 10 times, never waiting long in between
    "commit.max-retries": "60",
    "commit.max-retry-wait": "1 s",
}


@dataclass(frozen=True)
class PaimonMaintenanceResult:
    """What one pass did to one table."""

    table: str
    #: the COMPACT snapshot the pass committed; None when every bucket was already compact
    compaction_snapshot_id: int | None
    buckets: int
    #: data files the compaction replaced, and the files that replaced them
    files_compacted: int
    files_written: int
    #: the watermark the compaction snapshot carries (the newest snapshot's when planned)
    watermark: int | None
    snapshots_expired: int
    #: every snapshot older than this one is gone (None: the table had none to expire)
    earliest_kept: int | None
    seconds: float


def maintain_paimon_table(
    spark: SparkSession,
    catalog_options: Mapping[str, str],
    identifier: str,
    *,
    keep_from: int | None,
) -> PaimonMaintenanceResult:
    """Compact, merge manifests and expire snapshots of Paimon table ``identifier``
    (``db.t``) of the catalog ``catalog_options`` describes (Paimon's catalog options:
    ``warehouse``, ``metastore``, ...), keeping snapshot ``keep_from`` and every newer one
    whatever the table's retention says (None: only the table's retention decides)."""
    started = time.perf_counter()
    with open_paimon_table(spark, catalog_options, identifier) as table:
        compaction = table.compact()
        snapshot_id = table.commit(compaction)
        expired, earliest = table.expire(keep_from)
    result = PaimonMaintenanceResult(
        table=identifier,
        compaction_snapshot_id=snapshot_id,
        buckets=compaction.buckets,
        files_compacted=compaction.files_compacted,
        files_written=compaction.files_written,
        watermark=compaction.watermark,
        snapshots_expired=expired,
        earliest_kept=earliest,
        seconds=time.perf_counter() - started,
    )
    logger.info(
        "Maintained Paimon table %s: %d files of %d buckets compacted into %d, %d snapshots "
        "expired, in %.1f s",
        identifier,
        result.files_compacted,
        result.buckets,
        result.files_written,
        result.snapshots_expired,
        result.seconds,
    )
    return result


def require_paimon(spark: SparkSession, identifier: str, probe: str = PAIMON_CLASS) -> Any:
    """The driver's JVM view, once ``probe`` is found there; else a ``PaimonJarMissingError``
    saying how to put Paimon on the classpath."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "the Spark session has stopped"
    try:
        jvm.py4j.reflection.ReflectionUtil.classForName(probe)
    except Py4JJavaError as error:
        if "ClassNotFoundException" not in str(error.java_exception):
            raise
        raise PaimonJarMissingError(
            f"cannot maintain Paimon table {identifier}: paimon-bundle is not on the Spark "
            f"classpath (no class {probe}). Locally run `make setup` (it resolves "
            "paimon-bundle with the stack's Spark jars); in production put "
            "paimon-spark-4.1_2.13 on the classpath (--jars or spark.jars.packages), which "
            "shades paimon-bundle: do not add both"
        ) from None
    return jvm


@dataclass(frozen=True)
class Compaction:
    """A compaction written but not yet committed: ``messages`` are Java ``CommitMessage``s."""

    messages: Any
    #: the commit's identifier, unique per pass: a retried commit recognises its own snapshot
    #: by it (and by ``COMMIT_USER``), and only its own
    identifier: int
    watermark: int | None
    buckets: int
    files_compacted: int
    files_written: int


class PaimonJavaTable:
    """One Paimon table opened through Paimon's Java API, for one pass."""

    def __init__(self, jvm: Any, table: Any, identifier: str, spill: str) -> None:
        self._jvm = jvm
        self._paimon = jvm.org.apache.paimon
        self.identifier = identifier
        #: the table as ingest sees it: ``write-only``, so committing through it runs none of
        #: Paimon's own expiry, which would ignore ``keep_from``
        self._table = table
        self._spill = spill

    def compact(self) -> Compaction:
        """Fully compact every (partition, bucket) of the latest snapshot, without
        committing."""
        latest = self._table.snapshotManager().latestSnapshot()
        watermark = None if latest is None else latest.watermark()
        buckets = [] if latest is None else list(self._bucket_entries(latest))
        identifier = time.time_ns()
        if not buckets:
            return Compaction(self._jvm.java.util.ArrayList(), identifier, watermark, 0, 0, 0)
        # ``write-only`` gives the writer no compaction manager: lift it for this writer only
        compacting = self._table.copy(_java_map(self._jvm, {"write-only": "false"}))
        spill = self._paimon.disk.IOManager.create(self._spill)
        write = compacting.newWrite(COMMIT_USER).withIOManager(spill)
        try:
            for partition, bucket in buckets:
                write.compact(partition, bucket, True)
            messages = write.prepareCommit(True, identifier)
        finally:
            write.close()
            spill.close()
        before = after = 0
        for message in messages:
            increment = message.compactIncrement()
            before += increment.compactBefore().size()
            after += increment.compactAfter().size()
        return Compaction(messages, identifier, _int(watermark), len(buckets), before, after)

    def _bucket_entries(self, snapshot: Any) -> Iterator[tuple[Any, int]]:
        for entry in self._table.newSnapshotReader().withSnapshot(snapshot).bucketEntries():
            yield entry.partition(), int(entry.bucket())

    def commit(self, compaction: Compaction) -> int | None:
        """Commit ``compaction`` as one COMPACT snapshot carrying its watermark; that
        snapshot's id (None: nothing to commit)."""
        if compaction.files_compacted == 0 and compaction.files_written == 0:
            return None  # every bucket was compact already: Paimon would commit nothing
        committable = self._paimon.manifest.ManifestCommittable(
            compaction.identifier, _java_long(self._jvm, compaction.watermark)
        )
        for message in compaction.messages:
            committable.addFileCommittable(message)
        committing = self._table.copy(_java_map(self._jvm, _COMMIT_OPTIONS))
        commit = committing.newCommit(COMMIT_USER).ignoreEmptyCommit(True)
        try:
            with publishing(str(self._table.location().toString())):  # ingest publishes too
                commit.commit(committable)
        except Py4JJavaError as error:
            raise PaimonCompactionCommitError(
                f"the compaction of Paimon table {self.identifier} could not be committed "
                f"({first_line(error.java_exception.toString())}); nothing of it is in the "
                "table, and the next pass compacts again"
            ) from error
        finally:
            commit.close()
        return self._own_snapshot(compaction.identifier)

    def _own_snapshot(self, identifier: int) -> int:
        manager = self._table.snapshotManager()
        snapshot = manager.latestSnapshot()
        while snapshot is not None:
            if snapshot.commitUser() == COMMIT_USER and snapshot.commitIdentifier() == identifier:
                return int(snapshot.id())
            snapshot = _snapshot_or_none(manager, snapshot.id() - 1)
        raise RuntimeError(f"{self.identifier}: the compaction just committed is not there")

    def expire(self, keep_from: int | None) -> tuple[int, int | None]:
        """Expire what the table's retention lets go, below ``keep_from`` and below the newest
        snapshot with Tidemark's progress; (how many expired, the earliest snapshot kept)."""
        manager = self._table.snapshotManager()
        latest, earliest = _int(manager.latestSnapshotId()), _int(manager.earliestSnapshotId())
        if latest is None or earliest is None:
            return 0, None
        config = self._table.coreOptions().expireConfig()
        retention = Retention(
            earliest=earliest,
            latest=latest,
            retain_min=int(config.getSnapshotRetainMin()),
            retain_max=int(config.getSnapshotRetainMax()),
            older_than_ms=int(time.time() * 1000) - int(config.getSnapshotTimeRetain().toMillis()),
            consumer_next=self._consumers_next(),
            keep_from=keep_from,
            progress=self._newest_progress(latest, earliest),
        )
        end = retention.end_exclusive(self._committed_at)
        expire = self._table.newExpireSnapshots().config(config)
        # ``snapshot.expire.limit`` bounds one call, as in Paimon's own expiry after each
        # commit; a pass follows many commits, so it goes on until ``end``, a limit at a time
        step, expired, first = max(1, int(config.getSnapshotMaxDeletes())), 0, earliest
        while first < end:
            until = min(end, first + step)
            expired += int(expire.expireUntil(first, until))
            first = until
        return expired, max(end, earliest)

    def _consumers_next(self) -> int | None:
        found = self._table.consumerManager().minNextSnapshot()
        return int(found.get()) if found.isPresent() else None

    def _committed_at(self, snapshot_id: int) -> int | None:
        snapshot = _snapshot_or_none(self._table.snapshotManager(), snapshot_id)
        return None if snapshot is None else int(snapshot.timeMillis())

    def _newest_progress(self, latest: int, earliest: int) -> int | None:
        manager = self._table.snapshotManager()
        for snapshot_id in range(latest, earliest - 1, -1):
            snapshot = _snapshot_or_none(manager, snapshot_id)
            properties = None if snapshot is None else snapshot.properties()
            if properties is not None and properties.containsKey(SummaryKey.POSITION.value):
                return snapshot_id
        return None


@dataclass(frozen=True)
class Retention:
    """What bounds expiry: the table's retention options, as Paimon's
    ``ExpireSnapshotsImpl.expire`` reads them, and Tidemark's two floors."""

    earliest: int
    latest: int
    #: ``snapshot.num-retained.min``/``.max``
    retain_min: int
    retain_max: int
    #: ``snapshot.time-retained`` ago: younger snapshots stay, unless ``retain_max`` says
    older_than_ms: int
    #: the oldest snapshot a Paimon consumer still reads (None: no consumer)
    consumer_next: int | None
    #: the oldest snapshot a pending window reads
    keep_from: int | None
    #: the newest snapshot carrying ``tidemark.position``: ingest resumes from it
    progress: int | None

    def end_exclusive(self, committed_at: Callable[[int], int | None]) -> int:
        """The snapshots below the returned id may be expired; ``committed_at(id)`` is when
        snapshot ``id`` was committed (None: it is gone)."""
        floors = [self.consumer_next, self.keep_from, self.progress]
        end = min([self.latest - self.retain_min + 1, *(f for f in floors if f is not None)])
        # as Paimon: snapshots beyond ``num-retained.max`` go whatever their age, and the first
        # young enough one after them stays with all that follow
        for snapshot_id in range(max(self.latest - self.retain_max + 1, self.earliest), end):
            at = committed_at(snapshot_id)
            if at is not None and at >= self.older_than_ms:
                return snapshot_id
        return end


@contextmanager
def open_paimon_table(
    spark: SparkSession, catalog_options: Mapping[str, str], identifier: str
) -> Iterator[PaimonJavaTable]:
    """Paimon table ``identifier`` through the Java catalog ``catalog_options`` describe."""
    jvm = require_paimon(spark, identifier)
    paimon = jvm.org.apache.paimon
    options = paimon.options.Options.fromMap(_java_map(jvm, catalog_options))
    catalog = paimon.catalog.CatalogFactory.createCatalog(
        paimon.catalog.CatalogContext.create(options)
    )
    try:
        table = catalog.getTable(paimon.catalog.Identifier.fromString(identifier))
        with tempfile.TemporaryDirectory(prefix="tidemark-paimon-") as spill:
            yield PaimonJavaTable(jvm, table, identifier, spill)
    finally:
        catalog.close()


def _snapshot_or_none(manager: Any, snapshot_id: int) -> Any:
    return manager.snapshot(snapshot_id) if manager.snapshotExists(snapshot_id) else None


def _java_map(jvm: Any, values: Mapping[str, str]) -> Any:
    java = jvm.java.util.HashMap()
    for key, value in values.items():
        java.put(key, value)
    return java


def _java_long(jvm: Any, value: int | None) -> Any:
    return None if value is None else jvm.java.lang.Long.valueOf(str(value))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
