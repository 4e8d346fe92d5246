"""``tidemark maintain``: per table what changed, and what history stays and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_jobs.maintenance import TableResult


def render(result: TableResult) -> str:
    """Two lines per table: what changed, and what history stays and why."""
    head = f"{result.table} ({result.kind})"
    if not result.exists:
        return f"{head}: no such table yet\n"
    before, after = result.files_before, result.files_after
    files = f"{before.data_files} data + {before.delete_files} delete files" if before else ""
    if result.error is not None:
        return f"{head}: {files}; FAILED: {result.error}\n"
    if after is not None and not result.dry_run:
        files += f" -> {after.data_files} + {after.delete_files}"
    verb = "would expire" if result.dry_run else "expired"
    line = (
        f"{head}: {files}; {result.snapshots_before} snapshots, {verb} {result.snapshots_expired}"
    )
    if not result.dry_run:
        line += f"; {result.compact_seconds + result.expire_seconds:.1f} s"
    return f"{line}\n    keeps: {_kept(result)}\n"


def _kept(result: TableResult) -> str:
    from tidemark.windows import from_epoch_ms

    retention = result.retention
    if retention is None:
        return "-"
    if retention.expire_before_ms is None:
        return f"every snapshot ({retention.reason})"
    since = from_epoch_ms(retention.expire_before_ms).isoformat(timespec="milliseconds")
    return f"snapshots from {since} on ({retention.reason})"
