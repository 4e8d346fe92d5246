"""The demo's terminal view, drawn from frames made by hand."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from decimal import Decimal

from rich.text import Text

from tests.output.screen import FakeTerminal, screen
from tidemark.app.demo.live_view import DemoFrame, LiveView, frame_view
from tidemark.app.demo.report_rows import LatestReport, ReportRow
from tidemark.app.demo.workload import WorkloadCounts
from tidemark.app.output.console import plain_text

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
        status=Text("sink table   watermark\ndemo.orders  2026-11-22T15:47:01"),
        report=report,
    )


def test_a_frame_shows_the_workload_the_status_and_the_newest_report_window() -> None:
    assert plain_text(frame_view(_frame(75))).splitlines() == [
        "Tidemark demo  1:15 (the shoppers write for 5:00)  streaming",
        "workload: 1,234 transactions (900 inserts, 700 updates, 50 deletes); "
        "ALTER TABLE orders ADD COLUMN coupon still to come",
        "",
        "sink table   watermark",
        "demo.orders  2026-11-22T15:47:01",
        "",
        "report demo_report.shop_per_window, window [15:46, 15:47) (of 4 windows):",
        "  country   orders      revenue",
        "  DE            12       345.60",
        "  FR             3         9.99",
    ]


def test_before_the_first_window_the_report_says_so() -> None:
    text = plain_text(frame_view(_frame(5, report=None)))

    assert text.splitlines()[-1] == "report demo_report.shop_per_window: no window yet"


def test_in_a_terminal_every_frame_is_redrawn_in_place() -> None:
    terminal = FakeTerminal()
    view = LiveView(terminal, interactive=True)

    view.show(_frame(1))
    view.show(_frame(3, report=None))

    shown = screen(terminal.getvalue())
    assert [line for line in shown if line.startswith("Tidemark demo")] == [
        "Tidemark demo  0:03 (the shoppers write for 5:00)  streaming"
    ]
    assert shown[-1] == "report demo_report.shop_per_window: no window yet"


def test_in_a_terminal_the_final_frame_stays_above_what_follows() -> None:
    terminal = FakeTerminal()
    view = LiveView(terminal, interactive=True)

    view.show(_frame(1))
    view.show(_frame(62), final=True)
    terminal.write("demo.orders: OK\n")
    view.close()

    shown = screen(terminal.getvalue())
    assert shown[0].startswith("Tidemark demo  1:02 ") and shown[-1] == "demo.orders: OK"


def test_in_a_log_frames_are_written_every_interval_and_the_final_one_always() -> None:
    out = io.StringIO()
    view = LiveView(out, interactive=False, log_every=timedelta(seconds=30))

    for seconds in (0, 10, 29, 30, 45, 61):
        view.show(_frame(seconds))
    view.show(_frame(62), final=True)

    headers = [line for line in out.getvalue().splitlines() if line.startswith("Tidemark demo")]
    assert [header.split()[2] for header in headers] == ["0:00", "0:30", "1:01", "1:02"]
    assert "\x1b[" not in out.getvalue()
    assert out.getvalue().endswith("  FR             3         9.99\n\n")
