"""Pipeline pages made by hand, for the tests of the status page and of its server, and a
reader of the HTML they render to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

from ingest.changelog.error_table import ErrorRow
from ingest.changelog.status import TableStatus
from scheduler.gate import RunState, WindowRun
from scheduler.status import TaskCondition, TaskStatus
from tidemark.app.pipeline import PipelinePage, PipelineStatus
from tidemark.contracts.instance import Instance, LeaseHolders, Role, State
from tidemark.contracts.progress import TableProgress
from tidemark.freshness import FreshnessSample
from tidemark.source import BinlogPosition
from tidemark.windows import TaskKind, Window, WindowTask

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(hours=6)
FIVE_MINUTES = timedelta(minutes=5)
MIRROR = WindowTask(TaskKind.MIRROR, "shop.orders")
JOB = WindowTask(TaskKind.JOB, "daily_revenue")


class Elements(HTMLParser):
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


def window(end_minute: int) -> Window:
    """The five minutes that ended ``end_minute`` minutes before the hour of NOW."""
    return Window.ending_at(NOW.replace(minute=0) - timedelta(minutes=end_minute), FIVE_MINUTES)


def table(sink: str, lag_seconds: float, errors: int = 0) -> TableStatus:
    """A streaming table whose watermark is ``lag_seconds`` behind NOW."""
    watermark_ms = int((NOW.timestamp() - lag_seconds) * 1000)
    progress = TableProgress(BinlogPosition("mysql-bin.000003", 4), watermark_ms, 9, "shop")
    return TableStatus(sink, f"{sink}_changelog", True, progress, 1, NOW, 10, errors=errors)


def lagging(minutes_ago: float, lag_seconds: float) -> FreshnessSample:
    """A sample ``minutes_ago`` before NOW of a watermark ``lag_seconds`` behind it."""
    at = NOW - timedelta(minutes=minutes_ago)
    return FreshnessSample(at, int((at.timestamp() - lag_seconds) * 1000))


def pipeline_page(**changes: object) -> PipelinePage:
    """Pipeline shop: orders streaming 12 s behind, sampled 90, 60 and 30 minutes ago 10 s
    behind; items without a changelog yet; the mirror waiting after two windows done, the job
    held after one; one error row; ingest active on db-7."""
    tasks = [
        TaskStatus("shop", MIRROR, window(10), window(5), TaskCondition.WAITING, "waiting <x>"),
        TaskStatus("shop", JOB, window(15), window(10), TaskCondition.HELD, "held: released?"),
    ]
    runs = [
        WindowRun(MIRROR, window(15), RunState.SUCCEEDED, 1),
        WindowRun(MIRROR, window(10), RunState.SUCCEEDED, 1),
        WindowRun(JOB, window(15), RunState.SUCCEEDED, 1),
        WindowRun(JOB, window(10), RunState.FAILED, 3, last_error="division by zero"),
    ]
    active = Instance(
        role=Role.INGEST, pipeline="shop", state=State.ACTIVE, host="db-7", pid=42, since=SINCE
    )
    error = ErrorRow(
        sink="shop.orders",
        source_table="shop.orders_2026",
        column="shipped",
        reason="a zero date in a NOT NULL column",
        value="<img src=x onerror=alert(1)>",
        event_time=NOW - timedelta(minutes=3),
        position="mysql-bin.000003:1234",
    )
    status = PipelineStatus(
        [
            table("shop.orders", 12, errors=1),
            TableStatus("shop.items", "shop.items_changelog", exists=False),
        ],
        scheduled=True,
        windows=tasks,
        ingest=LeaseHolders(active),
    )
    fields: dict[str, object] = {
        "name": "shop",
        "status": status,
        "since": SINCE,
        "freshness": {"shop.orders": tuple(lagging(m, 10) for m in (90, 60, 30))},
        "runs": runs,
        "errors": [error],
    }
    fields.update(changes)
    return PipelinePage(**fields)  # type: ignore[arg-type]
