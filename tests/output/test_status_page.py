"""The status page's HTML, from pipeline pages made by hand: per table a freshness chart, per
task its windows as cells in order with the next one's reason, the newest error rows, every
value escaped; a pipeline whose state cannot be read says why. (tests/test_pipeline_end_to_end
loads the page of a live pipeline in Chromium.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

from ingest.changelog.error_table import ErrorRow
from ingest.changelog.status import TableStatus
from scheduler.gate import RunState, WindowRun
from scheduler.status import TaskCondition, TaskStatus
from tidemark.contracts.instance import Instance, LeaseHolders, Role, State
from tidemark.contracts.progress import TableProgress
from tidemark.freshness import FreshnessSample
from tidemark.output.status_page import Unavailable, status_page
from tidemark.pipeline import PipelinePage, PipelineStatus
from tidemark.source import BinlogPosition
from tidemark.windows import TaskKind, Window, WindowTask

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(hours=6)
FIVE_MINUTES = timedelta(minutes=5)
MIRROR = WindowTask(TaskKind.MIRROR, "shop.orders")
JOB = WindowTask(TaskKind.JOB, "daily_revenue")


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.text.append(data.strip())

    def having(self, attribute: str, value: str | None = None) -> list[dict[str, str | None]]:
        return [
            attrs
            for _, attrs in self.tags
            if attribute in attrs and (value is None or attrs[attribute] == value)
        ]


def _window(end_minute: int) -> Window:
    return Window.ending_at(NOW.replace(minute=0) - timedelta(minutes=end_minute), FIVE_MINUTES)


def _table(sink: str, lag_seconds: float, errors: int = 0) -> TableStatus:
    watermark_ms = int((NOW.timestamp() - lag_seconds) * 1000)
    progress = TableProgress(BinlogPosition("mysql-bin.000003", 4), watermark_ms, 9, "shop")
    return TableStatus(sink, f"{sink}_changelog", True, progress, 1, NOW, 10, errors=errors)


def _page(**changes: object) -> PipelinePage:
    tasks = [
        TaskStatus("shop", MIRROR, _window(10), _window(5), TaskCondition.WAITING, "waiting <x>"),
        TaskStatus("shop", JOB, _window(15), _window(10), TaskCondition.HELD, "held: released?"),
    ]
    runs = [
        WindowRun(MIRROR, _window(15), RunState.SUCCEEDED, 1),
        WindowRun(MIRROR, _window(10), RunState.SUCCEEDED, 1),
        WindowRun(JOB, _window(15), RunState.SUCCEEDED, 1),
        WindowRun(JOB, _window(10), RunState.FAILED, 3, last_error="division by zero"),
    ]
    active = Instance(
        role=Role.INGEST, pipeline="shop", state=State.ACTIVE, host="db-7", pid=42, since=SINCE
    )
    orders = _table("shop.orders", 12, errors=1)
    freshness = {
        "shop.orders": tuple(
            FreshnessSample(NOW - timedelta(minutes=m), orders.watermark_ms or 0)
            for m in (90, 60, 30)
        )
    }
    error = ErrorRow(
        sink="shop.orders",
        column="shipped",
        reason="a zero date in a NOT NULL column",
        value="<img src=x onerror=alert(1)>",
        event_time=NOW - timedelta(minutes=3),
        source_table="shop.orders",
        position="mysql-bin.000003:1234",
    )
    status = PipelineStatus(
        [orders, TableStatus("shop.items", "shop.items_changelog", exists=False)],
        scheduled=True,
        windows=tasks,
        ingest=LeaseHolders(active),
    )
    fields: dict[str, object] = {
        "name": "shop",
        "status": status,
        "since": SINCE,
        "freshness": freshness,
        "runs": runs,
        "errors": [error],
    }
    fields.update(changes)
    return PipelinePage(**fields)  # type: ignore[arg-type]


def _render(*pages: PipelinePage | Unavailable) -> _Elements:
    return _Elements(status_page(pages, NOW, refresh_seconds=30))


def test_each_table_has_a_freshness_chart_and_its_lag_now() -> None:
    page = _render(_page())

    [orders, items] = page.having("data-table")
    assert (orders["data-table"], items["data-table"]) == ("shop.orders", "shop.items")
    [chart] = [attrs for tag, attrs in page.tags if tag == "polyline"]
    # three samples, the lag growing through each 30-minute gap, and the present
    assert len((chart["points"] or "").split()) == 1 + 2 * 3
    assert "lag 12 s" in page.text
    assert "no changelog table yet" in page.text
    assert len(page.having("data-no-chart")) == 1


def test_each_task_shows_its_windows_in_order_then_the_next_one_with_why_it_waits() -> None:
    page = _render(_page())

    cells = [attrs["data-state"] for attrs in page.having("data-state") if "data-window" in attrs]
    # the mirror: two done, the next waiting; the job: one done, one failed for good (held)
    assert cells == ["done", "done", "waiting", "done", "held"]
    [waiting] = page.having("data-state", "waiting")
    assert waiting["title"] == f"{waiting['data-window']}: waiting <x>"
    [held] = page.having("data-state", "held")
    assert "division by zero" in (held["title"] or "")
    conditions = [attrs["data-condition"] for attrs in page.having("data-task")]
    assert conditions == ["waiting", "held"]


def test_the_newest_error_rows_are_shown_as_text_never_as_markup() -> None:
    page = _render(_page())

    assert "<img src=x onerror=alert(1)>" in page.text
    assert not [tag for tag, _ in page.tags if tag == "img"]
    assert page.having("data-error-table", "shop.orders")


def test_error_rows_older_than_the_page_s_hours_are_counted_not_shown() -> None:
    page = _render(_page(errors=[]))

    assert "1 error row(s) in all, none in the last 6.0 h." in page.text


def test_the_active_ingest_and_who_it_is_are_named() -> None:
    page = _render(_page())

    [ingest] = page.having("data-role", "ingest")
    assert ingest["data-state"] == "active"
    assert any("db-7 pid 42" in text for text in page.text)


def test_a_pipeline_that_cannot_be_read_says_why_and_the_others_still_show() -> None:
    page = _render(Unavailable("billing", "the catalog is down"), _page())

    assert [attrs["data-pipeline"] for attrs in page.having("data-pipeline")] == [
        "billing",
        "shop",
    ]
    assert "Cannot read this pipeline's state: the catalog is down" in page.text
    assert page.having("data-table", "shop.orders")


def test_a_pipeline_without_reports_says_it_has_no_windows() -> None:
    page = _page()
    unscheduled = _page(status=PipelineStatus(page.status.tables, scheduled=False, windows=None))

    assert "This pipeline publishes no commit reports, so it has no windows." in (
        _render(unscheduled).text
    )


def test_a_table_whose_stream_has_seen_no_event_yet_says_so_and_has_no_lag_to_chart() -> None:
    unseen = _table("shop.orders", lag_seconds=NOW.timestamp())  # watermark 0
    page = _page(status=PipelineStatus([unseen], scheduled=False, windows=None), freshness={})

    elements = _render(page)

    assert "waiting for the stream's first binlog event" in elements.text
    assert elements.having("data-no-chart")
