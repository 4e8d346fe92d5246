"""The demo's terminal view, drawn from frames made by hand."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from decimal import Decimal

from tidemark.demo.live_view import DemoFrame, LiveView, render
from tidemark.demo.report_rows import LatestReport, ReportRow
from tidemark.demo.workload import WorkloadCounts

_REPORT = LatestReport(
    window_start=datetime(2026, 11, 22, 15, 46),
    window_end=datetime(2026, 11, 22, 15, 47),
    rows=(ReportRow("DE", 12, Decimal("345.60")), ReportRow("FR", 3, Decimal("9.99"))),
    windows=4,
)


def _frame(elapsed_seconds: int, report: LatestReport | None = _REPORT) -> DemoFrame:
    return DemoFrame(
        elapsed=timedelta(seconds=elapsed_seconds),
        duration=timedelta(minutes=5),
        phase="streaming",
        workload=WorkloadCounts(transactions=1234, inserts=900, updates=700, deletes=50),
        status=("sink table  watermark", "demo.orders  2026-11-22T15:47:01"),
        report=report,
    )


def test_a_frame_shows_the_workload_the_status_and_the_newest_report_window() -> None:
    text = render(_frame(75))

    assert text.splitlines()[0] == "Tidemark demo  1:15 (the shoppers write for 5:00)  streaming"
    assert "1,234 transactions (900 inserts, 700 updates, 50 deletes)" in text
    assert "ADD COLUMN coupon still to come" in text
    assert "demo.orders  2026-11-22T15:47:01" in text
    assert "window [15:46, 15:47) (of 4 windows)" in text
    assert "  DE            12       345.60" in text


def test_before_the_first_window_the_report_says_so() -> None:
    assert "shop_per_window: no window yet" in render(_frame(5, report=None))


def test_in_a_terminal_every_frame_is_redrawn_in_place() -> None:
    out = io.StringIO()
    view = LiveView(out, interactive=True)

    view.show(_frame(1))
    view.show(_frame(3))

    assert out.getvalue().count("\x1b[H\x1b[J") == 2


def test_in_a_log_frames_are_written_every_interval_and_the_final_one_always() -> None:
    out = io.StringIO()
    view = LiveView(out, interactive=False, log_every=timedelta(seconds=30))

    for seconds in (0, 10, 29, 30, 45, 61):
        view.show(_frame(seconds))
    view.show(_frame(62), final=True)

    headers = [line for line in out.getvalue().splitlines() if line.startswith("Tidemark demo")]
    assert [header.split()[2] for header in headers] == ["0:00", "0:30", "1:01", "1:02"]
    assert "\x1b[" not in out.getvalue()
