"""Behind a REST catalog the server keeps a table's last metadata files; the client leaves them
alone and says nothing about them."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest
from pyarrow import fs
from pyiceberg.catalog import Catalog
from pyiceberg.io.pyarrow import PyArrowFileIO

from tidemark.catalog import METADATA_RETENTION

SCHEMA = pa.schema([("id", pa.int64())])
COMMITS = 14


@pytest.mark.parametrize("storage", ["s3"], indirect=True)
def test_commits_keep_the_last_metadata_files_without_a_warning(
    catalog: Catalog, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    table = catalog.create_table(
        f"{namespace}.orders", schema=SCHEMA, properties=METADATA_RETENTION
    )

    with caplog.at_level(logging.WARNING):
        for index in range(COMMITS):
            table.append(pa.table({"id": [index]}, schema=SCHEMA))

    assert [record.getMessage() for record in caplog.records] == []
    assert isinstance(table.io, PyArrowFileIO)
    scheme, netloc, path = PyArrowFileIO.parse_location(f"{table.location()}/metadata")
    listed = table.io.fs_by_scheme(scheme, netloc).get_file_info(fs.FileSelector(path))
    kept = [info.path for info in listed if info.path.endswith(".metadata.json")]
    assert len(kept) == 1 + int(METADATA_RETENTION["write.metadata.previous-versions-max"])
