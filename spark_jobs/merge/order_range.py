"""Which data files of a changelog may hold a ``_tm_order`` range, from manifests decoded once.

PyIceberg plans a scan by decoding every manifest of the table and evaluating each file's
statistics against the filter, in Python, at every scan. A merge without Spark plans its
changelog's range at every window, and most of the changelog's manifests are the ones the last
window decoded: manifests are never rewritten in place, so what a manifest lists is kept here
(per file its path, format and ``_tm_order`` bounds), and a plan is a loop over those. A table
with delete manifests (a changelog has none) is planned by PyIceberg instead.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass

from pyiceberg.manifest import FileFormat, ManifestContent, ManifestFile
from pyiceberg.table import Table

#: manifests whose files are kept; about 200 bytes a file
CACHED_MANIFESTS = 20_000


@dataclass(frozen=True)
class RangeFile:
    """A data file of the changelog, with the bounds of its ``_tm_order`` (None: unknown)."""

    path: str
    file_format: FileFormat
    lowest: int | None
    highest: int | None

    def may_hold(self, low: int, high: int) -> bool:
        """Whether the file may hold an order in ``(low, high]``."""
        return (self.highest is None or self.highest > low) and (
            self.lowest is None or self.lowest <= high
        )


class _ManifestFiles:
    """What each manifest lists, kept for the ``CACHED_MANIFESTS`` used last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[RangeFile, ...]] = OrderedDict()

    def files(self, table: Table, manifest: ManifestFile, field_id: int) -> tuple[RangeFile, ...]:
        key = f"{manifest.manifest_path}#{field_id}"
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        listed = tuple(
            RangeFile(
                path=entry.data_file.file_path,
                file_format=entry.data_file.file_format,
                lowest=_long((entry.data_file.lower_bounds or {}).get(field_id)),
                highest=_long((entry.data_file.upper_bounds or {}).get(field_id)),
            )
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
        )
        with self._lock:
            self._kept[key] = listed
            while len(self._kept) > CACHED_MANIFESTS:
                self._kept.popitem(last=False)
        return listed


_MANIFESTS = _ManifestFiles()


def files_in_range(table: Table, column: str, low: int, high: int) -> list[RangeFile] | None:
    """The data files of ``table``'s current snapshot whose long ``column`` may hold a value
    in ``(low, high]``; None when the table has delete files (PyIceberg must plan it)."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    field_id = table.schema().find_field(column).field_id
    found = []
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            return None
        found += [
            file for file in _MANIFESTS.files(table, manifest, field_id) if file.may_hold(low, high)
        ]
    return found


def _long(serialized: bytes | None) -> int | None:
    """An Iceberg bound of a long column: 8 bytes, little-endian."""
    if serialized is None or len(serialized) != 8:
        return None
    value: int = struct.unpack("<q", serialized)[0]
    return value
