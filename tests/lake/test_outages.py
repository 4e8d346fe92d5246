"""Which errors ingest waits out (the service answers again later) and which stop it (they
stay until someone changes the configuration)."""

from __future__ import annotations

import errno

import psycopg2
import pymysql
import pytest
import requests
from pyiceberg.exceptions import (
    CommitStateUnknownException,
    ForbiddenError,
    NoSuchTableError,
    ServerError,
)
from sqlalchemy.exc import OperationalError

from ingest.binlog.reader import StreamInterruptedError
from ingest.changelog.storage_check import StorageUnreachableError
from ingest.outages import ingest_outage
from tidemark.lake.outages import lake_outage
from tidemark.lake.sql_catalog import CatalogUnavailableError
from tidemark.outages import Dependency


def _postgres(said: str) -> OperationalError:
    return OperationalError("UPDATE iceberg_tables ...", {}, psycopg2.OperationalError(said))


def _raised_from(cause: BaseException) -> RuntimeError:
    try:
        raise RuntimeError("a commit failed") from cause
    except RuntimeError as error:
        return error


@pytest.mark.parametrize(
    ("error", "dependency"),
    [
        (_postgres("server closed the connection unexpectedly"), Dependency.CATALOG),
        (_postgres("the database system is starting up"), Dependency.CATALOG),
        (CatalogUnavailableError("Connection refused"), Dependency.CATALOG),
        (requests.ConnectionError("refused"), Dependency.CATALOG),
        (ServerError("500 Internal Server Error"), Dependency.CATALOG),
        (CommitStateUnknownException("504 Gateway Timeout"), Dependency.CATALOG),
        (
            OSError(
                "When uploading object with key 'a.parquet' in bucket 'warehouse': AWS Error "
                "NETWORK_CONNECTION during PutObject operation: curlCode: 7"
            ),
            Dependency.OBJECT_STORE,
        ),
        (OSError("AWS Error SLOW_DOWN during PutObject operation"), Dependency.OBJECT_STORE),
        (OSError(errno.ENOSPC, "No space left on device"), Dependency.WAREHOUSE_DISK),
        (_raised_from(OSError(errno.ENOSPC, "No space left")), Dependency.WAREHOUSE_DISK),
    ],
    ids=lambda value: value.name if isinstance(value, Dependency) else type(value).__name__,
)
def test_a_service_that_does_not_answer_for_now_is_an_outage_of_it(
    error: BaseException, dependency: Dependency
) -> None:
    outage = lake_outage(error)
    assert outage is not None and outage.dependency is dependency


@pytest.mark.parametrize(
    "error",
    [
        _postgres('password authentication failed for user "tidemark"'),
        _postgres('database "tidemark_catalog" does not exist'),
        OSError("AWS Error ACCESS_DENIED during PutObject operation"),
        OSError("AWS Error SIGNATURE_DOES_NOT_MATCH during PutObject operation"),
        PermissionError(errno.EACCES, "Permission denied"),
        ForbiddenError("not allowed"),
        NoSuchTableError("db.t"),
        ValueError("a bug"),
    ],
    ids=lambda error: f"{type(error).__name__}: {str(error)[:30]}",
)
def test_a_refusal_or_a_bug_is_not_an_outage(error: BaseException) -> None:
    assert lake_outage(error) is None
    assert ingest_outage(error) is None


def test_the_source_gone_is_an_outage_of_the_source_but_a_refused_login_is_not() -> None:
    gone = ingest_outage(pymysql.err.OperationalError(2003, "Can't connect to MySQL server"))
    lost = ingest_outage(StreamInterruptedError("the replication connection broke"))
    assert gone is not None and gone.dependency is Dependency.SOURCE
    assert lost is not None and lost.dependency is Dependency.SOURCE
    assert ingest_outage(pymysql.err.OperationalError(1045, "Access denied for user")) is None


def test_an_error_that_names_its_own_fix_is_not_taken_for_the_outage_it_replaced() -> None:
    try:
        try:
            raise _postgres("server closed the connection unexpectedly")
        except OperationalError:
            raise ValueError("the configuration is wrong: fix it") from None
    except ValueError as error:
        replaced = error
    assert lake_outage(replaced) is None


def test_the_write_check_at_start_failing_on_a_store_that_is_down_is_an_outage_of_it() -> None:
    try:
        try:
            raise OSError("AWS Error NETWORK_CONNECTION during PutObject operation")
        except OSError as down:
            raise StorageUnreachableError("the lake's storage did not take a write") from down
    except StorageUnreachableError as error:
        unreachable = error
    outage = ingest_outage(unreachable)
    assert outage is not None and outage.dependency is Dependency.OBJECT_STORE
