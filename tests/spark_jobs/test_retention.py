"""What maintenance keeps of a table's history: pure planning, no Spark."""

from __future__ import annotations

from datetime import timedelta

import pytest

from spark_jobs.maintenance import (
    MaintenanceSettings,
    MirrorProgress,
    SnapshotInfo,
    ancestry,
    changelog_retention,
    mirror_retention,
)
from tidemark.contracts.mirror import MirrorKey
from tidemark.contracts.progress import TableProgress
from tidemark.source import BinlogPosition

NOW = 1_800_000_000_000
T0 = 1_767_225_600_000  # watermarks start here
NO_AGE = MaintenanceSettings(min_snapshot_age=timedelta(0), retain_last=1)


def tidemark_commit(index: int, *, watermark_ms: int, at_ms: int) -> SnapshotInfo:
    progress = TableProgress(BinlogPosition("binlog.000001", 4 + index), watermark_ms, index, "s")
    return SnapshotInfo(index, index - 1 if index else None, at_ms, progress.summary())


def changelog(commits: int, *, step_ms: int = 2_000) -> list[SnapshotInfo]:
    """``commits`` ingest commits, one every ``step_ms``, watermark moving with them."""
    return [
        tidemark_commit(i, watermark_ms=T0 + i * step_ms, at_ms=NOW - 3_600_000 + i * step_ms)
        for i in range(commits)
    ]


def compaction(after: SnapshotInfo, at_ms: int) -> SnapshotInfo:
    return SnapshotInfo(after.snapshot_id + 1000, after.snapshot_id, at_ms, {"operation": "x"})


def test_the_newest_progress_stays_when_a_compaction_is_current() -> None:
    chain = changelog(10)
    chain.append(compaction(chain[-1], at_ms=chain[-1].timestamp_ms + 500))

    retention = changelog_retention(chain, None, NOW, NO_AGE)

    assert retention.expire_before_ms == chain[9].timestamp_ms
    assert [s.snapshot_id for s in retention.expirable(chain, retain_last=1)] == list(range(9))
    assert "ingest's newest progress" in retention.reason


def test_a_snapshot_after_the_kept_one_with_an_earlier_clock_stays_too() -> None:
    chain = changelog(5)
    # Spark's clock runs 10 s behind ingest's: its compaction looks older than its parent.
    chain.append(compaction(chain[-1], at_ms=chain[-1].timestamp_ms - 10_000))

    retention = changelog_retention(chain, None, NOW, NO_AGE)

    assert retention.expire_before_ms == chain[-1].timestamp_ms
    assert chain[-1] not in retention.expirable(chain, retain_last=0)


def test_snapshots_that_unrun_windows_need_stay() -> None:
    chain = changelog(50)  # watermarks T0 .. T0 + 98 s
    mirror = MirrorProgress(window_end_ms=T0 + 70_000, window=timedelta(seconds=10))

    retention = changelog_retention(chain, mirror, NOW, NO_AGE)

    # windows from T0 + 60 s on: the last snapshot below that watermark (29, at T0 + 58 s) and
    # all after it stay, so the earliest snapshot reaching any later window end is unchanged
    assert retention.expire_before_ms == chain[29].timestamp_ms
    assert [s.snapshot_id for s in retention.expirable(chain, 1)] == list(range(29))
    assert "windows from" in retention.reason


def test_a_mirror_never_merged_keeps_every_changelog_snapshot() -> None:
    chain = changelog(20)
    mirror = MirrorProgress(window_end_ms=None, window=timedelta(minutes=5))

    retention = changelog_retention(chain, mirror, NOW, NO_AGE)

    assert retention.expire_before_ms is None
    assert retention.expirable(chain, 1) == []
    assert "no merged window yet" in retention.reason


def test_a_mirror_behind_the_whole_changelog_keeps_it_all() -> None:
    chain = changelog(20)
    mirror = MirrorProgress(window_end_ms=T0, window=timedelta(minutes=5))

    retention = changelog_retention(chain, mirror, NOW, NO_AGE)

    assert retention.expire_before_ms is None
    assert "need every snapshot" in retention.reason


def test_young_snapshots_stay_whatever_else_allows() -> None:
    chain = changelog(50)  # one every 2 s, the newest 1 h - 98 s ago
    settings = MaintenanceSettings(min_snapshot_age=timedelta(hours=1), retain_last=1)

    retention = changelog_retention(chain, None, NOW, settings)

    assert retention.expire_before_ms == NOW - 3_600_000
    assert [s.snapshot_id for s in retention.expirable(chain, 1)] == []
    assert "younger than" in retention.reason


def test_retain_last_keeps_the_newest_whatever_their_age() -> None:
    chain = changelog(10)
    retention = changelog_retention(chain, None, NOW, NO_AGE)

    assert retention.expirable(chain, retain_last=5) == chain[:5]


def test_a_mirror_keeps_its_newest_window_stamp() -> None:
    stamps = [
        SnapshotInfo(i, i - 1 if i else None, NOW - 60_000 + i, {MirrorKey.WINDOW_END: str(i)})
        for i in range(5)
    ]
    chain = [*stamps, compaction(stamps[-1], NOW - 1_000)]

    retention = mirror_retention(chain, NOW, NO_AGE)

    assert retention.expire_before_ms == stamps[-1].timestamp_ms
    assert retention.expirable(chain, 1) == stamps[:4]


def test_ancestry_follows_parents_from_the_current_snapshot() -> None:
    chain = changelog(4)
    rolled_back = SnapshotInfo(99, 1, NOW, {})

    assert ancestry([rolled_back, *reversed(chain)], current_id=3) == chain
    assert ancestry(chain, current_id=None) == []


@pytest.mark.parametrize("field", ["retain_last", "min_input_files", "delete_file_threshold"])
def test_settings_refuse_nonsense(field: str) -> None:
    with pytest.raises(ValueError, match=f"{field} must be at least 1, got: 0"):
        MaintenanceSettings(**{field: 0})  # type: ignore[arg-type]
