"""The commit report ingest publishes to Kafka after each changelog commit, and the scheduler reads.

Change a field and every consumer of an existing topic breaks: add optional fields, never rename.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tidemark.errors import TerminalError

COMMIT_REPORT_VERSION = "1.3"


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

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, payload: bytes) -> CommitReport:
        """Parse a report, refusing one from a newer major version than this reader knows."""
        try:
            raw: Any = json.loads(payload)
        except ValueError as error:
            raise TerminalError(f"commit report is not JSON: {error}") from error
        version = str(raw.get("version", "")) if isinstance(raw, dict) else ""
        major = version.split(".", 1)[0]
        if not major.isdigit():
            raise TerminalError(f"commit report has no valid 'version' field: {version!r}")
        if int(major) > int(COMMIT_REPORT_VERSION.split(".", 1)[0]):
            raise TerminalError(
                f"commit report version {version} is newer than this Tidemark understands "
                f"({COMMIT_REPORT_VERSION}); upgrade the scheduler before the ingest"
            )
        try:
            return cls.model_validate(raw)
        except ValidationError as error:
            raise TerminalError(f"commit report is malformed: {error}") from error
