"""Start-up checks: against each of the stack's real source servers, and table-driven for MySQL 8
facts.

The bad settings are made for real with ``SET GLOBAL`` on the shared server and put back at once,
so each window is a few milliseconds; sessions pick global values up only when they connect, and
the checks read them on a fresh connection.
"""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import pymysql
import pytest
from pydantic import SecretStr
from pymysql.constants import COMMAND

from ingest.binlog.reader import BinlogReader
from ingest.errors import StartupCheckError
from ingest.startup import checks
from ingest.startup.checks import (
    REBOOTSTRAP,
    BinaryLog,
    DumpThread,
    Flavor,
    Refused,
    Replica,
    Requirements,
    ResourceGroup,
    ServerFacts,
    ServerVersion,
    evaluate,
    gather_facts,
    run_startup_checks,
)
from tests.server_variables import global_variables
from tidemark.errors import TerminalError
from tidemark.source import BinlogPosition, SourceConnection, current_position
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    Connection: TypeAlias = pymysql.connections.Connection[pymysql.cursors.Cursor]
MakeAccount = Callable[..., SourceConnection]

pytestmark = pytest.mark.every_source

PROCESS_NOTE = (
    "binlog readers of accounts other than {0} are not visible without the PROCESS privilege; "
    "GRANT PROCESS ON *.* TO {0} to see them"
)


# -- the real servers --------------------------------------------------------------------------


@pytest.fixture
def account_name(unique_name: str) -> str:
    """The test's unique name as a user name: MySQL takes 32 characters at most."""
    return unique_name if len(unique_name) <= 32 else unique_name[:23] + unique_name[-9:]


@pytest.fixture
def make_account(source: SourceEndpoint, account_name: str) -> Iterator[MakeAccount]:
    """``make_account(*grants, server_id=...)``: a real account named ``account_name`` with
    exactly these grants."""
    user, password = account_name, "checks-password"
    admin = source.admin_source().connect()
    with admin.cursor() as cursor:
        cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, password))

    def make(*grants: str, server_id: int) -> SourceConnection:
        with admin.cursor() as cursor:
            for grant in grants:
                escaped = grant.replace("%", "%%")
                cursor.execute(f"GRANT {escaped} TO %s@'%%'", (user,))
        return SourceConnection(
            host=source.host,
            port=source.port,
            user=user,
            password=SecretStr(password),
            server_id=server_id,
        )

    yield make
    with admin.cursor() as cursor:
        cursor.execute("DROP USER %s@'%%'", (user,))
    admin.close()


#: the privilege that shows the binlog's files and position, as each server names it
MONITOR_PRIVILEGE = {"mariadb": "BINLOG MONITOR", "mysql": "REPLICATION CLIENT"}


#: the statement that lists the replicas, and the privilege it needs, on each server
REPLICAS_LISTING = {
    "mariadb": ("SHOW SLAVE HOSTS", "REPLICATION MASTER ADMIN"),
    "mysql": ("SHOW REPLICAS", "REPLICATION SLAVE"),
}


def replicas_note(source: SourceEndpoint, server_id: int, account: str) -> str:
    statement, privilege = REPLICAS_LISTING[source.flavor]
    return (
        f"server-id {server_id} could not be compared with the replicas' ids: {statement} "
        f"was refused (Access denied; you need (at least one of) the {privilege} "
        f"privilege(s) for this operation); GRANT {privilege} ON *.* TO {account} to check it"
    )


def test_the_stacks_configuration_passes(
    source: SourceEndpoint, source_database: str, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)

    result = run_startup_checks(
        cdc_source, databases=[source_database], resume=current_position(cdc_source)
    )

    assert result.problems == ()
    # the least-privilege account cannot see other replicas: said, not failed
    account = "'tidemark_cdc'@'%'"
    if source.flavor == "mariadb":  # MySQL lists the replicas to REPLICATION SLAVE
        assert result.unchecked[0] == replicas_note(source, server_id, account)
    assert result.unchecked[-1] == PROCESS_NOTE.format(account)


# another test's binlog reader, connected meanwhile, would be warned about
@pytest.mark.server_wide
def test_what_only_an_optional_grant_would_check_is_said_once_at_info_with_the_grant(
    source: SourceEndpoint,
    source_database: str,
    server_id: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cdc_source = source.cdc_source(server_id)  # the README's grants: no PROCESS
    checks._said.clear()

    with caplog.at_level(logging.INFO, logger=checks.__name__):
        for _ in range(2):  # a start, then a standby's takeover in the same process
            run_startup_checks(cdc_source, databases=[source_database])

    said = [(r.levelno, r.getMessage()) for r in caplog.records if "skipped" in r.getMessage()]
    process_note = PROCESS_NOTE.format("'tidemark_cdc'@'%'")
    assert (logging.INFO, f"Start-up check skipped (an optional privilege): {process_note}") in said
    assert len(said) == len(set(said)), "said again at the second start"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_server_and_its_version_are_read_with_sql(
    source: SourceEndpoint, server_id: int
) -> None:
    with source.cdc_source(server_id).connect() as connection:
        facts = gather_facts(connection)

    flavor, oldest = {"mariadb": (Flavor.MARIADB, (10, 5)), "mysql": (Flavor.MYSQL, (8, 4))}[
        source.flavor
    ]
    assert facts.version.flavor is flavor
    assert facts.version.at_least(*oldest)
    assert facts.account == "tidemark_cdc@%"
    assert facts.variables["server_id"] == str(source.server_id)
    assert isinstance(facts.binary_logs, tuple) and facts.binary_logs
    if source.flavor == "mariadb":  # MySQL lists the replicas to REPLICATION SLAVE
        assert facts.replicas == Refused(
            "SHOW SLAVE HOSTS",
            "Access denied; you need (at least one of) the REPLICATION MASTER ADMIN privilege(s) "
            "for this operation",
        )
    else:
        assert isinstance(facts.replicas, tuple)


BAD_SETTINGS = {
    "binlog_format": (
        "MIXED",
        "binlog_format is MIXED, must be ROW: run SET GLOBAL binlog_format = ROW and add "
        "binlog_format = ROW under [mysqld] in my.cnf; sessions already connected keep MIXED "
        "until they reconnect",
    ),
    "binlog_row_image": (
        "MINIMAL",
        "binlog_row_image is MINIMAL, must be FULL: run SET GLOBAL binlog_row_image = FULL and "
        "add binlog_row_image = FULL under [mysqld] in my.cnf; sessions already connected keep "
        "MINIMAL until they reconnect",
    ),
    "binlog_row_metadata": (
        "MINIMAL",
        "binlog_row_metadata is MINIMAL, must be FULL (binlog rows carry no column names "
        "otherwise): run SET GLOBAL binlog_row_metadata = FULL and add binlog_row_metadata = "
        "FULL under [mysqld] in my.cnf",
    ),
    "log_bin_compress": (
        "ON",
        "log_bin_compress is ON: compressed binlog events cannot be decoded and would be "
        "skipped without a trace; run SET GLOBAL log_bin_compress = OFF and add "
        "log_bin_compress = OFF under [mysqld] in my.cnf",
    ),
}


MARIADB_SETTINGS = {"log_bin_compress": "MySQL has no log_bin_compress"}


def bad_settings(source: SourceEndpoint) -> dict[str, tuple[str, str]]:
    """``BAD_SETTINGS`` that ``source``'s server has."""
    return {
        variable: bad
        for variable, bad in BAD_SETTINGS.items()
        if source.flavor == "mariadb" or variable not in MARIADB_SETTINGS
    }


@pytest.mark.server_wide
@pytest.mark.parametrize(
    "variable",
    [
        pytest.param(variable, marks=pytest.mark.mariadb_only(MARIADB_SETTINGS[variable]))
        if variable in MARIADB_SETTINGS
        else variable
        for variable in BAD_SETTINGS
    ],
)
def test_a_bad_binlog_setting_is_refused_with_its_fix(
    source: SourceEndpoint, admin_connection: Connection, variable: str, server_id: int
) -> None:
    value, message = BAD_SETTINGS[variable]
    cdc_source = source.cdc_source(server_id)

    with global_variables(admin_connection, **{variable: value}):
        with pytest.raises(StartupCheckError) as failure:
            run_startup_checks(cdc_source)

    assert failure.value.problems == (message,)
    assert isinstance(failure.value, TerminalError)


@pytest.mark.server_wide
def test_every_problem_is_named_at_once(
    source: SourceEndpoint, admin_connection: Connection
) -> None:
    own_id = source.server_id
    cdc_source = source.cdc_source(own_id)
    gone = BinlogPosition("mariadb-bin.999999", 4)
    settings = bad_settings(source)
    bad = {variable: value for variable, (value, _) in settings.items()}

    with global_variables(admin_connection, **bad):
        with pytest.raises(StartupCheckError) as failure:
            run_startup_checks(cdc_source, resume=gone)

    oldest, newest = _binlog_range(admin_connection)
    problems = [
        *(message for _, message in settings.values()),
        f"server-id {own_id} is the source server's own server_id: choose another source "
        "server-id in the pipeline file, unique among its replicas",
        f"the resume position mariadb-bin.999999:4 is not on this server: it has no binlog "
        f"mariadb-bin.999999 (it has {oldest} to {newest}), so the binlog was reset or this is "
        f"another server; {REBOOTSTRAP}",
    ]
    assert str(failure.value) == (
        f"the source {cdc_source.host}:{cdc_source.port} ({source.name} "
        f"{'.'.join(map(str, _version(admin_connection)))}) is not ready for change data "
        f"capture; fix these {len(problems)} problem(s) and start again:\n"
        + "\n".join(f"- {problem}" for problem in problems)
    )


def test_missing_privileges_are_named_with_the_grant_that_fixes_them(
    source: SourceEndpoint,
    make_account: MakeAccount,
    source_database: str,
    account_name: str,
    server_id: int,
) -> None:
    streaming = f"REPLICATION SLAVE, {MONITOR_PRIVILEGE[source.flavor]}"
    cdc_source = make_account(f"SELECT ON `{source_database}`.*", server_id=server_id)
    elsewhere = f"{source_database}_elsewhere"

    with pytest.raises(StartupCheckError) as failure:
        run_startup_checks(
            cdc_source,
            databases=[source_database, elsewhere],
            resume=BinlogPosition("mariadb-bin.000001", 4),
        )

    account = f"'{account_name}'@'%'"
    assert failure.value.problems == (
        f"the account {account} lacks {streaming}, which streaming the binlog needs: run "
        f"GRANT {streaming} ON *.* TO {account}",
        f"the account {account} lacks SELECT on `{elsewhere}`, which snapshots need: run "
        f"GRANT SELECT ON `{elsewhere}`.* TO {account}",
    )


def test_what_cannot_be_seen_is_said_not_failed(
    source: SourceEndpoint,
    make_account: MakeAccount,
    source_database: str,
    account_name: str,
    server_id: int,
) -> None:
    cdc_source = make_account(f"SELECT ON `{source_database}`.*", server_id=server_id)

    with cdc_source.connect() as connection:
        facts = gather_facts(connection)
    result = evaluate(
        facts, Requirements(server_id, resume=BinlogPosition("mariadb-bin.000001", 4))
    )

    account = f"'{account_name}'@'%'"
    assert result.unchecked == (
        replicas_note(source, server_id, account),
        PROCESS_NOTE.format(account),
        "could not check that the resume position mariadb-bin.000001:4 is still on the server: "
        "SHOW BINARY LOGS was refused (Access denied; you need (at least one of) the SUPER, "
        f"{MONITOR_PRIVILEGE[source.flavor]} privilege(s) for this operation)",
    )


def test_all_privileges_and_database_patterns_count_as_select(
    make_account: MakeAccount, source_database: str, server_id: int
) -> None:
    source = make_account(
        "REPLICATION SLAVE, REPLICATION CLIENT ON *.*",  # MariaDB shows BINLOG MONITOR
        f"ALL PRIVILEGES ON `{source_database}`.*",
        rf"SELECT ON `{source_database}\_shard%`.*",
        server_id=server_id,
    )

    result = run_startup_checks(source, databases=[source_database, f"{source_database}_shard7"])

    assert result.problems == ()


@pytest.mark.mysql_only("resource groups are MySQL's")
def test_a_resource_group_for_the_bootstrap_must_exist_and_be_the_accounts_to_join(
    make_account: MakeAccount, source_database: str, server_id: int, resource_group: str
) -> None:
    source = make_account(
        "SELECT, REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN, RESOURCE_GROUP_USER ON *.*",
        server_id=server_id,
    )

    def problems(group: str) -> tuple[str, ...]:
        try:
            run_startup_checks(source, bootstrap=True, resource_group=group)
        except StartupCheckError as refused:
            return refused.problems
        return ()

    assert problems(resource_group) == ()
    assert problems(resource_group.upper()) == (), "MySQL compares the names without case"
    assert problems(f"{resource_group}_absent") == (
        f"resource group {resource_group}_absent (tidemark.ingest.snapshot-resource-group) "
        "does not exist, or is not of type USER: create it (CREATE RESOURCE GROUP "
        f"{resource_group}_absent TYPE = USER THREAD_PRIORITY = 19) or remove the option",
    )


@pytest.mark.mariadb_only("MySQL has resource groups")
def test_a_resource_group_for_the_bootstrap_is_refused_on_mariadb(
    source: SourceEndpoint, server_id: int
) -> None:
    with pytest.raises(StartupCheckError) as refused:
        run_startup_checks(
            source.cdc_source(server_id), bootstrap=True, resource_group="tidemark_snapshot"
        )

    (problem,) = refused.value.problems
    assert problem.startswith(
        "tidemark.ingest.snapshot-resource-group names resource group tidemark_snapshot, but "
        "resource groups are MySQL's (8.0+) and MariaDB"
    )
    assert problem.endswith(
        "has none: remove the option (snapshot-max-threads-running holds the bootstrap while "
        "the source is busy, snapshot-max-rows-per-second caps it)"
    )


def test_a_purged_resume_position_says_how_to_rebootstrap(
    source: SourceEndpoint, admin_connection: Connection, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    oldest, _ = _binlog_range(admin_connection)
    purged = BinlogPosition(_previous_file(oldest), 4)

    with pytest.raises(StartupCheckError) as failure:
        run_startup_checks(cdc_source, resume=purged)

    assert failure.value.problems == (
        f"the resume position {purged} is gone: {purged.file} has been purged (the oldest "
        f"binlog on the server is {oldest}); {REBOOTSTRAP}; and keep binlogs longer "
        "(binlog_expire_logs_seconds) so this does not happen again",
    )


def test_a_resume_position_past_the_end_of_its_file_is_refused(
    source: SourceEndpoint, server_id: int
) -> None:
    cdc_source = source.cdc_source(server_id)
    end = current_position(cdc_source)
    beyond = BinlogPosition(end.file, end.offset + 10**12)

    with pytest.raises(StartupCheckError) as failure:
        run_startup_checks(cdc_source, resume=beyond)

    (problem,) = failure.value.problems
    assert problem.startswith(f"the resume position {beyond} is past the end of {end.file} (")
    assert problem.endswith(f"the binlog was reset or this is another server; {REBOOTSTRAP}")


def test_the_servers_own_server_id_is_refused(source: SourceEndpoint) -> None:
    own_id = source.server_id
    with pytest.raises(StartupCheckError) as failure:
        run_startup_checks(source.cdc_source(own_id))

    assert failure.value.problems == (
        f"server-id {own_id} is the source server's own server_id: choose another source "
        "server-id in the pipeline file, unique among its replicas",
    )


def test_a_registered_replica_with_our_server_id_is_refused(
    source: SourceEndpoint, server_id: int
) -> None:
    admin = source.admin_source().model_copy(update={"server_id": server_id})

    with _registered_replica(source.cdc_source(server_id), "replica-7.example"):
        with pytest.raises(StartupCheckError) as failure:
            run_startup_checks(admin)

    assert failure.value.problems == (
        f"server-id {server_id} is already used by the replica at replica-7.example "
        "(SHOW SLAVE HOSTS); two readers with one id disconnect each other: choose another "
        "source server-id in the pipeline file, unique among its replicas",
    )


def test_a_binlog_reader_that_registered_no_id_is_named_as_unchecked(
    source: SourceEndpoint,
    make_account: MakeAccount,
    admin_connection: Connection,
    source_database: str,
    account_name: str,
    server_id: int,
) -> None:
    """mysql-replication does not register its readers, so their ids cannot be seen: the
    check names the connected readers instead of guessing."""
    grants = f"SELECT, REPLICATION SLAVE, {MONITOR_PRIVILEGE[source.flavor]} ON *.*"
    cdc_source = make_account(grants, server_id=server_id)
    with BinlogReader(cdc_source, current_position(cdc_source), follow=True) as reader:
        with admin_connection.cursor() as cursor:
            cursor.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        next(iter(reader))  # the dump connection is open and streaming

        result = run_startup_checks(cdc_source, databases=[source_database])

    account = f"'{account_name}'@'%'"
    assert result.problems == ()
    notes = list(result.unchecked)
    if source.flavor == "mariadb":  # MySQL lists the replicas to REPLICATION SLAVE
        assert notes.pop(0) == replicas_note(source, server_id, account)
    assert re.fullmatch(
        rf"server-id {server_id} could not be compared with 1 connected binlog reader\(s\) "
        rf"that registered no server id \(binlog readers connected: "
        rf"{account_name}@127\.0\.0\.1:\d+ \(thread \d+\)\)",
        notes[0],
    ), notes[0]
    assert notes[1:] == [PROCESS_NOTE.format(account)]


@contextmanager
def _registered_replica(source: SourceConnection, host: str) -> Iterator[None]:
    """A connection that registers as a replica (COM_REGISTER_SLAVE), as MySQL and MariaDB
    replicas do; the server lists it in SHOW SLAVE HOSTS while it stays connected."""
    connection = cast(Any, source.connect())
    name = host.encode()
    payload = (
        struct.pack("<I", source.server_id)
        + bytes([len(name)])
        + name
        + b"\x00\x00"  # no user, no password
        + struct.pack("<HII", 3306, 0, 0)
    )
    try:
        connection._execute_command(COMMAND.COM_REGISTER_SLAVE, payload)
        connection._read_packet()
        yield
    finally:
        connection.close()


def _binlog_range(admin: Connection) -> tuple[str, str]:
    with admin.cursor() as cursor:
        cursor.execute("SHOW BINARY LOGS")
        names = [str(row[0]) for row in cursor.fetchall()]
    return names[0], names[-1]


def _previous_file(name: str) -> str:
    base, number = name.rsplit(".", 1)
    return f"{base}.{int(number) - 1:0{len(number)}d}"


def _version(admin: Connection) -> tuple[int, int, int]:
    with admin.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
    assert row is not None
    return ServerVersion.parse(str(row[0])).number


# -- MySQL 8 facts, table-driven -------------------------------------------------------------

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
MYSQL = ServerFacts(
    version=ServerVersion(Flavor.MYSQL, (8, 0, 36)),
    account="cdc@%",
    variables={
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "binlog_transaction_compression": "OFF",
        "server_id": "1",
        "gtid_purged": f"{UUID}:1-77",
        "gtid_mode": "ON",
        "binlog_expire_logs_seconds": "2592000",
    },
    grants=(
        "GRANT SELECT, RELOAD, PROCESS, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",
        "GRANT BACKUP_ADMIN ON *.* TO `cdc`@`%`",
    ),
    replicas=(Replica(2, "replica-1"),),
    dump_threads=(DumpThread(12, "repl", "10.0.0.2:51000"),),
    binary_logs=(BinaryLog("binlog.000007", 180), BinaryLog("binlog.000008", 4000)),
    purged_gtids=f"{UUID}:1-77",
)
NEEDS = Requirements(
    server_id=5400,
    databases=("shop", "shop_eu"),
    resume=BinlogPosition("binlog.000008", 1200),
    resume_gtids=f"{UUID}:1-120",
)
#: MYSQL with a resource group the account may join
WITH_GROUP = replace(
    MYSQL,
    grants=(*MYSQL.grants, "GRANT RESOURCE_GROUP_USER ON *.* TO `cdc`@`%`"),
    resource_groups=(ResourceGroup("tidemark_snapshot", enabled=True, thread_priority=19),),
)
FIX_PREFIX = "choose another source server-id in the pipeline file, unique among its replicas"


def with_variables(**changes: str | None) -> ServerFacts:
    variables = {**MYSQL.variables, **changes}
    return replace(MYSQL, variables={k: v for k, v in variables.items() if v is not None})


def with_grants(*grants: str) -> ServerFacts:
    return replace(MYSQL, grants=grants)


MYSQL_CASES: dict[str, tuple[ServerFacts, Requirements, list[str]]] = {
    "a well configured server passes": (MYSQL, NEEDS, []),
    "the binlog is off": (
        with_variables(log_bin="OFF"),
        NEEDS,
        [
            "log_bin is OFF: the server writes no binlog; add log_bin = binlog under [mysqld] "
            "in my.cnf (and remove any skip-log-bin or disable-log-bin) and restart the "
            "server, it cannot be turned on at runtime"
        ],
    ),
    "statement-based binlog": (
        with_variables(binlog_format="STATEMENT"),
        NEEDS,
        [
            "binlog_format is STATEMENT, must be ROW: run SET GLOBAL binlog_format = ROW and "
            "add binlog_format = ROW under [mysqld] in my.cnf; sessions already connected keep "
            "STATEMENT until they reconnect"
        ],
    ),
    "partial row images": (
        with_variables(binlog_row_image="NOBLOB"),
        NEEDS,
        [
            "binlog_row_image is NOBLOB, must be FULL: run SET GLOBAL binlog_row_image = FULL "
            "and add binlog_row_image = FULL under [mysqld] in my.cnf; sessions already "
            "connected keep NOBLOB until they reconnect"
        ],
    ),
    "no column names in the binlog": (
        with_variables(binlog_row_metadata="MINIMAL"),
        NEEDS,
        [
            "binlog_row_metadata is MINIMAL, must be FULL (binlog rows carry no column names "
            "otherwise): run SET GLOBAL binlog_row_metadata = FULL and add "
            "binlog_row_metadata = FULL under [mysqld] in my.cnf"
        ],
    ),
    "a server too old for binlog_row_metadata": (
        replace(
            with_variables(binlog_row_metadata=None),
            version=ServerVersion(Flavor.MYSQL, (8, 0, 13)),
        ),
        NEEDS,
        [
            "binlog_row_metadata does not exist in MySQL 8.0.13 (MySQL 8.0.14+ or MariaDB "
            "10.5+ have it): without it binlog rows carry no column names; upgrade the server"
        ],
    ),
    "compressed transactions are read": (
        with_variables(binlog_transaction_compression="ON"),
        NEEDS,
        [],
    ),
    "partial JSON updates": (
        with_variables(binlog_row_value_options="PARTIAL_JSON"),
        NEEDS,
        [
            "binlog_row_value_options is PARTIAL_JSON: an update of a JSON column is then "
            "logged as a diff against the old document, not as the row, and its changes cannot "
            "be read exactly; run SET GLOBAL binlog_row_value_options = '' and add "
            "binlog_row_value_options = '' under [mysqld] in my.cnf"
        ],
    ),
    "a start after a GTID set without GTIDs": (
        with_variables(gtid_mode="OFF_PERMISSIVE"),
        replace(NEEDS, resume_gtids=f"{UUID}:1-100"),
        [
            "gtid_mode is OFF_PERMISSIVE: the pipeline starts after a GTID set, which only a "
            "server with gtid_mode = ON can find; set gtid_mode = ON and "
            "enforce_gtid_consistency = ON under [mysqld] in my.cnf (on a running server, step "
            "gtid_mode through OFF_PERMISSIVE and ON_PERMISSIVE), or start by file and position "
            "(scan.startup.specific-offset.file and .pos)"
        ],
    ),
    "ALL PRIVILEGES grants everything": (
        with_grants("GRANT ALL PRIVILEGES ON *.* TO `cdc`@`%` WITH GRANT OPTION"),
        NEEDS,
        [],
    ),
    "database grants, a LIKE pattern, a role and a table grant": (
        with_grants(
            "GRANT USAGE ON *.* TO `cdc`@`%`",
            "GRANT SELECT ON `shop`.* TO `cdc`@`%`",
            r"GRANT SELECT, SHOW VIEW ON `shop\_e%`.* TO `cdc`@`%`",
            "GRANT SELECT (`id`, `total`) ON `billing`.`invoices` TO `cdc`@`%`",
            "GRANT `cdc_role`@`%` TO `cdc`@`%`",
        ),
        replace(NEEDS, databases=("shop", "shop_eu", "shopxeu", "billing")),
        [
            "the account 'cdc'@'%' lacks REPLICATION SLAVE, REPLICATION CLIENT, which "
            "streaming the binlog needs: run GRANT REPLICATION SLAVE, REPLICATION CLIENT ON "
            "*.* TO 'cdc'@'%'",
            "the account 'cdc'@'%' lacks SELECT on `shopxeu`, `billing`, which snapshots need: "
            "run GRANT SELECT ON `shopxeu`.* TO 'cdc'@'%'; GRANT SELECT ON `billing`.* TO "
            "'cdc'@'%'",
        ],
    ),
    "ALL at database level covers SELECT there only": (
        with_grants(
            "GRANT REPLICATION CLIENT, REPLICATION SLAVE ON *.* TO `cdc`@`%`",
            "GRANT ALL PRIVILEGES ON `shop`.* TO `cdc`@`%`",
        ),
        NEEDS,
        [
            "the account 'cdc'@'%' lacks SELECT on `shop_eu`, which snapshots need: run GRANT "
            "SELECT ON `shop_eu`.* TO 'cdc'@'%'"
        ],
    ),
    "a replica uses our server id": (
        replace(MYSQL, replicas=(Replica(5400, "10.0.0.9"),)),
        NEEDS,
        [
            "server-id 5400 is already used by the replica at 10.0.0.9 (SHOW SLAVE HOSTS); two "
            f"readers with one id disconnect each other: {FIX_PREFIX}"
        ],
    ),
    "our server id is the server's": (
        with_variables(server_id="5400"),
        NEEDS,
        [f"server-id 5400 is the source server's own server_id: {FIX_PREFIX}"],
    ),
    "the resume file was purged": (
        MYSQL,
        replace(NEEDS, resume=BinlogPosition("binlog.000003", 4)),
        [
            "the resume position binlog.000003:4 is gone: binlog.000003 has been purged (the "
            f"oldest binlog on the server is binlog.000007); {REBOOTSTRAP}; and keep binlogs "
            "longer (binlog_expire_logs_seconds) so this does not happen again"
        ],
    ),
    "the resume GTID set lacks purged transactions": (
        MYSQL,
        replace(NEEDS, resume_gtids=f"{UUID}:1-50"),
        [
            f"the resume GTID set {UUID}:1-50 is no longer available: gtid_purged is "
            f"{UUID}:1-77, so transactions it lacks have been purged; {REBOOTSTRAP}"
        ],
    ),
    "a GTID set with intervals and other servers covers what was purged": (
        replace(MYSQL, purged_gtids=f"{UUID}:1-10:12-77"),
        replace(
            NEEDS, resume_gtids=f"{UUID.upper()}:1-100,aaaaaaaa-71ca-11e1-9e33-c80aa9429562:1-5"
        ),
        [],
    ),
    "the resume position is another server's": (
        with_variables(server_uuid="bbbbbbbb-71ca-11e1-9e33-c80aa9429562"),
        replace(NEEDS, resume_server_uuid=UUID),
        [
            "the resume position binlog.000008:1200 is in the binlog of the server "
            f"{UUID} (server_uuid), but this is the server "
            "bbbbbbbb-71ca-11e1-9e33-c80aa9429562: binlog files and positions mean nothing on "
            "another server (a failover to a replica, or a server rebuilt from a backup); start "
            "from the GTID set the changelog reached, with new changelog tables "
            "(scan.startup.mode: specific-offset and scan.startup.specific-offset.gtid-set), or "
            f"{REBOOTSTRAP}"
        ],
    ),
    "the resume position is this server's": (
        with_variables(server_uuid=UUID.upper()),
        replace(NEEDS, resume_server_uuid=UUID),
        [],
    ),
    "a bootstrap a chunk at a time, with BACKUP_ADMIN": (
        MYSQL,
        replace(NEEDS, bootstrap=True),
        [],
    ),
    "a bootstrap without BACKUP_ADMIN": (
        with_grants(MYSQL.grants[0]),
        replace(NEEDS, bootstrap=True),
        [
            "the account 'cdc'@'%' lacks BACKUP_ADMIN, which the bootstrap needs on MySQL to "
            "read performance_schema.log_status (the binlog position every earlier "
            "transaction is visible at): run GRANT BACKUP_ADMIN ON *.* TO 'cdc'@'%'"
        ],
    ),
    "no bootstrap due, no BACKUP_ADMIN needed": (with_grants(MYSQL.grants[0]), NEEDS, []),
    "a bootstrap in a resource group the account may join": (
        replace(WITH_GROUP, resource_groups=(ResourceGroup("Tidemark_Snapshot", True, 19),)),
        replace(NEEDS, bootstrap=True, resource_group="tidemark_snapshot"),
        [],
    ),
    "a resource group without RESOURCE_GROUP_USER": (
        replace(MYSQL, resource_groups=WITH_GROUP.resource_groups),
        replace(NEEDS, bootstrap=True, resource_group="tidemark_snapshot"),
        [
            "the account 'cdc'@'%' lacks RESOURCE_GROUP_USER, which running the bootstrap's "
            "reads in resource group tidemark_snapshot (tidemark.ingest.snapshot-resource-group) "
            "needs: run GRANT RESOURCE_GROUP_USER ON *.* TO 'cdc'@'%'"
        ],
    ),
    "a disabled resource group": (
        replace(WITH_GROUP, resource_groups=(ResourceGroup("tidemark_snapshot", False, 19),)),
        replace(NEEDS, bootstrap=True, resource_group="tidemark_snapshot"),
        [
            "resource group tidemark_snapshot (tidemark.ingest.snapshot-resource-group) is "
            "disabled: run ALTER RESOURCE GROUP tidemark_snapshot ENABLE, or remove the option"
        ],
    ),
    "no bootstrap due, the resource group is not checked": (
        MYSQL,
        replace(NEEDS, resource_group="tidemark_snapshot"),
        [],
    ),
    "a bootstrap in one consistent snapshot needs no BACKUP_ADMIN (Percona's)": (
        with_grants(MYSQL.grants[0]),
        replace(NEEDS, bootstrap=True, incremental_snapshot=False),
        [],
    ),
}


@pytest.mark.parametrize(
    ("facts", "needs", "problems"), MYSQL_CASES.values(), ids=list(MYSQL_CASES)
)
def test_mysql_8_facts(facts: ServerFacts, needs: Requirements, problems: list[str]) -> None:
    assert list(evaluate(facts, needs).problems) == problems


def test_a_resource_group_at_priority_0_is_warned_of_with_the_capability_it_may_lack() -> None:
    facts = replace(
        WITH_GROUP,
        resource_groups=(ResourceGroup("tidemark_snapshot", enabled=True, thread_priority=0),),
    )

    result = evaluate(facts, replace(NEEDS, bootstrap=True, resource_group="tidemark_snapshot"))

    assert result.problems == ()
    assert result.warnings == (
        "resource group tidemark_snapshot (tidemark.ingest.snapshot-resource-group) has "
        "THREAD_PRIORITY 0, so the bootstrap's reads compete with the server's own work as "
        "without it; if it was created with another priority, mysqld lacks the CAP_SYS_NICE "
        "capability, without which MySQL stores 0: give it that capability (systemd: "
        "AmbientCapabilities=CAP_SYS_NICE), then ALTER RESOURCE GROUP tidemark_snapshot "
        "THREAD_PRIORITY = 19",
    )


def test_mysql_readers_that_did_not_register_are_named() -> None:
    facts = replace(
        MYSQL,
        replicas=(),
        grants=("GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",),
    )

    assert evaluate(facts, NEEDS).unchecked == (
        "server-id 5400 could not be compared with 1 connected binlog reader(s) that registered "
        "no server id (binlog readers connected: repl@10.0.0.2:51000 (thread 12))",
        PROCESS_NOTE.format("'cdc'@'%'"),
    )


def test_mysql_without_show_replicas_says_which_privilege_would_check_it() -> None:
    facts = replace(MYSQL, replicas=Refused("SHOW REPLICAS", "Access denied"), dump_threads=())

    assert evaluate(facts, NEEDS).unchecked == (
        "server-id 5400 could not be compared with the replicas' ids: SHOW REPLICAS was refused "
        "(Access denied); GRANT REPLICATION SLAVE ON *.* TO 'cdc'@'%' to check it",
    )


def test_mysql_without_gtids_streams_with_a_warning_about_failover() -> None:
    result = evaluate(with_variables(gtid_mode="OFF"), replace(NEEDS, resume_gtids=None))

    assert result.problems == ()
    assert result.warnings == (
        "gtid_mode is OFF: the changelog records binlog files and positions only, which no "
        "other server shares, so after a failover to a replica the pipeline must bootstrap "
        "again; set gtid_mode = ON and enforce_gtid_consistency = ON under [mysqld] in my.cnf "
        "(on a running server, step gtid_mode through OFF_PERMISSIVE and ON_PERMISSIVE)",
    )


@pytest.mark.parametrize(("seconds", "warned"), [("3600", True), ("86400", False), ("0", False)])
def test_binlogs_kept_less_than_a_day_are_warned_of(seconds: str, warned: bool) -> None:
    result = evaluate(with_variables(binlog_expire_logs_seconds=seconds), NEEDS)

    assert result.problems == ()
    assert result.warnings == (
        (
            "binlog_expire_logs_seconds is 3600: binlogs are purged after 1.0 hours, so a "
            "pipeline stopped longer than that must bootstrap again; keep them at least a day "
            "(7 days is usual): run SET GLOBAL binlog_expire_logs_seconds = 604800 and add "
            "binlog_expire_logs_seconds = 604800 under [mysqld] in my.cnf",
        )
        if warned
        else ()
    )


@pytest.mark.parametrize(
    ("resume", "purged", "gone"),
    [("0-1-120", "0-1-80", False), ("0-1-50", "0-1-80", True), ("1-2-5", "0-1-80", False)],
)
def test_mariadb_gtid_positions_are_compared_per_domain(
    resume: str, purged: str, gone: bool
) -> None:
    facts = replace(
        MYSQL,
        version=ServerVersion(Flavor.MARIADB, (10, 11, 6)),
        grants=("GRANT ALL PRIVILEGES ON *.* TO `cdc`@`%`",),
        purged_gtids=purged,
    )

    problems = evaluate(facts, replace(NEEDS, resume_gtids=resume)).problems

    expected = (
        f"the resume GTID set {resume} is no longer available: the oldest binlog starts after "
        f"GTID {purged}, so transactions it lacks have been purged; {REBOOTSTRAP}"
    )
    assert problems == ((expected,) if gone else ())


@pytest.mark.parametrize(
    ("text", "flavor", "number"),
    [
        ("8.0.36-0ubuntu0.22.04.1", Flavor.MYSQL, (8, 0, 36)),
        ("10.11.19-MariaDB-0+deb12u1-log", Flavor.MARIADB, (10, 11, 19)),
    ],
)
def test_versions_are_told_apart(text: str, flavor: Flavor, number: tuple[int, int, int]) -> None:
    assert ServerVersion.parse(text) == ServerVersion(flavor, number)
