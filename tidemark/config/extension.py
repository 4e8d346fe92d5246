"""``tidemark:``: Tidemark's own block, for what Flink CDC has no words for.

Mirrors (the merged, current-state copy of each sink table, refreshed every window), per-table
merge keys, and scheduled Spark SQL jobs. Flink CDC 3.6+ rejects unknown top-level keys, so
``tidemark export-flink-cdc`` prints the file without this block. The schema::

    tidemark:
      catalog-name: tidemark          # the Iceberg catalog's name on every client
      window: 5 min                   # default window of mirrors and jobs; divides a day
      reports:                        # commit reports to Kafka, for the scheduler
        topic: tidemark.commit-reports
        kafka.bootstrap.servers: 127.0.0.1:47092    # any librdkafka property after kafka.
      ingest:
        flush-interval: 2 s           # commit at least this often ...
        flush-rows: 50000             # ... or when this many rows wait
        max-transaction-rows: 100000  # larger transactions are committed in parts
        idle-commit-interval: 10 s    # empty commits move idle tables' watermarks
        snapshot-max-rows-per-second: 20000   # caps each bootstrap reader (default: none)
      maintenance:                    # run by the scheduler, between a table's windows
        interval: 15 min              # compact and expire each table this often
        enabled: true
      tables:
        shop.orders:                  # a sink table, as routed
          unique-key: order_no        # merge key when it is not the primary key
          changelog-table: shop.orders_changelog
          mirror:                     # or `mirror: false`
            enabled: true
            table: shop.orders
            window: 5 min
            deletes: apply            # or keep: deleted rows stay, marked
            table-properties: {write.target-file-size-bytes: "134217728"}
      jobs:
        orders_per_minute:
          inputs: [shop.orders]       # sink tables whose windows gate the job
          window: 5 min
          sql: [sql/orders_per_minute.sql]   # relative to this file
          variables: {region: eu}     # ${region} in the SQL
          spark: {spark.sql.shuffle.partitions: "8"}
          retries: 2
          retry-delay: 1 min
          coalesce: false             # true: when behind, run the missed windows as one
          rerun-late-windows: false   # true: run a window again when late changes arrive for it
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode, Node, Scalar
from tidemark.config.model import (
    DEFAULT_REPORTS_TOPIC,
    DEFAULT_WINDOW,
    IngestOptions,
    JobConfig,
    MaintenanceOptions,
    MirrorOptions,
    Properties,
    ReportsSettings,
    TableOptions,
    TidemarkSettings,
)
from tidemark.config.patterns import split_table_id
from tidemark.config.secrets import is_secret_key
from tidemark.config.values import (
    BadValue,
    format_duration,
    parse_bool,
    parse_columns,
    parse_duration,
    parse_int,
)

EXTENSION_KEY = "tidemark"
EXTENSION_KEYS = ("catalog-name", "window", "reports", "ingest", "maintenance", "tables", "jobs")
MAINTENANCE_KEYS = ("interval", "enabled")
INGEST_KEYS = (
    "flush-interval",
    "flush-rows",
    "max-transaction-rows",
    "idle-commit-interval",
    "snapshot-max-rows-per-second",
)
TABLE_KEYS = ("unique-key", "changelog-table", "mirror")
MIRROR_KEYS = ("enabled", "table", "window", "deletes", "table-properties")
JOB_KEYS = (
    "inputs",
    "window",
    "sql",
    "variables",
    "spark",
    "retries",
    "retry-delay",
    "coalesce",
    "rerun-late-windows",
)
#: variables Tidemark sets for every window run; user variables may not start with ``window_``
BUILT_IN_VARIABLES = (
    "window_start",
    "window_end",
    "window_start_ms",
    "window_end_ms",
    "dt",
    "hour",
    "job_name",
)

DAY = timedelta(days=1)
MIN_WINDOW = timedelta(minutes=1)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_SQL_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def parse_window(text: str) -> timedelta:
    """A window length: at least a minute, in whole seconds, dividing a day evenly."""
    window = parse_duration(text, unit_required=True)
    if window < MIN_WINDOW:
        raise BadValue("must be at least 1 min: each window is a Spark job")
    if window % timedelta(seconds=1) or DAY % window:
        raise BadValue(
            "must divide a day evenly, so windows line up with midnight",
            "use for example 1 min, 5 min, 10 min, 15 min, 30 min, 1 h, 2 h, 6 h or 1 d",
        )
    return window


def read_extension(reader: Reader, node: Node | None, base: Path) -> TidemarkSettings | None:
    if node is None:
        return TidemarkSettings()
    path = EXTENSION_KEY
    block = reader.mapping(node, path)
    if block is None:
        return None
    reader.check_keys(block, path, "the tidemark block", EXTENSION_KEYS)
    fields: dict[str, Any] = {}
    name = reader.value(block.get("catalog-name"), child(path, "catalog-name"), _identifier)
    if name is not None:
        fields["catalog_name"] = name
    window = reader.value(block.get("window"), child(path, "window"), parse_window)
    fields["window"] = window or DEFAULT_WINDOW
    tables = _tables(reader, block.get("tables"), child(path, "tables"))
    jobs = _jobs(reader, block.get("jobs"), child(path, "jobs"), base, fields["window"])
    reports = _reports(reader, block.get("reports"), child(path, "reports"))
    ingest = _ingest(reader, block.get("ingest"), child(path, "ingest"))
    maintenance = _maintenance(reader, block.get("maintenance"), child(path, "maintenance"))
    if tables is None or jobs is None or reports is False or ingest is None or maintenance is None:
        return None
    fields["reports"] = reports
    fields["ingest"] = ingest
    fields["maintenance"] = maintenance
    settings = TidemarkSettings(**fields, tables=tables, jobs=tuple(jobs))
    jobs_ok = _check_jobs(reader, block.get("jobs"), settings)
    _check_names(reader, block.get("tables"), settings)
    return settings if jobs_ok else None


def _reports(reader: Reader, node: Node | None, path: str) -> ReportsSettings | None | bool:
    """The reports block; ``False`` when it is malformed (None means absent)."""
    if node is None:
        return None
    plain = reader.string_map(node, path)
    if plain is None:
        return False
    unknown = [k for k in plain if k != "topic" and not k.startswith("kafka.")]
    for key in unknown:
        reader.error(
            node,
            child(path, key),
            "is not a reports option: use 'topic', or 'kafka.' followed by a librdkafka "
            "property such as kafka.bootstrap.servers",
        )
    kafka: Properties = {
        key.removeprefix("kafka."): SecretStr(value) if is_secret_key(key) else value
        for key, value in plain.items()
        if key.startswith("kafka.")
    }
    if "bootstrap.servers" not in kafka:
        reader.error(
            node,
            path,
            "the reports block is missing the required key 'kafka.bootstrap.servers' "
            "(where Kafka is, e.g. kafka.bootstrap.servers: kafka:9092)",
        )
    if unknown or "bootstrap.servers" not in kafka:
        return False
    return ReportsSettings(topic=plain.get("topic", DEFAULT_REPORTS_TOPIC), kafka=kafka)


def _ingest(reader: Reader, node: Node | None, path: str) -> IngestOptions | None:
    if node is None:
        return IngestOptions()
    block = reader.mapping(node, path)
    if block is None:
        return None
    reader.check_keys(block, path, "ingest options", INGEST_KEYS)
    values: dict[str, Any] = {
        "flush_interval": reader.value(
            block.get("flush-interval"), child(path, "flush-interval"), _positive_duration
        ),
        "flush_rows": reader.value(
            block.get("flush-rows"), child(path, "flush-rows"), _positive_int
        ),
        "max_transaction_rows": reader.value(
            block.get("max-transaction-rows"), child(path, "max-transaction-rows"), _positive_int
        ),
        "idle_commit_interval": reader.value(
            block.get("idle-commit-interval"),
            child(path, "idle-commit-interval"),
            _positive_duration,
        ),
        "snapshot_max_rows_per_second": reader.value(
            block.get("snapshot-max-rows-per-second"),
            child(path, "snapshot-max-rows-per-second"),
            _positive_int,
        ),
    }
    given = {key: value for key, value in values.items() if value is not None}
    if len(given) != sum(block.get(key.replace("_", "-")) is not None for key in values):
        return None
    return IngestOptions(**given)


def _maintenance(reader: Reader, node: Node | None, path: str) -> MaintenanceOptions | None:
    if node is None:
        return MaintenanceOptions()
    block = reader.mapping(node, path)
    if block is None:
        return None
    reader.check_keys(block, path, "maintenance options", MAINTENANCE_KEYS)
    values: dict[str, Any] = {
        "interval": reader.value(
            block.get("interval"), child(path, "interval"), _positive_duration
        ),
        "enabled": reader.value(block.get("enabled"), child(path, "enabled"), parse_bool),
    }
    given = {key: value for key, value in values.items() if value is not None}
    if len(given) != sum(block.get(key) is not None for key in values):
        return None
    return MaintenanceOptions(**given)


def _positive_duration(text: str) -> timedelta:
    duration = parse_duration(text, unit_required=True)
    if duration <= timedelta(0):
        raise BadValue("must be longer than zero")
    return duration


def _positive_int(text: str) -> int:
    number = parse_int(text)
    if number < 1:
        raise BadValue("must be at least 1")
    return number


def _identifier(text: str) -> str:
    if not _NAME.fullmatch(text):
        raise BadValue("must be a name of letters, digits and _")
    return text


def _table_id(text: str) -> str:
    if split_table_id(text) is None:
        raise BadValue("must be a database.table name (an Iceberg namespace and table)")
    return text


def _tables(reader: Reader, node: Node | None, path: str) -> dict[str, TableOptions] | None:
    if node is None:
        return {}
    block = reader.mapping(node, path)
    if block is None:
        return None
    tables: dict[str, TableOptions] = {}
    ok = True
    for key, value in block:
        table_path = child(path, key.name, quote=True)
        if split_table_id(key.name) is None:
            reader.problems.error(
                key.mark.line,
                table_path,
                "must be a sink table's database.table name, as the route gives it",
            )
            ok = False
            continue
        options = _table(reader, value, table_path)
        if options is None:
            ok = False
        else:
            tables[key.name] = options
    return tables if ok else None


def _table(reader: Reader, node: Node, path: str) -> TableOptions | None:
    block = reader.mapping(node, path)
    if block is None:
        return None
    reader.check_keys(block, path, "a table's options", TABLE_KEYS)
    fields: dict[str, Any] = {}
    if block.get("unique-key") is not None:
        fields["unique_key"] = _columns(reader, block.get("unique-key"), child(path, "unique-key"))
        if fields["unique_key"] is None:
            return None
    changelog = reader.value(
        block.get("changelog-table"), child(path, "changelog-table"), _table_id
    )
    if changelog is not None:
        fields["changelog_table"] = changelog
    mirror = _mirror(reader, block.get("mirror"), child(path, "mirror"))
    if mirror is None or (block.get("changelog-table") is not None and changelog is None):
        return None
    return TableOptions(mirror=mirror, **fields)


def _columns(reader: Reader, node: Node | None, path: str) -> tuple[str, ...] | None:
    items = reader.text_list(node, path, "write column names: unique-key: [id, region]")
    if items is None:
        return None
    try:
        return parse_columns(",".join(items))
    except BadValue as bad:
        reader.error(node, path, bad.message)
        return None


def _mirror(reader: Reader, node: Node | None, path: str) -> MirrorOptions | None:
    if node is None:
        return MirrorOptions()
    if isinstance(node, Scalar):
        enabled = reader.value(node, path, parse_bool)
        return None if enabled is None else MirrorOptions(enabled=enabled)
    block = reader.mapping(node, path)
    if block is None:
        return None
    reader.check_keys(block, path, "mirror options", MIRROR_KEYS)
    values: dict[str, Any] = {
        "enabled": reader.value(block.get("enabled"), child(path, "enabled"), parse_bool),
        "table": reader.value(block.get("table"), child(path, "table"), _table_id),
        "window": reader.value(block.get("window"), child(path, "window"), parse_window),
        "deletes": reader.choice(block.get("deletes"), child(path, "deletes"), ("apply", "keep")),
        "table-properties": _properties(
            reader, block.get("table-properties"), child(path, "table-properties")
        ),
    }
    if any(block.get(key) is not None and value is None for key, value in values.items()):
        return None
    given = {key.replace("-", "_"): value for key, value in values.items() if value is not None}
    return MirrorOptions(**given)


def _properties(reader: Reader, node: Node | None, path: str) -> Properties | None:
    plain = reader.string_map(node, path)
    if plain is None:
        return None
    return {k: SecretStr(v) if is_secret_key(k) else v for k, v in plain.items()}


def _jobs(
    reader: Reader, node: Node | None, path: str, base: Path, default_window: timedelta
) -> list[JobConfig] | None:
    if node is None:
        return []
    block = reader.mapping(node, path)
    if block is None:
        return None
    jobs: list[JobConfig] = []
    ok = True
    for key, value in block:
        job_path = child(path, key.name, quote=True)
        if not _JOB_NAME.fullmatch(key.name):
            reader.problems.error(
                key.mark.line,
                job_path,
                "a job name must start with a letter and hold only letters, digits, _ and -",
            )
            ok = False
            continue
        job = _job(reader, key.name, value, job_path, base, default_window)
        if job is None:
            ok = False
        else:
            jobs.append(job)
    return jobs if ok else None


def _job(
    reader: Reader, name: str, node: Node, path: str, base: Path, default_window: timedelta
) -> JobConfig | None:
    block = reader.mapping(node, path)
    if block is None:
        return None
    reader.check_keys(block, path, "a job", JOB_KEYS, required=("inputs", "sql"))
    inputs = reader.text_list(block.get("inputs"), child(path, "inputs"), "[shop.orders]")
    for index, table in enumerate(inputs or ()):
        if split_table_id(table) is None:
            reader.error(
                block.get("inputs"),
                f"{child(path, 'inputs')}[{index}]",
                f"must be a sink table's database.table name, got: {table!r}",
            )
            inputs = None
    if inputs == ():
        reader.error(block.get("inputs"), child(path, "inputs"), "must name at least one table")
        inputs = None
    sql = _sql_files(reader, block.get("sql"), child(path, "sql"), base)
    variables = _variables(reader, block.get("variables"), child(path, "variables"))
    spark = _spark(reader, block.get("spark"), child(path, "spark"))
    window = reader.value(block.get("window"), child(path, "window"), parse_window)
    retries = reader.value(
        block.get("retries"), child(path, "retries"), lambda text: parse_int(text, (0, 100))
    )
    delay = reader.value(
        block.get("retry-delay"),
        child(path, "retry-delay"),
        lambda text: parse_duration(text, unit_required=True),
    )
    coalesce = reader.value(block.get("coalesce"), child(path, "coalesce"), parse_bool)
    rerun = reader.value(
        block.get("rerun-late-windows"), child(path, "rerun-late-windows"), parse_bool
    )
    required = (inputs, sql, variables, spark)
    optional = {
        "window": window,
        "retries": retries,
        "retry-delay": delay,
        "coalesce": coalesce,
        "rerun-late-windows": rerun,
    }
    if any(value is None for value in required) or any(
        block.get(key) is not None and value is None for key, value in optional.items()
    ):
        return None
    assert inputs is not None and sql is not None
    _check_sql_references(reader, block, path, sql, variables or {})
    fields: dict[str, Any] = {
        "name": name,
        "inputs": inputs,
        "window": window or default_window,
        "sql": sql,
        "variables": variables,
        "spark": spark,
    }
    if retries is not None:
        fields["retries"] = retries
    if delay is not None:
        fields["retry_delay"] = delay
    if coalesce is not None:
        fields["coalesce"] = coalesce
    if rerun is not None:
        fields["rerun_late_windows"] = rerun
    return JobConfig(**fields)


def _sql_files(reader: Reader, node: Node | None, path: str, base: Path) -> tuple[Path, ...] | None:
    names = reader.text_list(node, path, "sql: [sql/report.sql]")
    if names is None:
        return None
    if not names:
        reader.error(node, path, "must name at least one SQL file")
        return None
    files = []
    for index, name in enumerate(names):
        file = (base / name).resolve()
        if not file.is_file():
            where = "relative to the pipeline file's folder" if not Path(name).is_absolute() else ""
            reader.error(
                node,
                f"{path}[{index}]" if len(names) > 1 else path,
                f"SQL file {name!r} does not exist ({where or 'absolute path'}: {file})",
            )
            continue
        files.append(file)
    return tuple(files) if len(files) == len(names) else None


def _variables(reader: Reader, node: Node | None, path: str) -> Properties | None:
    values = _properties(reader, node, path) if node is not None else {}
    if values is None or node is None:
        return values
    block = node if isinstance(node, MapNode) else None
    for name in values:
        key = block.key(name) if block else None
        line = key.mark.line if key else None
        if not _NAME.fullmatch(name):
            reader.problems.error(
                line, child(path, name), "a variable name holds only letters, digits and _"
            )
            return None
        if name.startswith("window_") or name in BUILT_IN_VARIABLES:
            reader.problems.error(
                line,
                child(path, name),
                f"is set by Tidemark for every window ({', '.join(BUILT_IN_VARIABLES)}): "
                "choose another name",
            )
            return None
    return values


def _spark(reader: Reader, node: Node | None, path: str) -> Properties | None:
    values = _properties(reader, node, path) if node is not None else {}
    if values is None or node is None:
        return values
    block = node if isinstance(node, MapNode) else None
    bad = [name for name in values if not name.startswith("spark.")]
    for name in bad:
        key = block.key(name) if block else None
        reader.problems.error(
            key.mark.line if key else None,
            child(path, name),
            "is not a Spark setting: Spark settings start with 'spark.'",
        )
    return None if bad else values


def _check_sql_references(
    reader: Reader, block: MapNode, path: str, files: tuple[Path, ...], variables: Properties
) -> None:
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reader.error(block.get("sql"), child(path, "sql"), f"cannot read {file}: {error}")
            continue
        if not text.strip():
            reader.warning(block.get("sql"), child(path, "sql"), f"{file.name} is empty")
        unknown = sorted(
            {
                name
                for name in _SQL_REFERENCE.findall(text)
                if name not in variables and name not in BUILT_IN_VARIABLES
            }
        )
        if unknown:
            reader.warning(
                block.get("sql"),
                child(path, "sql"),
                f"{file.name} uses {', '.join('${' + n + '}' for n in unknown)}, which this job "
                f"does not define under variables (Tidemark sets {', '.join(BUILT_IN_VARIABLES)})",
            )


def _check_jobs(reader: Reader, node: Node | None, settings: TidemarkSettings) -> bool:
    ok = True
    block = node if isinstance(node, MapNode) else None
    for job in settings.jobs:
        job_node = block.get(job.name) if block else None
        path = child("tidemark.jobs", job.name, quote=True)
        for table in job.inputs:
            if settings.mirror_table(table) is None:
                reader.error(
                    job_node,
                    child(path, "inputs"),
                    f"{table} has its mirror turned off, and jobs run after the mirror merge: "
                    f'turn it on under tidemark.tables."{table}".mirror',
                )
                ok = False
                continue
            mirror_window = settings.mirror_window(table)
            if job.window % mirror_window:
                reader.error(
                    job_node,
                    child(path, "window"),
                    f"({format_duration(job.window)}) must be a multiple of the mirror window "
                    f"of its input {table} ({format_duration(mirror_window)})",
                )
                ok = False
    return ok


def _check_names(reader: Reader, node: Node | None, settings: TidemarkSettings) -> None:
    """Mirror and changelog names must not collide with each other."""
    owners: dict[str, str] = {}
    block = node if isinstance(node, MapNode) else None
    for table in settings.tables:
        names = [("changelog", settings.changelog_table(table))]
        mirror = settings.mirror_table(table)
        if mirror is not None:
            names.append(("mirror", mirror))
        for role, name in names:
            owner = f"the {role} of {table}"
            if name in owners:
                reader.error(
                    block.get(table) if block else None,
                    child("tidemark.tables", table, quote=True),
                    f"{owner} is named {name}, like {owners[name]}: give one another name",
                )
            owners[name] = owner
