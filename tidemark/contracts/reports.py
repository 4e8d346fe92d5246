"""What ingest publishes to the report topic, and the scheduler reads: a commit report after each
changelog commit, and a watermark report now and then for the tables without changes.

Change a field and every consumer of an existing topic breaks: add optional fields, never rename.
A reader refuses a message of a newer major version than it knows, so a scheduler older than its
ingest stops with the fix rather than misread a watermark.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tidemark.errors import TerminalError

COMMIT_REPORT_VERSION = "1.4"
#: the watermark report came with 2.0: a 1.x reader cannot tell it from a malformed commit report
WATERMARK_REPORT_VERSION = "2.0"
#: the newest major version this reader understands, of either kind
READABLE_MAJOR = 2


class CommitReport(BaseModel):
    """Published to Kafka after each changelog commit, keyed by table; at least once.

    Consumers deduplicate by ``table`` and ``snapshot_id``: a report can arrive twice (it is
    republished from the table's snapshot history after a Kafka outage or a restart), and on
    first arrival reports of one table come in commit order. Fields added after 1.0 are
    optional, so readers of 1.0 reports keep working.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    version: str = COMMIT_REPORT_VERSION
    table: str = Field(description="namespace.table of the changelog table")
    snapshot_id: int
    watermark_ms: int
    position: str
    rows_added: int = Field(ge=0)
    committed_at_ms: int
    source: str | None = Field(
        default=None, description="the source the rows came from (summary tidemark.source)"
    )
    partial: bool = Field(
        default=False,
        description="the commit holds only the first rows of a transaction too large to "
        "buffer; the watermark does not move until the rest is committed",
    )
    last_order: int | None = Field(
        default=None,
        description="the last _tm_order value in the table after this commit: a window merge "
        "applies the rows with _tm_order up to it (added in 1.1)",
    )
    late_rows: int = Field(
        default=0,
        ge=0,
        description="changes the table has received, in all, that committed (by the source's "
        "clock) more than a second before a watermark it had already published: windows run "
        "before they arrived miss them (added in 1.2)",
    )
    late_from_ms: int | None = Field(
        default=None,
        description="only when this commit holds late changes: the first commit time (source "
        "clock, epoch ms) of their transactions; windows from the one holding it to the one "
        "holding late_to_ms ran without them (added in 1.3)",
    )
    late_to_ms: int | None = Field(
        default=None, description="the last commit time of this commit's late changes (1.3)"
    )
    nulled_values: dict[str, int] = Field(
        default_factory=dict,
        description="per column, how many values the table has received in all that the lake "
        "could not hold and that were stored as NULL (a zero date in a nullable column), each "
        "also a row of the table's error table (added in 1.4)",
    )

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, payload: bytes) -> CommitReport:
        """Parse a commit report, refusing a message of another kind or a newer major
        version than this reader knows."""
        report = read_report(payload)
        if not isinstance(report, CommitReport):
            raise TerminalError(f"expected a commit report, got a {report.kind} report")
        return report


class TableMark(BaseModel):
    """Where one changelog table stands in a watermark report."""

    model_config = ConfigDict(frozen=True, extra="allow")

    snapshot_id: int = Field(description="the table's last commit by ingest")
    last_order: int = Field(ge=0, description="the last _tm_order value in that commit")


class WatermarkReport(BaseModel):
    """Published by ingest every ``watermark-report-interval``: each table it names has every
    change that committed before ``watermark_ms`` in its changelog, up to the snapshot and
    ``last_order`` named; one message for all of a pipeline's tables without pending changes,
    in place of an empty commit to each (added in 2.0).

    A table's own commit reports and this message travel on different partitions, so a
    reader applies a mark only to a snapshot whose commit report it already has (the reports
    of one table arrive in commit order): a mark never stands in for a missing report."""

    model_config = ConfigDict(frozen=True, extra="allow")

    version: str = WATERMARK_REPORT_VERSION
    kind: Literal["watermark"] = "watermark"
    source: str = Field(description="the source the pipeline reads (summary tidemark.source)")
    watermark_ms: int
    position: str = Field(description="the binlog position read through when it was taken")
    published_at_ms: int
    tables: dict[str, TableMark] = Field(
        description="namespace.table of each changelog table it covers, and where it stands"
    )

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @property
    def key(self) -> str:
        """The Kafka key: no changelog table is named so (a table name has no colon)."""
        return f"watermark:{self.source}"


def read_report(payload: bytes) -> CommitReport | WatermarkReport:
    """Parse a message of the report topic, refusing one from a newer major version than this
    reader knows, or one it cannot read."""
    try:
        raw: Any = json.loads(payload)
    except ValueError as error:
        raise TerminalError(f"commit report is not JSON: {error}") from error
    version = str(raw.get("version", "")) if isinstance(raw, dict) else ""
    major = version.split(".", 1)[0]
    if not major.isdigit():
        raise TerminalError(f"commit report has no valid 'version' field: {version!r}")
    if int(major) > READABLE_MAJOR:
        raise TerminalError(
            f"commit report version {version} is newer than this Tidemark understands "
            f"({READABLE_MAJOR}.x); upgrade the scheduler before the ingest"
        )
    kind = raw.get("kind", "commit")
    model: type[CommitReport] | type[WatermarkReport]
    if kind == "commit":
        model = CommitReport
    elif kind == "watermark":
        model = WatermarkReport
    else:
        raise TerminalError(
            f"report kind {kind!r} (version {version}) is unknown to this Tidemark; "
            "upgrade the scheduler before the ingest"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise TerminalError(f"{kind} report is malformed: {error}") from error
