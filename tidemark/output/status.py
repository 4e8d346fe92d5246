"""``tidemark status`` (and the demo's live view): per sink table its watermark, lag, rows, late
changes and errors; then, when the pipeline publishes reports, per mirror and job its windows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tidemark.pipeline import PipelineStatus


def status_lines(status: PipelineStatus, now: datetime) -> list[str]:
    lines = [
        f"{'sink table':<32} {'watermark':<29} {'lag':>9} {'rows':>10} {'late':>6} {'errors':>7}  "
        "position"
    ]
    for table in status.tables:
        if table.progress is None:
            state = "no changelog table yet" if not table.exists else "no commits yet"
            lines.append(f"{table.sink:<32} {state}")
            continue
        waiting = table.state()
        if waiting is not None:
            lines.append(f"{table.sink:<32} {waiting}")
            continue
        lag = table.watermark_lag_seconds(now)
        watermark = datetime.fromtimestamp(table.progress.watermark_ms / 1000, UTC)
        lines.append(
            f"{table.sink:<32} {watermark.isoformat(timespec='milliseconds'):<29} "
            f"{_seconds(lag):>9} {table.total_rows or 0:>10} {table.progress.late_rows:>6} "
            f"{table.errors:>7}  "
            f"{table.progress.position}"
        )
    if status.scheduled:
        lines += ["", *_windows(status)]
    return lines


def _windows(status: PipelineStatus) -> list[str]:
    """Per mirror and job: the last window done, the next one, and why it waits."""
    if status.windows is None:
        return ["windows: no scheduler has run for this pipeline yet (tidemark schedule FILE)"]
    lines = [f"{'task':<40} {'last window done':<22} {'next window':<22} state"]
    for row in status.windows:
        done = row.last_succeeded.end.strftime("%Y-%m-%d %H:%M") if row.last_succeeded else "-"
        upcoming = row.next_window.end.strftime("%Y-%m-%d %H:%M") if row.next_window else "-"
        lines.append(f"{str(row.task):<40} {done:<22} {upcoming:<22} {row.condition}: {row.reason}")
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
