"""The window gate decides from recorded watermarks alone which windows run, in which order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from scheduler.gate import (
    Decision,
    ReportRecord,
    RunState,
    TableState,
    TaskSpec,
    TaskState,
    WindowRun,
    cuts_since,
    decide,
    job_task,
    mirror_task,
)
from tidemark.windows import Window, WindowTask

FIVE = timedelta(minutes=5)
HOUR = timedelta(hours=1)
DAY = "2026-01-01"


def at(clock: str) -> datetime:
    """An instant on the test day: ``at("10:05")`` or ``at("10:04:58")``."""
    return datetime.fromisoformat(f"{DAY}T{clock}").replace(tzinfo=UTC)


def ms(clock: str) -> int:
    return int(at(clock).timestamp() * 1000)


def window(end: str, length: timedelta = FIVE) -> Window:
    return Window.ending_at(at(end), length)


def table(*reports: tuple[str, int] | tuple[str, int, bool]) -> TableState:
    """A table from (watermark, last_order[, partial]) reports, snapshot ids in order."""
    records = []
    for snapshot_id, report in enumerate(reports, start=1):
        partial = report[2] if len(report) == 3 else False
        records.append(ReportRecord(snapshot_id, ms(report[0]), report[1], partial))
    return TableState.from_reports(records)


def mirrors(*sinks: str) -> list[TaskSpec]:
    return [TaskSpec(mirror_task(sink), (sink,), FIVE) for sink in sinks]


def done(end: str) -> TaskState:
    return TaskState(done_end=at(end))


def fired(decision: Decision) -> list[tuple[str, str]]:
    return [(str(d.task), d.window.end.strftime("%H:%M")) for d in decision.due]


def run_to_completion(
    specs: Sequence[TaskSpec],
    tables: Mapping[str, TableState],
    now: datetime,
    start: Mapping[WindowTask, TaskState] | None = None,
) -> list[tuple[str, str]]:
    """Tick until nothing is due, every window succeeding at once: the order things ran in."""
    tasks = dict(start or {})
    history: list[tuple[str, str]] = []
    for _ in range(1000):
        decision = decide(specs, tables, tasks, now)
        if not decision.due:
            return history
        history += fired(decision)
        for due in decision.due:
            tasks[due.task] = TaskState(done_end=due.window.end)
    raise AssertionError("the gate never settled")


def test_a_window_fires_once_every_input_watermark_reaches_its_end() -> None:
    tables = {
        "shop.orders": table(("10:01", 1), ("10:05:00", 7)),
        "shop.users": table(("10:02", 1), ("10:04:59.999", 3)),
    }
    tasks = {mirror_task("shop.orders"): done("10:00"), mirror_task("shop.users"): done("10:00")}

    decision = decide(mirrors("shop.orders", "shop.users"), tables, tasks, at("10:06"))

    assert fired(decision) == [("mirror:shop.orders", "10:05")]
    assert [w.reason for w in decision.waiting] == [
        "waiting for shop.users watermark 2026-01-01 10:04:59 < 2026-01-01 10:05:00"
    ]


def test_the_merge_cut_is_the_earliest_complete_report_at_or_past_the_window_end() -> None:
    tables = {"shop.orders": table(("10:04", 5), ("10:05:02", 9), ("10:05:30", 12))}
    tasks = {mirror_task("shop.orders"): done("10:00")}

    (due,) = decide(mirrors("shop.orders"), tables, tasks, at("10:06")).due

    assert (due.window, due.up_to_order, due.attempt) == (window("10:05"), 9, 1)


def test_a_commit_is_complete_to_every_earlier_commits_watermark() -> None:
    # a watermark report took commit 1 to 10:10; after a restart ingest re-read from an older
    # position, and commit 2 (rows that committed at 10:10:30) carries only 10:08
    tables = {"shop.orders": table(("10:10", 5), ("10:08", 7), ("10:11", 9))}
    tasks = {mirror_task("shop.orders"): done("10:00")}

    (due,) = decide(mirrors("shop.orders"), tables, tasks, at("10:12")).due

    # commit 1 already held everything before 10:05: commit 2's rows belong to later windows
    assert (due.window, due.up_to_order) == (window("10:05"), 5)


def test_merge_cuts_need_only_the_reports_from_the_earliest_next_window_end_on() -> None:
    specs = mirrors("shop.orders", "shop.users")
    tasks = {mirror_task("shop.orders"): done("10:00"), mirror_task("shop.users"): done("10:05")}
    since = cuts_since(specs, tasks)
    reports = [("10:01", 3), ("10:04", 5), ("10:10", 7), ("10:08", 8), ("10:11", 9)]

    kept = table(*[report for report in reports if ms(report[0]) >= since])

    assert since == ms("10:05")
    assert kept.cut(at("10:05")) == table(*reports).cut(at("10:05")) == 7
    assert cuts_since(specs + mirrors("shop.new"), tasks) == 0  # a first window: all reports


def test_the_first_window_ends_at_the_first_boundary_after_the_first_watermark() -> None:
    tables = {"shop.orders": table(("10:02:10", 1), ("10:13", 4))}

    assert run_to_completion(mirrors("shop.orders"), tables, at("10:14")) == [
        ("mirror:shop.orders", "10:05"),
        ("mirror:shop.orders", "10:10"),
    ]


def test_reports_without_a_watermark_yet_do_not_start_the_first_window_in_1970() -> None:
    # a bootstrap commits with watermark 0 until the stream has made the table consistent
    bootstrapping = [ReportRecord(1, 0, 100, False), ReportRecord(2, 0, 200, False)]
    streaming = [
        ReportRecord(3, ms("10:02:10"), 210, False),
        ReportRecord(4, ms("10:06"), 220, False),
    ]
    tables = {"shop.orders": TableState.from_reports(bootstrapping + streaming)}

    assert run_to_completion(mirrors("shop.orders"), tables, at("10:07")) == [
        ("mirror:shop.orders", "10:05")
    ]


def test_a_quiet_table_advancing_through_heartbeats_does_not_block() -> None:
    # no rows since 09:00, but ingest's idle commits keep promising completeness
    quiet = table(("09:00", 40), ("10:00:10", 40), ("10:05:10", 40), ("10:10:10", 40))
    busy = table(("10:00:01", 1), ("10:11", 900))
    job = TaskSpec(job_task("gmv"), ("shop.orders", "shop.users"), FIVE)
    specs = [*mirrors("shop.orders", "shop.users"), job]
    tasks = {
        mirror_task("shop.orders"): done("10:00"),
        mirror_task("shop.users"): done("10:00"),
        job.task: done("10:00"),
    }

    order: list[tuple[str, str]] = []
    for _ in range(10):
        decision = decide(specs, {"shop.orders": busy, "shop.users": quiet}, tasks, at("10:12"))
        order += fired(decision)
        for due in decision.due:
            tasks[due.task] = TaskState(done_end=due.window.end)

    assert ("job:gmv", "10:10") in order
    assert decide(specs, {"shop.orders": busy, "shop.users": quiet}, tasks, at("10:12")).due == ()


def test_missed_windows_run_one_by_one_in_order_after_downtime() -> None:
    tables = {"shop.orders": table(("09:59", 1), ("10:21", 50))}
    tasks = {mirror_task("shop.orders"): done("10:00")}

    first = decide(mirrors("shop.orders"), tables, tasks, at("10:30"))
    assert fired(first) == [("mirror:shop.orders", "10:05")]

    assert run_to_completion(mirrors("shop.orders"), tables, at("10:30"), tasks) == [
        ("mirror:shop.orders", "10:05"),
        ("mirror:shop.orders", "10:10"),
        ("mirror:shop.orders", "10:15"),
        ("mirror:shop.orders", "10:20"),
    ]


def test_partial_reports_never_open_a_window() -> None:
    # the first rows of a huge transaction are committed, its watermark would be 10:06
    tables = {"shop.orders": table(("10:04", 5), ("10:06", 900, True), ("10:07", 950, True))}
    tasks = {mirror_task("shop.orders"): done("10:00")}

    decision = decide(mirrors("shop.orders"), tables, tasks, at("10:08"))

    assert decision.due == ()
    assert decision.waiting[0].reason.startswith("waiting for shop.orders watermark")


def test_jobs_sharing_a_table_at_5_min_and_1_h_each_read_the_mirror_cut_at_their_end() -> None:
    orders = table(("09:58", 1), ("11:12", 500))
    five = TaskSpec(job_task("every_5_min"), ("shop.orders",), FIVE)
    hourly = TaskSpec(job_task("hourly"), ("shop.orders",), HOUR)
    specs = [*mirrors("shop.orders"), five, hourly]

    tasks: dict[WindowTask, TaskState] = {}
    mirror_at: datetime | None = None
    runs: list[tuple[str, str, datetime | None]] = []
    for _ in range(100):
        decision = decide(specs, {"shop.orders": orders}, tasks, at("11:15"))
        if not decision.due:
            break
        # one tick may fire a job and nothing on its table, or a merge and no job of it
        kinds = {d.task.kind for d in decision.due}
        assert len(kinds) == 1, fired(decision)
        for due in decision.due:
            runs.append((str(due.task), due.window.end.strftime("%H:%M"), mirror_at))
            tasks[due.task] = TaskState(done_end=due.window.end)
            if due.task == mirror_task("shop.orders"):
                mirror_at = due.window.end

    jobs = [(task, end, cut) for task, end, cut in runs if task.startswith("job:")]
    # every job window ran with the mirror merged exactly to its end
    assert jobs and all(cut == at(end) for _task, end, cut in jobs), jobs
    assert [end for task, end, _ in jobs if task == "job:hourly"] == ["10:00", "11:00"]
    assert [end for task, end, _ in jobs if task == "job:every_5_min"] == five_minute_ends(
        "10:00", "11:10"
    )
    assert mirror_at == at("11:10")


def five_minute_ends(first: str, last: str) -> list[str]:
    ends, instant = [], at(first)
    while instant <= at(last):
        ends.append(instant.strftime("%H:%M"))
        instant += FIVE
    return ends


def test_a_held_job_holds_its_input_mirror_at_the_cut_it_needs() -> None:
    orders = table(("09:58", 1), ("10:30", 500))
    job = TaskSpec(job_task("gmv"), ("shop.orders",), FIVE)
    held = WindowRun(job.task, window("10:10"), RunState.FAILED, 3, None, "boom", None)
    tasks = {mirror_task("shop.orders"): done("10:10"), job.task: TaskState(at("10:05"), held)}

    decision = decide([*mirrors("shop.orders"), job], {"shop.orders": orders}, tasks, at("11:00"))

    assert decision.due == ()
    reasons = {str(w.task): w.reason for w in decision.waiting}
    assert reasons["job:gmv"] == "held after 3 failed attempt(s): boom"
    assert reasons["mirror:shop.orders"].startswith("waiting for job:gmv to finish")


def test_a_failed_window_is_retried_at_its_retry_time_with_the_same_cut() -> None:
    orders = table(("09:58", 1), ("10:30", 500))
    failed = WindowRun(
        mirror_task("shop.orders"), window("10:05"), RunState.FAILED, 1, 77, "boom", at("10:32")
    )
    tasks = {mirror_task("shop.orders"): TaskState(at("10:00"), failed)}

    assert decide(mirrors("shop.orders"), {"shop.orders": orders}, tasks, at("10:31")).due == ()
    (due,) = decide(mirrors("shop.orders"), {"shop.orders": orders}, tasks, at("10:32")).due
    assert (due.window, due.up_to_order, due.attempt) == (window("10:05"), 77, 2)


def test_a_window_left_running_by_a_stopped_scheduler_runs_again() -> None:
    orders = table(("09:58", 1), ("10:30", 500))
    running = WindowRun(mirror_task("shop.orders"), window("10:05"), RunState.RUNNING, 1, 42)
    tasks = {mirror_task("shop.orders"): TaskState(at("10:00"), running)}

    (due,) = decide(mirrors("shop.orders"), {"shop.orders": orders}, tasks, at("10:31")).due
    assert (due.window, due.up_to_order, due.attempt) == (window("10:05"), 42, 2)
    in_flight = frozenset({mirror_task("shop.orders")})
    assert (
        decide(mirrors("shop.orders"), {"shop.orders": orders}, tasks, at("10:31"), in_flight).due
        == ()
    )


def test_a_job_added_later_starts_at_the_mirror_it_finds_not_at_the_first_watermark() -> None:
    orders = table(("08:01", 1), ("10:30", 500))
    hourly = TaskSpec(job_task("hourly"), ("shop.orders",), HOUR)
    tasks = {mirror_task("shop.orders"): done("10:25")}

    decision = decide(
        [*mirrors("shop.orders"), hourly], {"shop.orders": orders}, tasks, at("10:31")
    )

    assert fired(decision) == [("mirror:shop.orders", "10:30")]
    waiting = {str(w.task): w for w in decision.waiting}
    assert waiting["job:hourly"].window == window("11:00", HOUR)


def test_after_a_change_of_window_length_windows_line_up_with_midnight_again() -> None:
    orders = table(("09:58", 1), ("11:00", 500))
    quarter = [TaskSpec(mirror_task("shop.orders"), ("shop.orders",), timedelta(minutes=15))]
    tasks = {mirror_task("shop.orders"): done("10:05")}  # merged every 5 min until now

    (due,) = decide(quarter, {"shop.orders": orders}, tasks, at("11:00")).due

    assert due.window.end == at("10:15")


def test_a_coalescing_job_behind_runs_the_windows_it_missed_as_one() -> None:
    gmv = TaskSpec(job_task("gmv"), ("shop.orders",), FIVE, coalesce=True)
    specs = [*mirrors("shop.orders"), gmv]
    tables = {"shop.orders": table(("10:01", 1), ("10:21", 50))}
    behind = {mirror_task("shop.orders"): done("10:05"), gmv.task: done("10:05")}

    # the mirror merges window by window up to the job's one stretched window, then the job runs
    assert run_to_completion(specs, tables, at("10:30"), behind) == [
        ("mirror:shop.orders", "10:10"),
        ("mirror:shop.orders", "10:15"),
        ("mirror:shop.orders", "10:20"),
        ("job:gmv", "10:20"),
    ]
    caught_up = {mirror_task("shop.orders"): done("10:20"), gmv.task: done("10:05")}
    (job,) = decide(specs, tables, caught_up, at("10:30")).due
    assert job.window == Window(at("10:05"), at("10:20"))


def test_a_coalescing_job_that_keeps_up_runs_one_window_at_a_time() -> None:
    gmv = TaskSpec(job_task("gmv"), ("shop.orders",), FIVE, coalesce=True)
    specs = [*mirrors("shop.orders"), gmv]
    tables = {"shop.orders": table(("10:01", 1), ("10:11", 50))}
    tasks = {mirror_task("shop.orders"): done("10:10"), gmv.task: done("10:05")}

    (job,) = decide(specs, tables, tasks, at("10:12")).due

    assert job.window == window("10:10")
