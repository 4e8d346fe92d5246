"""One writer per changelog table: a commit whose base moved is applied again only if no other
Tidemark writer committed in between.

Every changelog commit of Tidemark carries its progress (``tidemark.position`` and the rest,
``TableProgress``) in its snapshot summary; maintenance's commits (compactions, expiries) carry
none. So when a commit finds the table changed under it, the newest snapshot with progress
tells who changed it: still the one this writer based its batch on, and it was maintenance,
whose work the batch can simply go on top of; another one, and a second ingest is writing the
same pipeline, and applying the batch again would repeat changes (issue 28: two processes
turned 249 changes into 498 rows through PyIceberg's automatic retry).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pyiceberg.table import Table, TableMetadata
from pyiceberg.table.snapshots import Snapshot, ancestors_of

from ingest.errors import IngestError
from tidemark.contracts.instance import WRITER_KEY
from tidemark.contracts.progress import TableProgress
from tidemark.errors import TerminalError


class ConcurrentWriterError(IngestError, TerminalError):
    """Another writer appended changes to a changelog table since this one last committed.
    Terminal when it reaches the user (``ingest.service`` gives up after a few in a row: two
    pipelines write the same tables), so ``tidemark run`` does not start ingest again."""


def newest_progress_snapshot(metadata: TableMetadata) -> Snapshot | None:
    """The newest snapshot on the table's main branch that carries Tidemark progress."""
    current = metadata.current_snapshot()
    if current is None:
        return None
    for snapshot in ancestors_of(current, metadata):
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        if TableProgress.from_summary(summary) is not None:
            return snapshot
    return None


def newest_progress_id(metadata: TableMetadata) -> int | None:
    snapshot = newest_progress_snapshot(metadata)
    return None if snapshot is None else snapshot.snapshot_id


def check_no_other_writer(table: Table, follows: int | None) -> None:
    """Raise ``ConcurrentWriterError`` unless the newest progress in ``table``'s (refreshed)
    metadata is still the snapshot ``follows``, the one this writer's batch follows."""
    newest = newest_progress_snapshot(table.metadata)
    if (newest.snapshot_id if newest else None) == follows:
        return
    summary = newest.summary.additional_properties if newest and newest.summary else {}
    progress = TableProgress.from_summary(summary)
    writer = summary.get(WRITER_KEY, "a Tidemark older than the lease")
    raise ConcurrentWriterError(
        f"another writer ({writer}) committed to {'.'.join(table.name())} since this process "
        f"last did (snapshot {newest.snapshot_id if newest else None}, binlog position "
        f"{progress.position if progress else None}). Nothing of this batch was committed: "
        "this process reads the table's progress again when it is next active. If this "
        "repeats, two pipelines write the same tables: give them different sink tables, or "
        "one pipeline.name and one catalog, so that one waits for the other."
    )


def writer_fence(table: Table) -> Callable[[], None]:
    """What a commit to ``table`` asks before it is tried again on top of a commit that came in
    between (``tidemark.lake``'s ``before_retry``): ``check_no_other_writer`` against the
    progress the table holds now, the one the commit's batch follows."""
    return functools.partial(check_no_other_writer, table, newest_progress_id(table.metadata))
