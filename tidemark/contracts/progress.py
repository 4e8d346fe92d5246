"""What a changelog table knows about itself, stored in each commit's snapshot summary.

The rows and this record are one Iceberg commit, so after any crash a table's last commit says
exactly which source transactions it holds (docs/architecture.md#data-and-position-in-one-commit).
Keys (docs/architecture.md#changelog-snapshot-summary):

- ``tidemark.watermark``: epoch ms; every source change committed at or before it is in the table.
- ``tidemark.position``: JSON ``{"v": 1, "file", "pos", "gtid", "partial_rows"}``. ``file``/``pos``
  is a transaction boundary: every transaction that committed before it is in the table. When
  ``partial_rows`` > 0, the first ``partial_rows`` rows this table receives from the transaction
  that starts at the boundary are in too (a transaction too large to buffer is committed in
  parts). ``gtid`` is the last GTID seen before the boundary, for people and GTID-based tools.
  ``hold`` (``{"file", "pos"}``), present only after a bootstrap: the table's snapshot rows were
  read at positions up to it, so the table is consistent, and its watermark may move, only once
  the stream has passed it. ``server``, MySQL's ``server_uuid`` of the server the position is
  in (binlog positions mean nothing on another server), present once known.
- ``tidemark.source``: which source the rows came from (``host:port``).
- ``tidemark.order``: the last ``_tm_order`` value written; the next row gets the next one.
- ``tidemark.late-rows``: how many streamed changes the table has received, in all, whose event
  time was at or before the watermark it had already published (a long transaction's rows carry
  its start time; a clock step does the same): windows run before they arrived miss them.
- ``tidemark.late-range``: ``FIRST,LAST``, epoch ms, present only on a commit holding late
  changes: the first and last commit time (source clock) of its late transactions, so the
  scheduler knows which windows they belong in.
- ``tidemark.nulled-values``: JSON ``{"column": count}``, present once there is one: how many
  values, per column, the table has received in all that the lake could not hold and that were
  stored as NULL (a zero date in a nullable column); each is also a row of the error table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

from tidemark.contracts.changelog import SummaryKey
from tidemark.errors import TerminalError
from tidemark.source import BinlogPosition

ORDER_KEY = "tidemark.order"
LATE_ROWS_KEY = "tidemark.late-rows"
LATE_RANGE_KEY = "tidemark.late-range"
NULLED_KEY = "tidemark.nulled-values"
POSITION_FORMAT_VERSION = 1


@dataclass(frozen=True)
class TableProgress:
    position: BinlogPosition
    watermark_ms: int
    last_order: int
    source: str
    gtid: str | None = None
    partial_rows: int = 0
    #: the watermark stays where it is until the stream reaches this position (a bootstrap's)
    hold_until: BinlogPosition | None = None
    #: streamed changes received after the watermark had passed their event time, in all
    late_rows: int = 0
    #: this commit's late transactions: their first and last commit time, epoch ms
    late_range: tuple[int, int] | None = None
    #: values stored as NULL because the lake could not hold them, per column, in all
    nulled: tuple[tuple[str, int], ...] = ()
    #: MySQL's ``server_uuid`` of the server whose binlog ``position`` is in; None on MariaDB
    server_uuid: str | None = None

    def summary(self) -> dict[str, str]:
        position: dict[str, object] = {
            "v": POSITION_FORMAT_VERSION,
            "file": self.position.file,
            "pos": self.position.offset,
            "gtid": self.gtid,
            "partial_rows": self.partial_rows,
        }
        if self.hold_until is not None:
            position["hold"] = {"file": self.hold_until.file, "pos": self.hold_until.offset}
        if self.server_uuid is not None:
            position["server"] = self.server_uuid
        summary = {
            SummaryKey.WATERMARK: str(self.watermark_ms),
            SummaryKey.POSITION: json.dumps(position, separators=(",", ":")),
            SummaryKey.SOURCE: self.source,
            ORDER_KEY: str(self.last_order),
            LATE_ROWS_KEY: str(self.late_rows),
        }
        if self.late_range is not None:
            summary[LATE_RANGE_KEY] = f"{self.late_range[0]},{self.late_range[1]}"
        if self.nulled:
            summary[NULLED_KEY] = json.dumps(dict(self.nulled), separators=(",", ":"))
        return summary

    @classmethod
    def from_summary(cls, summary: Mapping[str, str]) -> TableProgress | None:
        """The progress a snapshot records, or None for a snapshot Tidemark did not write
        (compaction, a user's own commit)."""
        if SummaryKey.POSITION not in summary:
            return None
        try:
            position = json.loads(summary[SummaryKey.POSITION])
            version = int(position["v"])
            if version > POSITION_FORMAT_VERSION:
                raise TerminalError(
                    f"the changelog was written by a newer Tidemark (position format {version}); "
                    "upgrade Tidemark before resuming this pipeline"
                )
            hold = position.get("hold")
            return cls(
                position=BinlogPosition(str(position["file"]), int(position["pos"])),
                watermark_ms=int(summary[SummaryKey.WATERMARK]),
                last_order=int(summary[ORDER_KEY]),
                source=summary[SummaryKey.SOURCE],
                gtid=position.get("gtid"),
                partial_rows=int(position.get("partial_rows", 0)),
                hold_until=(
                    None if hold is None else BinlogPosition(str(hold["file"]), int(hold["pos"]))
                ),
                late_rows=int(summary.get(LATE_ROWS_KEY, 0)),
                late_range=_late_range(summary.get(LATE_RANGE_KEY)),
                nulled=_nulled(summary.get(NULLED_KEY)),
                server_uuid=position.get("server"),
            )
        except (KeyError, ValueError, TypeError) as error:
            raise TerminalError(
                f"a changelog snapshot has a malformed {SummaryKey.POSITION} ({error}); "
                "it was not written by Tidemark: re-bootstrap the table"
            ) from error

    def advanced(
        self,
        *,
        position: BinlogPosition,
        watermark_ms: int,
        last_order: int,
        gtid: str | None,
        partial_rows: int = 0,
        late_rows: int = 0,
        late_range: tuple[int, int] | None = None,
        nulled: Mapping[str, int] | None = None,
    ) -> TableProgress:
        """The next progress, with ``late_rows`` more late changes committed in ``late_range``
        and ``nulled`` more values stored as NULL per column: the watermark never goes
        backwards, and stays put while a bootstrap's hold is ahead of ``position``."""
        held = self.hold_until is not None and position < self.hold_until
        return replace(
            self,
            position=position,
            watermark_ms=self.watermark_ms if held else max(self.watermark_ms, watermark_ms),
            last_order=last_order,
            gtid=gtid,
            partial_rows=partial_rows,
            hold_until=self.hold_until if held else None,
            late_rows=self.late_rows + late_rows,
            late_range=late_range,
            nulled=_added(self.nulled, nulled) if nulled else self.nulled,
        )

    def with_nulled(self, more: Mapping[str, int]) -> TableProgress:
        """This progress with ``more`` values stored as NULL per column."""
        return replace(self, nulled=_added(self.nulled, more)) if more else self


def _added(
    known: tuple[tuple[str, int], ...], more: Mapping[str, int]
) -> tuple[tuple[str, int], ...]:
    counts = dict(known)
    for column, count in more.items():
        counts[column] = counts.get(column, 0) + count
    return tuple(sorted(counts.items()))


def _nulled(text: str | None) -> tuple[tuple[str, int], ...]:
    if not text:
        return ()
    return tuple(sorted((str(column), int(count)) for column, count in json.loads(text).items()))


def _late_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    first, last = text.split(",")
    return int(first), int(last)
