"""Start-up checks: refuse to stream from a source that would lose or garble changes.

docs/architecture.md#source-facts lists what a binlog reader relies on. ``gather_facts`` asks
the server (MySQL 8 or MariaDB) with plain SQL and never fails for want of a privilege: what it
may not see it records as refused. ``evaluate`` is a pure function from those facts to every
problem at once, one line each with the setting, its value and the fix, plus what could not be
checked.
``run_startup_checks`` does both and raises one ``StartupCheckError``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pymysql

from ingest.errors import StartupCheckError
from tidemark.source import BinlogPosition, SourceConnection

logger = logging.getLogger(__name__)

#: Server errors that mean "you may not see this", not "something broke".
_REFUSALS = frozenset(
    {
        1044,  # ER_DBACCESS_DENIED_ERROR
        1142,  # ER_TABLEACCESS_DENIED_ERROR
        1227,  # ER_SPECIFIC_ACCESS_DENIED_ERROR
        1381,  # ER_NO_BINARY_LOGGING
    }
)

_VARIABLES = (
    "log_bin",
    "binlog_format",
    "binlog_row_image",
    "binlog_row_metadata",
    "binlog_transaction_compression",  # MySQL 8.0.20+
    "binlog_row_value_options",  # MySQL 8.0.3+
    "log_bin_compress",  # MariaDB
    "server_id",
    "gtid_purged",  # MySQL
    "gtid_mode",  # MySQL
    "server_uuid",  # MySQL
    "binlog_expire_logs_seconds",  # MySQL 8.0+, MariaDB 10.6+
)

#: binlogs kept for less than this make a short outage end in a re-bootstrap
MIN_BINLOG_RETENTION_SECONDS = 24 * 3600

REBOOTSTRAP = (
    "re-bootstrap: set scan.startup.mode: initial in the pipeline's source and start from a "
    "fresh changelog (drop its changelog tables), or skip the gap with "
    "scan.startup.mode: latest-offset"
)


class Flavor(StrEnum):
    MYSQL = "MySQL"
    MARIADB = "MariaDB"


@dataclass(frozen=True)
class ServerVersion:
    flavor: Flavor
    number: tuple[int, int, int]

    @classmethod
    def parse(cls, text: str) -> ServerVersion:
        """``SELECT VERSION()``: ``8.0.36-0ubuntu0.22.04.1``, ``10.11.6-MariaDB-log``."""
        match = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
        if match is None:
            raise ValueError(f"not a MySQL or MariaDB version: {text!r}")
        flavor = Flavor.MARIADB if "mariadb" in text.lower() else Flavor.MYSQL
        major, minor, patch = (int(part) for part in match.groups())
        return cls(flavor, (major, minor, patch))

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return self.number >= (major, minor, patch)

    def __str__(self) -> str:
        return f"{self.flavor} {'.'.join(str(part) for part in self.number)}"


@dataclass(frozen=True)
class Refused:
    """A statement the server would not answer for this account, and its reason."""

    statement: str
    reason: str


@dataclass(frozen=True)
class Replica:
    """A replica that registered itself (``SHOW SLAVE HOSTS`` / ``SHOW REPLICAS``)."""

    server_id: int
    host: str


@dataclass(frozen=True)
class DumpThread:
    """A connection streaming the binlog ('Binlog Dump'), seen in the process list."""

    thread_id: int
    user: str
    host: str

    def __str__(self) -> str:
        return f"{self.user}@{self.host} (thread {self.thread_id})"


@dataclass(frozen=True)
class BinaryLog:
    name: str
    size: int


@dataclass(frozen=True)
class ResourceGroup:
    """A MySQL resource group of type USER, as ``information_schema.RESOURCE_GROUPS`` shows it
    to an account with RESOURCE_GROUP_USER or RESOURCE_GROUP_ADMIN (to others, none)."""

    name: str
    enabled: bool
    #: 0 also when it was created with another on a server that cannot apply priorities
    thread_priority: int


@dataclass(frozen=True)
class ServerFacts:
    """What the start-up checks need to know about a source, as one account sees it."""

    version: ServerVersion
    #: ``CURRENT_USER()``: ``user@host`` as the grants name it
    account: str
    #: global variables by name; a variable the server does not have is absent
    variables: Mapping[str, str]
    #: ``SHOW GRANTS`` lines
    grants: tuple[str, ...]
    replicas: tuple[Replica, ...] | Refused
    #: other connections streaming the binlog that this account can see
    dump_threads: tuple[DumpThread, ...]
    binary_logs: tuple[BinaryLog, ...] | Refused
    #: GTIDs no longer in any binlog: MySQL ``gtid_purged``; MariaDB the GTID state at the start
    #: of the oldest binlog. None when unknown.
    purged_gtids: str | None = None
    #: MySQL's resource groups of type USER that this account can see (MariaDB has none)
    resource_groups: tuple[ResourceGroup, ...] = ()


@dataclass(frozen=True)
class Requirements:
    """What this pipeline needs from the source."""

    server_id: int
    #: the onboarded databases, which the account must be able to SELECT from
    databases: tuple[str, ...] = ()
    #: where streaming resumes; None for a first start at the current end
    resume: BinlogPosition | None = None
    #: GTID state at ``resume``: MariaDB ``domain-server-seq`` list, MySQL executed GTID set
    resume_gtids: str | None = None
    #: MySQL's ``server_uuid`` of the server whose binlog ``resume`` is in, as recorded
    resume_server_uuid: str | None = None
    #: a bootstrap is due, a chunk at a time or (``scan.incremental.snapshot.enabled: false``)
    #: each table in one consistent snapshot (``ingest.bootstrap.bootstrapper``)
    bootstrap: bool = False
    incremental_snapshot: bool = True
    #: the resource group the bootstrap's reads run in (``tidemark.ingest.
    #: snapshot-resource-group``)
    resource_group: str | None = None


@dataclass(frozen=True)
class CheckResult:
    #: what must be fixed before ingest may run, one line each
    problems: tuple[str, ...]
    #: what could not be checked with this account's privileges, one line each
    unchecked: tuple[str, ...]
    #: those of ``unchecked`` that only an optional privilege would check, with its grant
    optional_grants: tuple[str, ...] = ()
    #: settings that work but put the pipeline at risk, one line each
    warnings: tuple[str, ...] = ()
    #: MySQL's ``server_uuid`` of the server checked; None on MariaDB
    server_uuid: str | None = None


# -- gathering -------------------------------------------------------------------------------


def gather_facts(connection: pymysql.connections.Connection[Any]) -> ServerFacts:
    """Ask the server everything ``evaluate`` needs; privileges that are missing show as
    ``Refused`` rather than errors."""
    with connection.cursor() as cursor:
        version = ServerVersion.parse(str(_scalar(cursor, "SELECT VERSION()")))
        account = str(_scalar(cursor, "SELECT CURRENT_USER()"))
        variables = _variables(cursor)
        grants = tuple(str(row[0]) for row in _rows(cursor, "SHOW GRANTS"))
        binary_logs = _binary_logs(cursor)
        return ServerFacts(
            version=version,
            account=account,
            variables=variables,
            grants=grants,
            replicas=_replicas(cursor, version),
            dump_threads=_dump_threads(cursor),
            binary_logs=binary_logs,
            purged_gtids=_purged_gtids(cursor, version, variables, binary_logs),
            resource_groups=_resource_groups(cursor, version),
        )


def _scalar(cursor: Any, sql: str) -> Any:
    cursor.execute(sql)
    row = cursor.fetchone()
    return None if row is None else row[0]


def _rows(cursor: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    cursor.execute(sql, args)
    return list(cursor.fetchall())


def _refusable(cursor: Any, sql: str) -> list[tuple[Any, ...]] | Refused:
    try:
        return _rows(cursor, sql)
    except pymysql.MySQLError as error:
        code = error.args[0] if error.args else None
        if code not in _REFUSALS:
            raise
        return Refused(sql, str(error.args[1]) if len(error.args) > 1 else str(error))


def _variables(cursor: Any) -> dict[str, str]:
    placeholders = ", ".join(["%s"] * len(_VARIABLES))
    sql = f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})"
    return {str(name): str(value) for name, value in _rows(cursor, sql, _VARIABLES)}


def _resource_groups(cursor: Any, version: ServerVersion) -> tuple[ResourceGroup, ...]:
    if version.flavor is not Flavor.MYSQL or not version.at_least(8, 0):
        return ()  # resource groups came with MySQL 8.0
    rows = _rows(
        cursor,
        "SELECT RESOURCE_GROUP_NAME, RESOURCE_GROUP_ENABLED, THREAD_PRIORITY "
        "FROM information_schema.RESOURCE_GROUPS WHERE RESOURCE_GROUP_TYPE = 'USER'",
    )
    return tuple(
        ResourceGroup(str(name), bool(enabled), int(priority)) for name, enabled, priority in rows
    )


def _replicas(cursor: Any, version: ServerVersion) -> tuple[Replica, ...] | Refused:
    rows = _refusable(cursor, _replicas_statement(version))
    if isinstance(rows, Refused):
        return rows
    return tuple(Replica(int(row[0]), str(row[1])) for row in rows)


def _replicas_statement(version: ServerVersion) -> str:
    if version.flavor is Flavor.MYSQL and version.at_least(8, 0, 22):
        return "SHOW REPLICAS"
    return "SHOW SLAVE HOSTS"


def _dump_threads(cursor: Any) -> tuple[DumpThread, ...]:
    rows = _rows(
        cursor,
        "SELECT ID, USER, HOST FROM information_schema.PROCESSLIST "
        "WHERE COMMAND IN ('Binlog Dump', 'Binlog Dump GTID') AND ID <> CONNECTION_ID() "
        "ORDER BY ID",
    )
    return tuple(DumpThread(int(row[0]), str(row[1]), str(row[2])) for row in rows)


def _binary_logs(cursor: Any) -> tuple[BinaryLog, ...] | Refused:
    rows = _refusable(cursor, "SHOW BINARY LOGS")
    if isinstance(rows, Refused):
        return rows
    return tuple(BinaryLog(str(row[0]), int(row[1])) for row in rows)


def _purged_gtids(
    cursor: Any,
    version: ServerVersion,
    variables: Mapping[str, str],
    binary_logs: tuple[BinaryLog, ...] | Refused,
) -> str | None:
    if version.flavor is Flavor.MYSQL:
        return variables.get("gtid_purged")
    if isinstance(binary_logs, Refused) or not binary_logs:
        return None
    cursor.execute("SELECT BINLOG_GTID_POS(%s, 4)", (binary_logs[0].name,))
    row = cursor.fetchone()
    return None if row is None or row[0] is None else str(row[0])


# -- evaluating ------------------------------------------------------------------------------


class _Kind(StrEnum):
    PROBLEM = "problem"
    UNCHECKED = "unchecked"
    #: unchecked for lack of a privilege the README's grants leave out on purpose
    OPTIONAL_GRANT = "optional grant"
    WARNING = "warning"


@dataclass(frozen=True)
class _Finding:
    message: str
    kind: _Kind = _Kind.PROBLEM


_Check = Callable[[ServerFacts, Requirements], Iterator[_Finding]]


def evaluate(facts: ServerFacts, requirements: Requirements) -> CheckResult:
    """Every problem with ``facts`` for ``requirements``, and what could not be checked."""
    findings = [finding for check in _CHECKS for finding in check(facts, requirements)]
    return CheckResult(
        problems=tuple(f.message for f in findings if f.kind is _Kind.PROBLEM),
        unchecked=tuple(
            f.message for f in findings if f.kind in (_Kind.UNCHECKED, _Kind.OPTIONAL_GRANT)
        ),
        optional_grants=tuple(f.message for f in findings if f.kind is _Kind.OPTIONAL_GRANT),
        warnings=tuple(f.message for f in findings if f.kind is _Kind.WARNING),
        server_uuid=facts.variables.get("server_uuid") or None,
    )


def _cnf_fix(variable: str, value: str) -> str:
    setting = f"{variable} = {value}"
    return f"run SET GLOBAL {setting} and add {setting} under [mysqld] in my.cnf"


def _check_log_bin(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
    value = facts.variables.get("log_bin", "OFF").upper()
    if value not in ("ON", "1"):
        yield _Finding(
            f"log_bin is {value}: the server writes no binlog; add log_bin = binlog under "
            "[mysqld] in my.cnf (and remove any skip-log-bin or disable-log-bin) and restart the "
            "server, it cannot be turned on at runtime"
        )


def _check_session_variable(variable: str, required: str) -> _Check:
    def check(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
        value = facts.variables.get(variable)
        if value is not None and value.upper() != required:
            yield _Finding(
                f"{variable} is {value}, must be {required}: {_cnf_fix(variable, required)}; "
                f"sessions already connected keep {value} until they reconnect"
            )

    return check


def _check_row_metadata(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
    value = facts.variables.get("binlog_row_metadata")
    if value is None:
        yield _Finding(
            f"binlog_row_metadata does not exist in {facts.version} (MySQL 8.0.14+ or MariaDB "
            "10.5+ have it): without it binlog rows carry no column names; upgrade the server"
        )
    elif value.upper() != "FULL":
        yield _Finding(
            f"binlog_row_metadata is {value}, must be FULL (binlog rows carry no column names "
            f"otherwise): {_cnf_fix('binlog_row_metadata', 'FULL')}"
        )


def _check_compression(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
    # MySQL's compressed transactions (binlog_transaction_compression) are read; MariaDB's
    # compressed events are not
    value = facts.variables.get("log_bin_compress", "OFF")
    if value.upper() not in ("OFF", "0"):
        yield _Finding(
            f"log_bin_compress is {value}: compressed binlog events cannot be decoded and would "
            f"be skipped without a trace; {_cnf_fix('log_bin_compress', 'OFF')}"
        )


def _check_partial_json(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
    value = facts.variables.get("binlog_row_value_options", "")
    if value.strip():
        yield _Finding(
            f"binlog_row_value_options is {value}: an update of a JSON column is then logged "
            "as a diff against the old document, not as the row, and its changes cannot be "
            "read exactly; run SET GLOBAL binlog_row_value_options = '' and add "
            "binlog_row_value_options = '' under [mysqld] in my.cnf"
        )


def _check_gtid_mode(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    if facts.version.flavor is not Flavor.MYSQL:
        return  # MariaDB always writes GTIDs
    mode = facts.variables.get("gtid_mode", "OFF").upper()
    if mode == "ON":
        return
    fix = (
        "set gtid_mode = ON and enforce_gtid_consistency = ON under [mysqld] in my.cnf (on a "
        "running server, step gtid_mode through OFF_PERMISSIVE and ON_PERMISSIVE)"
    )
    if requirements.resume_gtids:
        yield _Finding(
            f"gtid_mode is {mode}: the pipeline starts after a GTID set, which only a server "
            f"with gtid_mode = ON can find; {fix}, or start by file and position "
            "(scan.startup.specific-offset.file and .pos)"
        )
    else:
        yield _Finding(
            f"gtid_mode is {mode}: the changelog records binlog files and positions only, "
            "which no other server shares, so after a failover to a replica the pipeline "
            f"must bootstrap again; {fix}",
            kind=_Kind.WARNING,
        )


def _check_binlog_retention(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
    value = facts.variables.get("binlog_expire_logs_seconds", "0")
    seconds = int(value) if value.isdigit() else 0
    if 0 < seconds < MIN_BINLOG_RETENTION_SECONDS:
        yield _Finding(
            f"binlog_expire_logs_seconds is {seconds}: binlogs are purged after "
            f"{seconds / 3600:.1f} hours, so a pipeline stopped longer than that must "
            "bootstrap again; keep them at least a day (7 days is usual): "
            f"{_cnf_fix('binlog_expire_logs_seconds', '604800')}",
            kind=_Kind.WARNING,
        )


# -- privileges ------------------------------------------------------------------------------

_IDENTIFIER = r"(?:\*|`(?:[^`]|``)*`|[^\s.`]+)"
_GRANT = re.compile(
    rf"^GRANT (?P<privileges>.+?) ON (?:(?:TABLE|FUNCTION|PROCEDURE|PACKAGE(?: BODY)?) )?"
    rf"(?P<database>{_IDENTIFIER})\.(?P<table>{_IDENTIFIER}) TO ",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Grant:
    """One ``GRANT ... ON db.table`` line of ``SHOW GRANTS``; ``*`` for every database or
    table. ``database`` is a LIKE pattern, as MySQL reads database-level grants."""

    privileges: frozenset[str]
    database: str
    table: str

    @classmethod
    def parse(cls, line: str) -> Grant | None:
        """None for lines that grant no privileges on tables: roles, PROXY."""
        match = _GRANT.match(line)
        if match is None:
            return None
        without_columns = re.sub(r"\([^)]*\)", "", match["privileges"])
        privileges = {" ".join(p.split()).upper() for p in without_columns.split(",")}
        if "ALL PRIVILEGES" in privileges:
            privileges.add("ALL")
        return cls(frozenset(privileges), _unquote(match["database"]), _unquote(match["table"]))

    def allows(self, *privileges: str) -> bool:
        return "ALL" in self.privileges or not self.privileges.isdisjoint(privileges)

    @property
    def is_global(self) -> bool:
        return self.database == "*"

    def covers_database(self, name: str) -> bool:
        return self.is_global or (self.table == "*" and _like(self.database, name))


def _unquote(identifier: str) -> str:
    if identifier.startswith("`"):
        return identifier[1:-1].replace("``", "`")
    return identifier


def _like(pattern: str, name: str) -> bool:
    """MySQL LIKE, as database-level grants use it: ``%``, ``_``, and ``\\`` escapes."""
    parts = re.findall(r"\\.|%|_|[^\\%_]+", pattern)
    translated = {"%": ".*", "_": "."}
    regex = "".join(
        translated.get(part, re.escape(part[1:] if part.startswith("\\") else part))
        for part in parts
    )
    return re.fullmatch(regex, name) is not None


@dataclass(frozen=True)
class _Privilege:
    """A global privilege ingest needs, by the names that grant it."""

    name: str
    granted_by: tuple[str, ...]


def _required_privileges(version: ServerVersion) -> tuple[_Privilege, ...]:
    binlog_monitor = (
        "BINLOG MONITOR"
        if version.flavor is Flavor.MARIADB and version.at_least(10, 5, 2)
        else "REPLICATION CLIENT"
    )
    return (
        _Privilege("REPLICATION SLAVE", ("REPLICATION SLAVE", "REPLICATION REPLICA")),
        _Privilege(binlog_monitor, ("BINLOG MONITOR", "REPLICATION CLIENT")),
    )


def _account_sql(account: str) -> str:
    user, _, host = account.rpartition("@")
    return f"'{user}'@'{host}'"


def _grants(facts: ServerFacts) -> list[Grant]:
    return [grant for line in facts.grants if (grant := Grant.parse(line)) is not None]


def _check_privileges(facts: ServerFacts, _: Requirements) -> Iterator[_Finding]:
    global_grants = [grant for grant in _grants(facts) if grant.is_global]
    missing = [
        privilege.name
        for privilege in _required_privileges(facts.version)
        if not any(grant.allows(*privilege.granted_by) for grant in global_grants)
    ]
    if missing:
        names = ", ".join(missing)
        yield _Finding(
            f"the account {_account_sql(facts.account)} lacks {names}, which streaming the "
            f"binlog needs: run GRANT {names} ON *.* TO {_account_sql(facts.account)}"
        )


def _check_bootstrap(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    """MySQL's incremental snapshot reads its low watermark from
    ``performance_schema.log_status`` (``ingest.bootstrap.chunk_reads``). One snapshot per
    table is not refused here: Percona Server reports its position, plain MySQL does not, and
    the snapshot itself says so with the fix."""
    if not requirements.bootstrap or facts.version.flavor is not Flavor.MYSQL:
        return
    if not requirements.incremental_snapshot:
        return
    if not any(grant.allows("BACKUP_ADMIN") for grant in _grants(facts) if grant.is_global):
        account = _account_sql(facts.account)
        yield _Finding(
            f"the account {account} lacks BACKUP_ADMIN, which the bootstrap needs on MySQL to "
            "read performance_schema.log_status (the binlog position every earlier "
            f"transaction is visible at): run GRANT BACKUP_ADMIN ON *.* TO {account}"
        )


def _check_resource_group(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    """The group ``tidemark.ingest.snapshot-resource-group`` names must be one the account may
    put its own sessions in (``tidemark.bulk_reads``)."""
    group = requirements.resource_group
    if group is None or not requirements.bootstrap:
        return
    option = "tidemark.ingest.snapshot-resource-group"
    if facts.version.flavor is not Flavor.MYSQL:
        yield _Finding(
            f"{option} names resource group {group}, but resource groups are MySQL's (8.0+) "
            f"and {facts.version} has none: remove the option (snapshot-max-threads-running "
            "holds the bootstrap while the source is busy, snapshot-max-rows-per-second caps "
            "it)"
        )
        return
    account = _account_sql(facts.account)
    if not any(
        grant.allows("RESOURCE_GROUP_USER", "RESOURCE_GROUP_ADMIN")
        for grant in _grants(facts)
        if grant.is_global
    ):
        yield _Finding(
            f"the account {account} lacks RESOURCE_GROUP_USER, which running the bootstrap's "
            f"reads in resource group {group} ({option}) needs: run GRANT RESOURCE_GROUP_USER "
            f"ON *.* TO {account}"
        )
        return
    found = [g for g in facts.resource_groups if g.name.lower() == group.lower()]
    if not found:
        yield _Finding(
            f"resource group {group} ({option}) does not exist, or is not of type USER: "
            f"create it (CREATE RESOURCE GROUP {group} TYPE = USER THREAD_PRIORITY = 19) or "
            "remove the option"
        )
    elif not found[0].enabled:
        yield _Finding(
            f"resource group {group} ({option}) is disabled: run ALTER RESOURCE GROUP {group} "
            "ENABLE, or remove the option"
        )
    elif found[0].thread_priority == 0:
        # MySQL stores 0 for any priority asked of a server without CAP_SYS_NICE, with a
        # warning to whoever ran CREATE RESOURCE GROUP (sql_resource_group.cc)
        yield _Finding(
            f"resource group {group} ({option}) has THREAD_PRIORITY 0, so the bootstrap's "
            "reads compete with the server's own work as without it; if it was created with "
            "another priority, mysqld lacks the CAP_SYS_NICE capability, without which MySQL "
            "stores 0: give it that capability (systemd: AmbientCapabilities=CAP_SYS_NICE), "
            f"then ALTER RESOURCE GROUP {group} THREAD_PRIORITY = 19",
            kind=_Kind.WARNING,
        )


def _check_select(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    grants = [grant for grant in _grants(facts) if grant.allows("SELECT")]
    unreadable = [
        database
        for database in requirements.databases
        if not any(grant.covers_database(database) for grant in grants)
    ]
    if unreadable:
        account = _account_sql(facts.account)
        names = ", ".join(f"`{name}`" for name in unreadable)
        fixes = "; ".join(f"GRANT SELECT ON `{name}`.* TO {account}" for name in unreadable)
        yield _Finding(
            f"the account {account} lacks SELECT on {names}, which snapshots need: run {fixes}"
        )


# -- server id -------------------------------------------------------------------------------


def _check_server_id(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    ours = requirements.server_id
    fix = "choose another source server-id in the pipeline file, unique among its replicas"
    if facts.variables.get("server_id") == str(ours):
        yield _Finding(f"server-id {ours} is the source server's own server_id: {fix}")
    if isinstance(facts.replicas, Refused):
        yield _Finding(_replicas_refused(facts, ours, facts.replicas), _Kind.OPTIONAL_GRANT)
        unregistered = len(facts.dump_threads)
    else:
        for replica in facts.replicas:
            if replica.server_id == ours:
                yield _Finding(
                    f"server-id {ours} is already used by the replica at {replica.host} "
                    f"(SHOW SLAVE HOSTS); two readers with one id disconnect each other: {fix}"
                )
        unregistered = len(facts.dump_threads) - len(facts.replicas)
    if unregistered > 0:
        yield _Finding(
            _unregistered_readers(ours, unregistered, facts.dump_threads), _Kind.UNCHECKED
        )
    if not any(grant.allows("PROCESS") for grant in _grants(facts) if grant.is_global):
        account = _account_sql(facts.account)
        yield _Finding(
            f"binlog readers of accounts other than {account} are not visible without the "
            f"PROCESS privilege; GRANT PROCESS ON *.* TO {account} to see them",
            _Kind.OPTIONAL_GRANT,
        )


def _replicas_refused(facts: ServerFacts, ours: int, refused: Refused) -> str:
    privilege = (
        "REPLICATION MASTER ADMIN"
        if facts.version.flavor is Flavor.MARIADB and facts.version.at_least(10, 5, 2)
        else "REPLICATION SLAVE"
    )
    return (
        f"server-id {ours} could not be compared with the replicas' ids: {refused.statement} "
        f"was refused ({refused.reason}); GRANT {privilege} ON *.* TO "
        f"{_account_sql(facts.account)} to check it"
    )


def _unregistered_readers(ours: int, count: int, threads: tuple[DumpThread, ...]) -> str:
    listed = ", ".join(str(thread) for thread in threads)
    return (
        f"server-id {ours} could not be compared with {count} connected binlog reader(s) "
        f"that registered no server id (binlog readers connected: {listed})"
    )


# -- resume position -------------------------------------------------------------------------


def _check_resume_file(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    resume = requirements.resume
    if resume is None or _binlog_off(facts):
        return
    if isinstance(facts.binary_logs, Refused):
        yield _Finding(
            f"could not check that the resume position {resume} is still on the server: "
            f"{facts.binary_logs.statement} was refused ({facts.binary_logs.reason})",
            kind=_Kind.UNCHECKED,
        )
        return
    problem = _resume_file_problem(resume, facts.binary_logs)
    if problem is not None:
        yield _Finding(problem)


def _check_resume_server(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    recorded, here = requirements.resume_server_uuid, facts.variables.get("server_uuid")
    if recorded is None or not here or recorded.lower() == here.lower():
        return
    yield _Finding(
        f"the resume position {requirements.resume} is in the binlog of the server "
        f"{recorded} (server_uuid), but this is the server {here}: binlog files and positions "
        "mean nothing on another server (a failover to a replica, or a server rebuilt from a "
        "backup); start from the GTID set the changelog reached, with new changelog tables "
        "(scan.startup.mode: specific-offset and scan.startup.specific-offset.gtid-set), or "
        f"{REBOOTSTRAP}"
    )


def _binlog_off(facts: ServerFacts) -> bool:
    return facts.variables.get("log_bin", "OFF").upper() not in ("ON", "1")


def _resume_file_problem(resume: BinlogPosition, logs: tuple[BinaryLog, ...]) -> str | None:
    sizes = {log.name: log.size for log in logs}
    if resume.file in sizes:
        size = sizes[resume.file]
        if resume.offset <= size:
            return None
        return (
            f"the resume position {resume} is past the end of {resume.file} ({size} bytes): "
            f"the binlog was reset or this is another server; {REBOOTSTRAP}"
        )
    oldest, newest = (logs[0].name, logs[-1].name) if logs else ("none", "none")
    if logs and _same_series(resume.file, oldest) and resume.file < oldest:
        return (
            f"the resume position {resume} is gone: {resume.file} has been purged (the oldest "
            f"binlog on the server is {oldest}); {REBOOTSTRAP}; and keep binlogs longer "
            "(binlog_expire_logs_seconds) so this does not happen again"
        )
    return (
        f"the resume position {resume} is not on this server: it has no binlog {resume.file} "
        f"(it has {oldest} to {newest}), so the binlog was reset or this is another server; "
        f"{REBOOTSTRAP}"
    )


def _same_series(first: str, second: str) -> bool:
    return first.rsplit(".", 1)[0] == second.rsplit(".", 1)[0]


def _check_resume_gtids(facts: ServerFacts, requirements: Requirements) -> Iterator[_Finding]:
    resume = requirements.resume_gtids
    purged = facts.purged_gtids
    if not resume or not purged or _binlog_off(facts):
        return
    if facts.version.flavor is Flavor.MARIADB:
        gone = _mariadb_gtids_gone(resume, purged)
        where = f"the oldest binlog starts after GTID {purged}"
    else:
        gone = not _mysql_gtid_subset(purged, resume)
        where = f"gtid_purged is {purged}"
    if gone:
        yield _Finding(
            f"the resume GTID set {resume} is no longer available: {where}, so transactions "
            f"it lacks have been purged; {REBOOTSTRAP}"
        )


def _mariadb_positions(text: str) -> dict[int, int]:
    """``domain-server-seq`` list to sequence number per domain."""
    positions: dict[int, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        domain, _, sequence = item.split("-")
        positions[int(domain)] = int(sequence)
    return positions


def _mariadb_gtids_gone(resume: str, purged: str) -> bool:
    """A domain the resume point has, purged past its sequence number."""
    at = _mariadb_positions(resume)
    return any(
        domain in at and at[domain] < sequence
        for domain, sequence in _mariadb_positions(purged).items()
    )


def _mysql_gtid_set(text: str) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """``uuid[:tag]:1-5:7,...`` to intervals per (uuid, tag)."""
    intervals: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for item in filter(None, (part.strip() for part in text.replace("\n", "").split(","))):
        uuid, *rest = item.split(":")
        tag = ""
        for part in rest:
            if not re.fullmatch(r"\d+(-\d+)?", part):
                tag = part.lower()
                continue
            start, _, end = part.partition("-")
            key = (uuid.lower(), tag)
            intervals.setdefault(key, []).append((int(start), int(end or start)))
    return intervals


def _mysql_gtid_subset(subset: str, superset: str) -> bool:
    have = _mysql_gtid_set(superset)
    return all(
        any(start >= low and end <= high for low, high in have.get(key, []))
        for key, wanted in _mysql_gtid_set(subset).items()
        for start, end in wanted
    )


_CHECKS: tuple[_Check, ...] = (
    _check_log_bin,
    _check_session_variable("binlog_format", "ROW"),
    _check_session_variable("binlog_row_image", "FULL"),
    _check_row_metadata,
    _check_compression,
    _check_partial_json,
    _check_gtid_mode,
    _check_binlog_retention,
    _check_privileges,
    _check_select,
    _check_bootstrap,
    _check_resource_group,
    _check_server_id,
    _check_resume_file,
    _check_resume_gtids,
    _check_resume_server,
)


# -- running ---------------------------------------------------------------------------------


_said: set[str] = set()
_said_lock = threading.Lock()


def _first_time(note: str) -> bool:
    """Whether this process has not said ``note`` yet: a standby checks at each takeover."""
    with _said_lock:
        if note in _said:
            return False
        _said.add(note)
        return True


def run_startup_checks(
    source: SourceConnection,
    *,
    databases: Collection[str] = (),
    resume: BinlogPosition | None = None,
    resume_gtids: str | None = None,
    resume_server_uuid: str | None = None,
    bootstrap: bool = False,
    incremental_snapshot: bool = True,
    resource_group: str | None = None,
) -> CheckResult:
    """Check ``source`` for this pipeline; raise ``StartupCheckError`` naming every problem.

    What could not be checked is returned and logged: as a warning (the first time in the
    process; at INFO after), or, when only a privilege the README's grants leave out would let
    it run, once per process at INFO with the grant.
    """
    with source.connect() as connection:
        facts = gather_facts(connection)
    requirements = Requirements(
        server_id=source.server_id,
        databases=tuple(databases),
        resume=resume,
        resume_gtids=resume_gtids,
        resume_server_uuid=resume_server_uuid,
        bootstrap=bootstrap,
        incremental_snapshot=incremental_snapshot,
        resource_group=resource_group,
    )
    result = evaluate(facts, requirements)
    for note in result.unchecked:
        if note not in result.optional_grants:
            # warned at the first start; a term after an outage says it again quietly
            first = _first_time(f"{source.host}:{source.port} incomplete")
            level = logging.WARNING if first else logging.INFO
            logger.log(level, "Start-up check incomplete: %s", note)
        elif _first_time(f"{source.host}:{source.port} {note}"):
            logger.info("Start-up check skipped (an optional privilege): %s", note)
    for warning in result.warnings:
        logger.warning("Start-up check: %s", warning)
    if result.problems:
        raise StartupCheckError(f"{source.host}:{source.port} ({facts.version})", result.problems)
    logger.info("Start-up checks passed for %s:%d (%s)", source.host, source.port, facts.version)
    return result
