"""A table's Parquet files read by Arrow in one scan, for the merges without Spark.

PyIceberg reads a scan file by file, with Python at each: a schema conversion, the filter
bound and translated, the projection visited, a task on its thread pool. A window's range is
one small file per ingest commit (until maintenance compacts them), so a merge of a busy
table reads tens of files and spent most of its time there (issue 25). When every file of a
scan was written with the table's current columns (the same names and field ids, which is
what a scan of one structure finds), Arrow's own dataset reads them all at once, and the
reader hands back the same columns PyIceberg would. Otherwise (a file from before a rename or
an added column, a file system PyIceberg reaches by another library) it answers None and the
caller reads through PyIceberg.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.dataset as ds
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO, schema_to_pyarrow
from pyiceberg.manifest import FileFormat
from pyiceberg.schema import Schema

_FIELD_ID = b"PARQUET:field_id"


def read_same_structure(
    io: FileIO,
    schema: Schema,
    files: Sequence[tuple[str, FileFormat]],
    columns: list[str],
    row_filter: ds.Expression | None = None,
) -> list[pa.Table] | None:
    """``columns`` of each file (``(path, format)``; rows in file order, no deletes applied,
    ``row_filter`` applied if given), typed as PyIceberg reads ``schema``; None when a file's
    columns are not ``schema``'s (by name and field id) or the files are not Parquet files
    Arrow reads itself."""
    if not isinstance(io, PyArrowFileIO) or not files:
        return None if files else []
    if any(file_format != FileFormat.PARQUET for _, file_format in files):
        return None
    wanted = {field.name: field.field_id for field in schema.fields}
    if any(name not in wanted for name in columns):
        return None
    types = schema_to_pyarrow(schema.select(*columns), include_field_ids=False)
    target = pa.schema([pa.field(name, types.field(name).type) for name in columns])
    scheme, netloc, _ = PyArrowFileIO.parse_location(files[0][0])
    filesystem = io.fs_by_scheme(scheme, netloc)
    parquet = ds.ParquetFileFormat()
    tables = []
    for location, _ in files:
        file_scheme, file_netloc, path = PyArrowFileIO.parse_location(location)
        if (file_scheme, file_netloc) != (scheme, netloc):
            return None
        fragment = parquet.make_fragment(path, filesystem=filesystem)
        ids = {
            field.name: int(field.metadata[_FIELD_ID])
            for field in fragment.physical_schema
            if field.metadata and _FIELD_ID in field.metadata
        }
        if any(ids.get(name) != wanted[name] for name in columns):
            return None
        read = fragment.to_table(columns=columns, filter=row_filter)
        tables.append(read.cast(target))
    return tables
