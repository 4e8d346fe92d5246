"""What the scheduler keeps for the status page's freshness charts: per table and minute, the
furthest watermark its reports reached and when, whatever the report rate; pruned by age and
forgotten with the pipeline. And the newest windows of each task for the page's grid."""

from __future__ import annotations

from datetime import timedelta

from bench.workloads.shop_schedule import FIVE, ORDERS, USERS, at, ms, report, watermark_report
from scheduler.state import StateStore
from tidemark.windows import TaskKind, Window, WindowTask

ORDERS_CHANGELOG, USERS_CHANGELOG = f"{ORDERS}_changelog", f"{USERS}_changelog"


def _samples(store: StateStore, since: str = "00:00") -> list[tuple[str, str]]:
    """The orders changelog's samples as (when recorded, watermark) clock times."""
    found = store.freshness([ORDERS_CHANGELOG], at(since)).get(ORDERS_CHANGELOG, [])
    return [(f"{sample.at:%H:%M:%S}", str(sample.watermark_ms)) for sample in found]


def test_one_sample_a_minute_keeps_the_furthest_watermark_and_when_it_was_recorded(
    store: StateStore,
) -> None:
    store.record_reports([report(ORDERS, 1, "10:00:50", 1)], at("10:01:00"))
    store.record_reports([report(ORDERS, 2, "10:01:20", 2)], at("10:01:30"))
    # a watermark report takes the commit further: no change, but time has passed
    store.record_watermarks([watermark_report("10:01:40", shop_orders=(2, 2))], at("10:01:45"))
    store.record_reports([report(ORDERS, 3, "10:03:10", 3)], at("10:03:15"))

    assert _samples(store) == [
        ("10:01:45", str(ms("10:01:40"))),
        ("10:03:15", str(ms("10:03:10"))),
    ]


def test_a_commit_of_part_of_a_transaction_is_no_sample(store: StateStore) -> None:
    partial = report(ORDERS, 1, "10:00:50", 1).model_copy(update={"partial": True})

    store.record_reports([partial], at("10:01:00"))

    assert _samples(store) == []


def test_samples_since_a_time_come_with_the_newest_one_before_it(store: StateStore) -> None:
    for minute in range(5):
        clock = f"10:0{minute}:30"
        store.record_reports([report(ORDERS, minute + 1, clock, minute + 1)], at(clock))

    assert [when for when, _ in _samples(store, since="10:03")] == [
        "10:02:30",
        "10:03:30",
        "10:04:30",
    ]


def test_samples_older_than_what_is_kept_are_pruned_and_a_reset_forgets_the_rest(
    store: StateStore,
) -> None:
    store.record_reports([report(ORDERS, 1, "10:00:30", 1)], at("10:00:30"))
    store.record_reports([report(ORDERS, 2, "10:05:30", 2)], at("10:05:30"))
    store.record_reports([report(USERS, 1, "10:05:30", 1)], at("10:05:30"))

    assert store.prune_freshness(at("10:05")) == 1
    assert [when for when, _ in _samples(store)] == ["10:05:30"]

    store.forget("shop", [ORDERS_CHANGELOG])
    assert _samples(store) == []
    assert list(store.freshness([USERS_CHANGELOG], at("00:00"))) == [USERS_CHANGELOG]


def test_the_newest_windows_of_each_task_oldest_first(store: StateStore) -> None:
    mirror, job = WindowTask(TaskKind.MIRROR, "shop.orders"), WindowTask(TaskKind.JOB, "revenue")
    for task, count in ((mirror, 5), (job, 2)):
        for index in range(count):
            window = Window.ending_at(at("10:00") + FIVE * index, FIVE)
            store.mark_pending("shop", task, window, None, at("11:00"))
            store.mark_succeeded("shop", task, window, at("11:00") + timedelta(seconds=index))

    recent = store.recent_runs("shop", [mirror, job], per_task=3)

    assert [(str(run.task), f"{run.window.end:%H:%M}") for run in recent] == [
        ("job:revenue", "10:00"),
        ("job:revenue", "10:05"),
        ("mirror:shop.orders", "10:10"),
        ("mirror:shop.orders", "10:15"),
        ("mirror:shop.orders", "10:20"),
    ]
