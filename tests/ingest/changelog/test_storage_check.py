"""Before its first row ingest writes into the lake's storage once: wrong keys are said at
start with the fix, and the check leaves nothing behind."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyarrow import fs
from pyiceberg.catalog import Catalog
from pyiceberg.io.pyarrow import PyArrowFileIO

from ingest.changelog.storage_check import StorageRefusedError, check_writable
from tidemark.catalog import load_catalog
from tidemark.lake.file_io import SmallWritesFileIO
from tidemark.stack.endpoints import StackEndpoints

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.every_storage
def test_a_lake_that_takes_the_write_leaves_no_file_of_it(catalog: Catalog, namespace: str) -> None:
    table = catalog.create_table(f"{namespace}.orders", schema=SCHEMA)

    check_writable(catalog, f"{namespace}.orders")

    assert isinstance(table.io, PyArrowFileIO)
    scheme, netloc, path = PyArrowFileIO.parse_location(table.location())
    files = table.io.fs_by_scheme(scheme, netloc).get_file_info(
        fs.FileSelector(path, recursive=True, allow_not_found=True)
    )
    assert [info.path for info in files if "write-check" in info.path] == []


@pytest.mark.parametrize("storage", ["s3"], indirect=True)
def test_a_wrong_secret_key_is_refused_before_the_first_row_with_the_fix(
    catalog: Catalog, namespace: str, endpoints: StackEndpoints
) -> None:
    catalog.create_table(f"{namespace}.orders", schema=SCHEMA)
    lake = endpoints.rest_catalog
    wrong = load_catalog(lake.name, {**lake.properties(), "s3.secret-access-key": "not-the-key"})

    with pytest.raises(StorageRefusedError) as refused:
        check_writable(wrong, f"{namespace}.orders")

    said = str(refused.value)
    assert "SIGNATURE_DOES_NOT_MATCH" in said
    assert "Check the keys (catalog.properties.s3.access-key-id and s3.secret-access-key" in said
    assert "not-the-key" not in said


@pytest.mark.parametrize("storage", ["s3"], indirect=True)
def test_small_files_go_to_s3_in_one_request_where_pyarrow_can(
    catalog: Catalog, namespace: str
) -> None:
    """pyarrow otherwise starts a multipart upload on open: three requests for a file of a few
    kilobytes (``tidemark.lake.file_io``). pyarrow 19, which pypaimon caps it at, has no
    ``allow_delayed_open``: the filesystem is then left as it is, and works."""
    table = catalog.create_table(f"{namespace}.orders", schema=SCHEMA)

    assert isinstance(table.io, SmallWritesFileIO)
    scheme, netloc, _ = PyArrowFileIO.parse_location(table.location())
    _, (options,) = table.io.fs_by_scheme(scheme, netloc).__reduce__()
    assert options.get("allow_delayed_open", "not in this pyarrow") in (True, "not in this pyarrow")
    table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    assert table.scan().to_arrow().num_rows == 2
