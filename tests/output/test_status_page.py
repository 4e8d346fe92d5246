"""The status page's HTML, from pipeline pages made by hand: per table a freshness chart, per
task its windows as cells in order with the next one's reason, the newest error rows, every
value escaped; a pipeline whose state cannot be read says why. (tests/test_pipeline_end_to_end
loads the page of a live pipeline in Chromium.)"""

from __future__ import annotations

from tests.output.pages import NOW, Elements, pipeline_page, table
from tidemark.app.output.status_page import Unavailable, status_page
from tidemark.app.pipeline import PipelinePage, PipelineStatus


def _render(*pages: PipelinePage | Unavailable) -> Elements:
    return Elements(status_page(pages, NOW, refresh_seconds=30))


def test_each_table_has_a_freshness_chart_and_its_lag_now() -> None:
    page = _render(pipeline_page())

    [orders, items] = page.having("data-table")
    assert (orders["data-table"], items["data-table"]) == ("shop.orders", "shop.items")
    [line] = [attrs for tag, attrs in page.tags if tag == "polyline"]
    # three samples 10 s behind, the lag growing through each 30-minute gap, and the present
    assert len((line["points"] or "").split()) == 1 + 2 * 3
    [chart] = [attrs for tag, attrs in page.tags if tag == "svg"]
    assert chart["aria-label"] == "lag of shop.orders, at most 30.2 min"
    assert "lag 12 s" in page.text
    assert "no changelog table yet" in page.text
    assert len(page.having("data-no-chart")) == 1


def test_each_task_shows_its_windows_in_order_then_the_next_one_with_why_it_waits() -> None:
    page = _render(pipeline_page())

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
    page = _render(pipeline_page())

    assert "<img src=x onerror=alert(1)>" in page.text
    assert not [tag for tag, _ in page.tags if tag == "img"]
    assert page.having("data-error-table", "shop.orders")
    assert "shop.orders_2026" in page.text  # the source table, of a sink's shards


def test_error_rows_older_than_the_page_s_hours_are_counted_not_shown() -> None:
    page = _render(pipeline_page(errors=[]))

    assert "1 error row(s) in all, none in the last 6.0 h." in page.text


def test_the_active_ingest_and_who_it_is_are_named() -> None:
    page = _render(pipeline_page())

    [ingest] = page.having("data-role", "ingest")
    assert ingest["data-state"] == "active"
    assert any("db-7 pid 42" in text for text in page.text)


def test_a_pipeline_that_cannot_be_read_says_why_and_the_others_still_show() -> None:
    page = _render(Unavailable("billing", "the catalog is down"), pipeline_page())

    assert [attrs["data-pipeline"] for attrs in page.having("data-pipeline")] == [
        "billing",
        "shop",
    ]
    assert "Cannot read this pipeline's state: the catalog is down" in page.text
    assert page.having("data-table", "shop.orders")


def test_a_pipeline_without_reports_says_it_has_no_windows() -> None:
    page = pipeline_page()
    unscheduled = pipeline_page(
        status=PipelineStatus(page.status.tables, scheduled=False, windows=None)
    )

    assert "This pipeline publishes no commit reports, so it has no windows." in (
        _render(unscheduled).text
    )


def test_a_table_whose_stream_has_seen_no_event_yet_says_so_and_has_no_lag_to_chart() -> None:
    unseen = table("shop.orders", lag_seconds=NOW.timestamp())  # watermark 0
    page = pipeline_page(
        status=PipelineStatus([unseen], scheduled=False, windows=None), freshness={}
    )

    elements = _render(page)

    assert "waiting for the stream's first binlog event" in elements.text
    assert elements.having("data-no-chart")


def test_a_source_that_cannot_say_who_runs_the_pipeline_leaves_only_that_unknown() -> None:
    page = _render(pipeline_page(ingest_unknown="OperationalError: Can't connect to MySQL"))

    [ingest] = page.having("data-role", "ingest")
    assert ingest["data-state"] == "unknown"
    assert any("Can't connect to MySQL" in text for text in page.text)
    assert page.having("data-table", "shop.orders")
