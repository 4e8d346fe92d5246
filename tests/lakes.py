"""Which lakes a test of the whole pipeline runs on.

Source-facing tests run on both servers (``every_source``), lake-facing ones on both storages
(``every_storage``). A test that is both would run four times; what the lake does in it does not
depend on the server, so it runs on each server on local disk and once more on S3.
"""

from __future__ import annotations

import pytest

from tidemark.stack.endpoints import SOURCE_FLAVORS

each_source_and_s3 = pytest.mark.parametrize(
    ("source", "storage"),
    [*((flavor, "local") for flavor in SOURCE_FLAVORS), ("mariadb", "s3")],
    indirect=True,
)
