"""The fence around PyIceberg's internals: the only package that uses its private API.

PyIceberg's own append, commit and catalog were too slow for a changelog committing every few
seconds and for a thousand mirrors merged in the minute after a window (issue 25), so Tidemark
commits with PyIceberg's parts: its writers, its table updates, its catalog, some of them
private. Everything that touches a private name is here, written against one PyIceberg version
and refused with another at import (``version``); ``tests/test_architecture.py`` checks that no
module elsewhere imports a private PyIceberg name or uses a private PyIceberg attribute. What
the rows mean (changelog progress, fencing against a second writer, merge decisions) stays in
the stages; this package only writes what PyIceberg would.

- ``snapshots``: one snapshot producer, shaped like PyIceberg's ``_SnapshotProducer``: a fast
  append, a merge append (manifests merged in tiers, ``manifest_tiers``) and a position-delete
  overwrite, each a small subclass; ``appends.Appender`` drives the merge append for ingest.
- ``data_files``: data and position delete files written and read as PyIceberg does;
  ``manifests``: PyIceberg's Avro manifest writers with their set-up made once.
- ``transactions``: PyIceberg's transaction with its staged metadata computed once, a retry
  that asks first, and a new table's transaction without a failed load.
- ``sql_catalog``: PyIceberg's SQL catalog committing on the metadata the table holds;
  ``rest_catalog``: PyIceberg's REST catalog leaving old metadata files to the server.
- ``file_io``: PyIceberg's pyarrow FileIO sending a small S3 file in one request.

Public PyIceberg (``Catalog``, ``Table``, expressions, schemas, types) is used everywhere as
it is.
"""

from __future__ import annotations

from tidemark.lake.version import check_pyiceberg

check_pyiceberg()
