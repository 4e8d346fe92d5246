"""Commit reports are versioned: readers accept their own major version and refuse newer ones."""

from __future__ import annotations

import json

import pytest

from tidemark.contracts.reports import CommitReport
from tidemark.errors import TerminalError

REPORT = CommitReport(
    table="shop.orders",
    snapshot_id=8_118_229_310_447_195_009,
    watermark_ms=1_767_225_600_000,
    position="mariadb-bin.000003:1234",
    rows_added=42,
    committed_at_ms=1_767_225_601_000,
)


def test_a_report_survives_the_round_trip_through_json() -> None:
    assert CommitReport.from_json(REPORT.to_json()) == REPORT


def test_a_minor_version_with_new_fields_is_read() -> None:
    newer = {**json.loads(REPORT.to_json()), "version": "1.7", "files_added": 3}

    assert CommitReport.from_json(json.dumps(newer).encode()).snapshot_id == REPORT.snapshot_id


def test_a_report_of_an_older_minor_version_reads_with_the_defaults_of_later_fields() -> None:
    older = {k: v for k, v in json.loads(REPORT.to_json()).items() if k != "late_rows"}

    report = CommitReport.from_json(json.dumps({**older, "version": "1.1"}).encode())

    assert (report.version, report.late_rows) == ("1.1", 0)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"version": "3.0"},
            "commit report version 3.0 is newer than this Tidemark understands (2.x); "
            "upgrade the scheduler before the ingest",
        ),
        ({"table": "t"}, "commit report has no valid 'version' field: ''"),
    ],
)
def test_a_report_this_reader_cannot_understand_is_refused(
    payload: dict[str, str], message: str
) -> None:
    with pytest.raises(TerminalError) as error:
        CommitReport.from_json(json.dumps(payload).encode())

    assert str(error.value) == message


def test_a_report_that_is_not_json_is_refused() -> None:
    with pytest.raises(TerminalError, match="commit report is not JSON"):
        CommitReport.from_json(b"\x00garbage")
