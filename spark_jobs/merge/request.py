"""What a mirror merge is asked to do and what it learns on the way, without Spark.

Plain frozen values: ``spark_jobs.merge.lake`` takes and gives them across process boundaries,
and ``spark_jobs.merge.spark`` (Spark) and ``spark_jobs.merge.arrow`` (PyIceberg) both read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spark_jobs.merge.columns import MirrorColumns, mirror_columns
from tidemark.catalog import METADATA_RETENTION

#: the properties every mirror is created with: a merge writes deletes, not whole files
MERGE_ON_READ = {
    "format-version": "2",
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
}


@dataclass(frozen=True)
class MirrorSpec:
    """How one sink table's changelog becomes its mirror. Names are catalog-qualified."""

    mirror: str
    changelog: str
    key: tuple[str, ...]
    projection: str | None = None
    filter: str | None = None
    #: Spark partition transforms, e.g. ``days(created_at)``, ``bucket(8, order_no)``
    partitioning: tuple[str, ...] = ()
    keep_deletes: bool = False
    table_properties: Mapping[str, str] | None = None
    #: ``schema.change.behavior: evolve``/``try_evolve`` with ``drop.column``/``rename.column``
    #: taken by the sink: columns the source dropped leave the mirror, renamed ones are renamed
    #: (``spark_jobs.merge.columns``); otherwise both stay, as the changelog keeps them
    follow_drops: bool = False
    follow_renames: bool = False


@dataclass(frozen=True)
class MergeCounts:
    changes: int  # changelog rows in the range, truncate markers included
    keys: int  # distinct keys merged: those of the range, or of the changelog from its start
    snapshot_id: int  # the stamped mirror commit


@dataclass(frozen=True)
class KnownState:
    """What the caller read of the changelog and the mirror from the catalog just before the
    merge (``spark_jobs.window_jobs`` loads both with PyIceberg), so that the merge need not
    read it again through Spark."""

    #: the changelog's table properties (its schema history)
    changelog_properties: Mapping[str, str]
    #: the changelog's columns as Spark gives them, ``(name, simpleString)``; None: unknown
    changelog_columns: tuple[tuple[str, str], ...] | None
    #: the mirror's current snapshot
    mirror_snapshot: int | None
    #: the mirror's newest stamp carries the changelog's structure digest as it is now
    #: (``spark_jobs.merge.stamps.structure_digest``): the merge that stamped it brought the
    #: mirror's columns, defaults and comment up to this structure, so this merge need not look
    #: again
    structure_unchanged: bool


def mirror_properties(spec: MirrorSpec) -> dict[str, str]:
    """The properties a new mirror is created with: merge-on-read, metadata retention, the
    pipeline's table properties."""
    return {**MERGE_ON_READ, **METADATA_RETENTION, **(spec.table_properties or {})}


def mirror_evolution(spec: MirrorSpec, changelog_properties: Mapping[str, str]) -> MirrorColumns:
    """What the mirror follows of the source's drops, renames and added defaults."""
    found = mirror_columns(changelog_properties, spec.key)
    return MirrorColumns(
        dropped=found.dropped if spec.follow_drops else frozenset(),
        lineages=found.lineages if spec.follow_renames else (),
        defaults=found.defaults,
    )
