"""Does a mirror table equal its MySQL source? Compared page by page, never a table at once.

For every physical source table of a sink table, the source is read in primary-key pages inside
one read view (``ingest.bootstrap.snapshot_reader.ReadView``: no locks, MariaDB or MySQL) and
converted with the same type mapping ingest uses (``ingest.schema.types``); the mirror rows
with those keys are read with PyIceberg. Each row is reduced to a digest of its values in the
columns both sides have, so a page costs two small reads and a comparison. A final pass over
the mirror's keys alone finds rows the source no longer has.

The source moves on while a mirror waits for its next window, so a key that differs is checked
against the changelog: if the changelog has changes of that key after what the mirror holds
(``tidemark.merged-order``), the difference is *in flight*, not a mismatch.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import And, BooleanExpression, GreaterThan, In, Reference
from pyiceberg.expressions.literals import literal
from pyiceberg.table import Table

from ingest.bootstrap.bootstrapper import paging_key
from ingest.bootstrap.snapshot_reader import ReadView
from ingest.schema.select_values import page_converter
from tidemark.contracts.changelog import MetadataColumn
from tidemark.contracts.mirror import MIRROR_DELETED_COLUMN as DELETED_COLUMN
from tidemark.contracts.mirror import MirrorKey
from tidemark.contracts.source_tables import SourceTable
from tidemark.source import SourceConnection

logger = logging.getLogger(__name__)

Key = tuple[Any, ...]


@dataclass
class TableVerdict:
    """What verifying one mirror found."""

    mirror: str
    source_rows: int = 0
    mirror_rows: int = 0
    missing: list[Key] = field(default_factory=list)  # in the source, not in the mirror
    extra: list[Key] = field(default_factory=list)  # in the mirror, not in the source
    different: list[Key] = field(default_factory=list)
    in_flight: list[Key] = field(default_factory=list)  # changed after the mirror's window

    @property
    def mismatches(self) -> int:
        return len(self.missing) + len(self.extra) + len(self.different)


class MirrorReader(Protocol):
    """A mirror as verify reads it: pinned at one state for the whole comparison."""

    @property
    def name(self) -> str: ...

    def column_names(self) -> list[str]: ...

    def rows(self, key: Sequence[str], names: Sequence[str], keys: list[Key]) -> pa.Table:
        """``names`` of the live rows whose first key column is one of ``keys``' (more may
        come back)."""
        ...

    def keys(self, key: Sequence[str]) -> Iterable[Key]:
        """Every live row's key."""
        ...

    def changed_since(self, key: Sequence[str], suspects: list[Key]) -> set[Key]:
        """Those of ``suspects`` that the lake has newer changes of than the pinned state:
        the source moved on, and the mirror follows."""
        ...


class IcebergMirror:
    """An Iceberg mirror at its current snapshot; newer changes are in its changelog."""

    def __init__(self, mirror: Table, changelog: Table) -> None:
        self._mirror = mirror
        self._changelog = changelog
        snapshot = mirror.current_snapshot()
        self._snapshot_id = snapshot.snapshot_id if snapshot is not None else None

    @property
    def name(self) -> str:
        return ".".join(self._mirror.name())

    def column_names(self) -> list[str]:
        return [f.name for f in self._mirror.schema().fields]

    def rows(self, key: Sequence[str], names: Sequence[str], keys: list[Key]) -> pa.Table:
        if self._snapshot_id is None:
            return pa.table({})
        return self._mirror.scan(
            row_filter=_key_filter(key, keys),
            selected_fields=tuple(selected_columns(self.column_names(), names)),
            snapshot_id=self._snapshot_id,
        ).to_arrow()

    def keys(self, key: Sequence[str]) -> Iterable[Key]:
        if self._snapshot_id is None:
            return []
        rows = live_rows(
            self._mirror.scan(
                selected_fields=tuple(selected_columns(self.column_names(), key)),
                snapshot_id=self._snapshot_id,
            ).to_arrow()
        )
        return list(zip(*(rows.column(name).to_pylist() for name in key), strict=True))

    def changed_since(self, key: Sequence[str], suspects: list[Key]) -> set[Key]:
        merged = _merged_order(self._mirror)
        later = self._changelog.scan(
            row_filter=And(
                GreaterThan(term=Reference(MetadataColumn.ORDER_KEY.value), value=literal(merged)),
                _key_filter(key, suspects),
            ),
            selected_fields=tuple(key),
        ).to_arrow()
        return set(zip(*(later.column(k).to_pylist() for k in key), strict=True))


def verify_mirror(
    source: SourceConnection,
    mirror: MirrorReader,
    key: tuple[str, ...],
    sources: Sequence[SourceTable],
    *,
    page_rows: int = 10_000,
    server_time_zone: str | None = None,
    tinyint1_as_boolean: bool = True,
) -> TableVerdict:
    verdict = TableVerdict(mirror.name)
    mirror_columns = {name.lower(): name for name in mirror.column_names()}
    seen: set[Key] = set()
    for table in sources:
        names = [c.name for c in table.columns if c.name.lower() in mirror_columns]
        convert = page_converter(table, server_time_zone, tinyint1_as_boolean=tinyint1_as_boolean)
        page_key = paging_key(table) or key
        with ReadView(source) as snapshot:
            for chunk in snapshot.chunks(table, page_key, after=None, chunk_size=page_rows):
                arrays = convert(chunk.rows)
                batch = pa.table(arrays, names=[c.name for c in table.columns]).select(names)
                expected = _digests(batch, key, names)
                verdict.source_rows += len(expected)
                seen.update(expected)
                actual = _mirror_digests(mirror, key, names, list(expected))
                for row_key, digest in expected.items():
                    found = actual.get(row_key)
                    if found is None:
                        verdict.missing.append(row_key)
                    elif found != digest:
                        verdict.different.append(row_key)
    verdict.extra = [k for k in mirror.keys(key) if k not in seen]
    verdict.mirror_rows = verdict.source_rows - len(verdict.missing) + len(verdict.extra)
    _explain_in_flight(verdict, mirror, key)
    return verdict


def _digests(rows: pa.Table, key: Sequence[str], names: Sequence[str]) -> dict[Key, bytes]:
    digests = {}
    lowered = {name.lower(): name for name in rows.column_names}
    key_names = [lowered[k.lower()] for k in key]
    for row in rows.to_pylist():
        values = [repr(row[name]) for name in names]
        row_key = tuple(row[name] for name in key_names)
        digests[row_key] = hashlib.blake2b("\x1f".join(values).encode(), digest_size=16).digest()
    return digests


def _mirror_digests(
    mirror: MirrorReader, key: Sequence[str], names: Sequence[str], keys: list[Key]
) -> dict[Key, bytes]:
    if not keys:
        return {}
    rows = live_rows(mirror.rows(key, names, keys))
    if not rows.num_rows:
        return {}
    wanted = set(keys)
    return {k: d for k, d in _digests(rows, key, names).items() if k in wanted}


def selected_columns(columns: Sequence[str], names: Sequence[str]) -> list[str]:
    return list(names) + ([DELETED_COLUMN] if DELETED_COLUMN in columns else [])


def live_rows(rows: pa.Table) -> pa.Table:
    """Without the rows ``mirror.deletes: keep`` keeps for deleted source rows."""
    if DELETED_COLUMN not in rows.column_names:
        return rows
    kept = rows.filter(pc.invert(pc.fill_null(rows.column(DELETED_COLUMN), False)))
    return kept.drop_columns([DELETED_COLUMN])


def _key_filter(key: Sequence[str], keys: list[Key]) -> BooleanExpression:
    # for a composite key the first column narrows the read; the exact keys are kept later
    return In(term=Reference(key[0]), values={k[0] for k in keys})


def _explain_in_flight(verdict: TableVerdict, mirror: MirrorReader, key: Sequence[str]) -> None:
    """Move to ``in_flight`` the differing keys the lake changed after the state compared:
    the mirror follows them."""
    suspects = verdict.missing + verdict.extra + verdict.different
    if not suspects:
        return
    pending = mirror.changed_since(key, suspects) & set(suspects)
    for bucket in (verdict.missing, verdict.extra, verdict.different):
        moving = [k for k in bucket if k in pending]
        verdict.in_flight += moving
        bucket[:] = [k for k in bucket if k not in pending]


def _merged_order(mirror: Table) -> int:
    for candidate in reversed(mirror.snapshots()):
        summary = candidate.summary.additional_properties if candidate.summary else {}
        if MirrorKey.MERGED_ORDER in summary:
            return int(summary[MirrorKey.MERGED_ORDER])
    return 0
