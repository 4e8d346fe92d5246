"""A mirror's window merge as far as PyIceberg alone takes it; what is left is Spark's.

``merge_in_lake`` does every step of a mirror merge that needs no Spark session: it reads the
mirror's newest stamp (a window it already holds is a no-op), finds the changelog's bound for
the window (``spark_jobs.merge.bound``), and then, by the cheapest way that is exact,

- stamps the mirror alone when the range holds no row and the structure has not moved;
- creates a new plain mirror as Spark would (``arrow_merge.create_mirror``);
- merges the range with Arrow (``arrow_merge.merge_without_spark``) when the structure is as
  the last merge left it and no transform applies.

It answers the finished ``MergeOutcome``, or a ``SparkMerge``: the range, the stamps and what
was read, for ``spark_jobs.merge.spark.merge_range`` to finish with Spark's ``MERGE``.

Requests and answers are plain frozen values, and the catalog is the only thing this keeps:
a scheduler runs these merges in worker processes of their own (``spark_jobs.merge.processes``),
because a thousand of them after each window's end, on threads, share one interpreter lock
and one core.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table

from spark_jobs.merge.arrow import create_mirror, merge_without_spark
from spark_jobs.merge.bound import ChangelogBound, bound_at_order, find_bound
from spark_jobs.merge.request import (
    KnownState,
    MergeCounts,
    MirrorSpec,
    mirror_evolution,
    mirror_properties,
)
from spark_jobs.merge.stamps import (
    mirror_commits,
    newest_stamp,
    spark_columns,
    stamp_without_changes,
    structure_digest,
)
from tidemark.contracts.mirror import MirrorKey
from tidemark.sinks.iceberg import IcebergHistory
from tidemark.windows import Window

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MergeRequest:
    """Merge ``window`` into the mirror of ``sink_table``: up to the changelog commit whose
    order is ``up_to_order`` when the caller knows it (a commit report's), else up to the
    earliest complete commit whose watermark reaches the window's end."""

    sink_table: str
    spec: MirrorSpec
    #: the changelog and the mirror as the catalog names them (``spec`` has Spark's names)
    changelog: str
    mirror: str
    window: Window
    up_to_order: int | None = None


@dataclass(frozen=True)
class MergeOutcome:
    """What one mirror merge did. ``skipped``: the mirror already held the window."""

    sink_table: str
    mirror: str
    window: Window
    skipped: bool
    previous_order: int
    merged_order: int
    changes: int = 0
    keys: int = 0
    source_watermark_ms: int | None = None
    changelog_snapshot: int | None = None
    mirror_snapshot: int | None = None
    seconds: float = 0.0
    #: the merge ran Spark jobs (``spark_jobs.merge.spark``); else PyIceberg alone committed it
    #: (``spark_jobs.merge.arrow``, or a stamp)
    by_spark: bool = False


@dataclass(frozen=True)
class SparkMerge:
    """A merge only Spark's ``MERGE`` does (``spark_jobs.merge.spark.merge_range``): the range
    ``(low, high]``, its stamps, and what was read of both tables. Nothing was written."""

    request: MergeRequest
    low: int
    high: int
    stamps: Mapping[str, str]
    bound: ChangelogBound
    known: KnownState

    def outcome(self, counts: MergeCounts) -> MergeOutcome:
        return _outcome(self.request, self.low, self.high, self.bound, counts, by_spark=True)


def merge_in_lake(lake: Catalog, request: MergeRequest) -> MergeOutcome | SparkMerge:
    """The merge of ``request`` done here, or what Spark must do (nothing written then,
    but a new plain mirror that Spark would have created the same)."""
    spec, window = request.spec, request.window
    mirror = _table(lake, request.mirror)
    state = newest_stamp(spec.mirror, mirror_commits(mirror)) if mirror else None
    merged = state.merged_order if state else 0
    if state is not None and state.window_end_ms >= window.end_ms:
        return MergeOutcome(request.sink_table, spec.mirror, window, True, merged, merged)
    changelog = _table(lake, request.changelog)
    # the bound is read from the changelog's commits alone (``tidemark.sinks``), as it would
    # be in another lake format
    commits = list(IcebergHistory(changelog).commits()) if changelog is not None else []
    if request.up_to_order is not None:
        bound = bound_at_order(spec.changelog, commits, request.up_to_order)
    else:
        bound = find_bound(spec.changelog, commits, window.end_ms)
    high = max(bound.order, merged)
    assert changelog is not None  # a bound was found in its commits
    structure = structure_digest(changelog, repr(spec))
    stamps: dict[str, str] = {
        MirrorKey.WINDOW_START: str(window.start_ms),
        MirrorKey.WINDOW_END: str(window.end_ms),
        MirrorKey.MERGED_ORDER: str(high),
        MirrorKey.SOURCE_WATERMARK: str(bound.watermark_ms),
        MirrorKey.CHANGELOG_SNAPSHOT: str(bound.commit_id),
        MirrorKey.CHANGELOG_STRUCTURE: structure,
    }
    plain = spec.projection is None and spec.filter is None
    unchanged = state is not None and state.structure == structure
    if mirror is None and plain and not spec.partitioning:
        # created as Spark would create it, or left to Spark
        mirror = _create_mirror(lake, request, changelog)
        unchanged = mirror is not None
    counts: MergeCounts | None = None
    if mirror is not None and unchanged and high == merged:
        # no row to apply and no structure to follow: the stamp alone
        counts = MergeCounts(0, 0, stamp_without_changes(mirror, stamps))
    elif mirror is not None and unchanged and plain:
        # rows to apply to a structure as the last merge left it: with Arrow if it can
        done = merge_without_spark(
            changelog,
            mirror,
            spec.key,
            low=merged,
            high=high,
            stamps=stamps,
            evolution=mirror_evolution(spec, changelog.properties),
            keep_deletes=spec.keep_deletes,
        )
        if done is not None:
            counts = MergeCounts(done.changes, done.keys, done.snapshot_id)
    if counts is not None:
        return _outcome(request, merged, high, bound, counts, by_spark=False)
    current = mirror.current_snapshot() if mirror is not None else None
    known = KnownState(
        changelog_properties=dict(changelog.properties),
        changelog_columns=spark_columns(changelog.schema()),
        mirror_snapshot=current.snapshot_id if current is not None else None,
        structure_unchanged=state is not None and state.structure == structure,
    )
    return SparkMerge(request, merged, high, stamps, bound, known)


def _outcome(
    request: MergeRequest,
    low: int,
    high: int,
    bound: ChangelogBound,
    counts: MergeCounts,
    *,
    by_spark: bool,
) -> MergeOutcome:
    return MergeOutcome(
        sink_table=request.sink_table,
        mirror=request.spec.mirror,
        window=request.window,
        skipped=False,
        previous_order=low,
        merged_order=high,
        changes=counts.changes,
        keys=counts.keys,
        source_watermark_ms=bound.watermark_ms,
        changelog_snapshot=bound.commit_id,
        mirror_snapshot=counts.snapshot_id,
        by_spark=by_spark,
    )


def _create_mirror(lake: Catalog, request: MergeRequest, changelog: Table) -> Table | None:
    spec = request.spec
    return create_mirror(
        lake,
        request.mirror,
        changelog,
        evolution=mirror_evolution(spec, changelog.properties),
        keep_deletes=spec.keep_deletes,
        # Iceberg's Java writers set the codec at creation; PyIceberg's default is the same
        properties={"write.parquet.compression-codec": "zstd", **mirror_properties(spec)},
    )


def _table(lake: Catalog, identifier: str) -> Table | None:
    """``identifier`` (``namespace.table``) as the catalog has it now; None if absent."""
    try:
        return lake.load_table(identifier)
    except NoSuchTableError:
        return None
