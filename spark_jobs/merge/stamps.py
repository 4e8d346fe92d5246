"""Window bookkeeping read and written from table metadata, with no Spark job.

A merge needs the mirror's newest stamp (which windows it holds) and the changelog's bound (the
order range a window applies); both are in snapshot summaries, which PyIceberg reads from the
catalog in milliseconds where a Spark query of ``<table>.snapshots`` takes about a second. A
window that brings a mirror no change needs nothing else: its stamp is committed by PyIceberg
as an empty append, so the hundreds of quiet mirrors of a large pipeline cost no Spark job
each.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

from tidemark.contracts.mirror import MirrorKey
from tidemark.errors import TerminalError
from tidemark.sinks.commits import Commit
from tidemark.sinks.iceberg import commit_of

#: the summary key Iceberg's Spark writes add to each commit; PyIceberg's commits have none
SPARK_APP_ID = "spark.app.id"


@dataclass(frozen=True)
class MirrorStamp:
    """What the mirror's newest stamped commit says it holds."""

    window_end_ms: int
    merged_order: int
    snapshot_id: int
    #: ``MirrorKey.CHANGELOG_STRUCTURE`` of the merge that made it; None before it was kept
    structure: str | None = None


def mirror_commits(mirror: Table) -> list[Commit]:
    """Every snapshot ``mirror``'s metadata lists, oldest first, as commits."""
    return sorted(map(commit_of, mirror.snapshots()), key=lambda commit: commit.committed_at_ms)


def newest_stamp(mirror: str, snapshots: Iterable[Commit]) -> MirrorStamp | None:
    """The newest stamp among ``mirror``'s snapshots; None for a mirror never committed to.

    A mirror with commits but no stamp left (expired by maintenance) is refused: merging it
    from order 0 up to an old window's bound could take keys back to older values.
    """
    snapshots = list(snapshots)
    stamped = [s for s in snapshots if MirrorKey.WINDOW_END in s.properties]
    if not stamped:
        if snapshots:
            raise TerminalError(
                f"the mirror {mirror} has commits but none carries a {MirrorKey.WINDOW_END} "
                "stamp (were they expired?), so Tidemark cannot tell which windows it holds: "
                "drop the mirror to rebuild it from the changelog, and keep the newest stamped "
                "snapshot when expiring mirror snapshots"
            )
        return None
    # stamps only grow, and compaction commits carry none: the largest window end is the newest
    newest = max(
        stamped, key=lambda s: (int(s.properties[MirrorKey.WINDOW_END]), s.committed_at_ms)
    )
    return MirrorStamp(
        window_end_ms=int(newest.properties[MirrorKey.WINDOW_END]),
        merged_order=int(newest.properties.get(MirrorKey.MERGED_ORDER, "0")),
        snapshot_id=newest.commit_id,
        structure=newest.properties.get(MirrorKey.CHANGELOG_STRUCTURE),
    )


def structure_digest(changelog: Table, mirror_options: str) -> str:
    """What a merge derives the mirror's columns, comment and properties from: the changelog's
    schema, its schema history and comment (its properties), and the mirror's options as
    configured (``mirror_options``). A merge stamps it; a window with no changes may skip the
    merge only while it is the same, since the merge would also bring the mirror's structure
    up to date."""
    described = {
        "schema": changelog.metadata.current_schema_id,
        "properties": {
            key: value
            for key, value in sorted(changelog.properties.items())
            if key.startswith("tidemark.schema.") or key == "comment"
        },
        "mirror": mirror_options,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:32]


def stamp_without_changes(mirror: Table, stamps: Mapping[str, str]) -> int:
    """Commit ``stamps`` to ``mirror`` with no rows; the new snapshot's id."""
    with mirror.transaction() as transaction:
        transaction.append(
            pa.Table.from_pylist([], schema=mirror.schema().as_arrow()),
            snapshot_properties=dict(stamps),
        )
    snapshot = mirror.current_snapshot()
    assert snapshot is not None  # an append always leaves one
    return snapshot.snapshot_id


_SPARK_TYPES: dict[type[IcebergType], str] = {
    BooleanType: "boolean",
    IntegerType: "int",
    LongType: "bigint",
    FloatType: "float",
    DoubleType: "double",
    DateType: "date",
    TimestampType: "timestamp_ntz",
    TimestamptzType: "timestamp",
    StringType: "string",
    UUIDType: "string",
    BinaryType: "binary",
    FixedType: "binary",
}


def spark_columns(schema: Schema) -> tuple[tuple[str, str], ...] | None:
    """``schema``'s columns as Spark reads them, ``(name, simpleString)``, to check that Spark
    reads the table with the schema PyIceberg loaded; None when a type is not one this knows
    (the check then never holds)."""
    columns: list[tuple[str, str]] = []
    for field in schema.fields:
        kind = field.field_type
        if isinstance(kind, DecimalType):
            columns.append((field.name, f"decimal({kind.precision},{kind.scale})"))
        elif type(kind) in _SPARK_TYPES:
            columns.append((field.name, _SPARK_TYPES[type(kind)]))
        else:
            return None
    return tuple(columns)
