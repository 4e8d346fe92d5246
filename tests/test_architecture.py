"""The house rules of the code's layout, checked on the source: who may import whom."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tidemark", "ingest", "scheduler", "spark_jobs")
#: the application layer (the CLI, its commands, the ``Pipeline`` facade, the output, the demo and
#: the page server): opens pipelines and calls the stages
APPLICATION = ("tidemark.app",)
STAGES = ("ingest", "scheduler", "spark_jobs")
#: the fence around PyIceberg's internals: the only package that uses its private API
#: (``tidemark/lake/__init__.py``), against one PyIceberg version checked at its import; shared
#: core, so it imports no stage and no command either
LAKE = ("tidemark.lake",)
#: the Iceberg implementation of the lake seam (``tidemark.sinks``): the modules that read a
#: changelog's commits from Iceberg snapshots, with the fence under them. Everywhere else a
#: commit is a ``tidemark.sinks.commits.Commit``, whatever the format
ICEBERG_COMMITS = (
    "tidemark.sinks.iceberg",
    "ingest.changelog.table",
    "ingest.changelog.fencing",
    *LAKE,
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _imported(module: str, tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError(f"{module}: relative import of {node.module}")
            yield node.module
            # ``from package import module`` imports that module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


@cache
def imports() -> dict[str, frozenset[str]]:
    """Every module's imports, those inside functions too, as module names."""
    known = modules()
    return {
        module: frozenset(
            name
            for name in _imported(module, ast.parse(path.read_text()))
            if name in known or not name.startswith(PACKAGES)
        )
        for module, path in known.items()
    }


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _importers_of(prefixes: tuple[str, ...]) -> dict[str, list[str]]:
    return {
        module: sorted(name for name in names if _within(name, prefixes))
        for module, names in imports().items()
        if any(_within(name, prefixes) for name in names)
    }


def test_no_module_takes_part_in_an_import_circle() -> None:
    graph = {
        module: {name for name in names if name in modules() and name != module}
        for module, names in imports().items()
    }
    # A package's __init__ runs before its modules, so an edge to a package is an edge to it.
    done: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            circles.append(path[path.index(module) :] + [module])
            return
        if module in done:
            return
        for name in sorted(graph[module]):
            visit(name, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert circles == []


def test_the_contracts_and_the_shared_core_import_no_stage_and_no_command() -> None:
    core = [
        module
        for module in modules()
        if module.startswith("tidemark") and not _within(module, APPLICATION)
    ]
    offenders = {
        module: sorted(name for name in imports()[module] if _within(name, STAGES + APPLICATION))
        for module in core
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_only_the_application_layer_imports_more_than_one_stage() -> None:
    """A stage may use the shared core and the contracts; wiring stages together (ingest's
    reports to the scheduler, the scheduler to the Spark jobs) is the application's job."""
    offenders = {}
    for module, names in imports().items():
        if _within(module, APPLICATION):
            continue
        own = [stage for stage in STAGES if _within(module, (stage,))]
        others = sorted({s for s in STAGES for name in names if _within(name, (s,))} - set(own))
        if len(own) + len(others) > 1:
            offenders[module] = others
    assert offenders == {}


#: what builds a stage's run piece by piece; outside the stage, its service runs it
RUN_PARTS = {
    "ingest": ("ingest.launch", "ingest.stream.runner.IngestRunner"),
    "scheduler": ("scheduler.service.SchedulerService", "scheduler.engine.WindowEngine"),
}


@pytest.mark.parametrize("stage", sorted(RUN_PARTS))
def test_each_stage_owns_its_run_and_the_application_calls_its_service(stage: str) -> None:
    """``ingest.service.run`` and ``scheduler.service.run`` are the runs: the lease loop, the
    standby, the engines. An application that wired a run from its parts would be a second
    copy of it (``Pipeline.ingest`` was one)."""
    offenders = {
        module: sorted(name for name in _imported(module, tree) if _within(name, RUN_PARTS[stage]))
        for module, tree in _trees()
        if _within(module, APPLICATION)
    }
    assert {module: names for module, names in offenders.items() if names} == {}


def test_no_stage_imports_the_application_layer() -> None:
    """The application opens pipelines and calls the stages, giving them what they need (a
    display, a clock); a stage that imported it back would depend on its callers."""
    offenders = {
        module: names
        for module, names in _importers_of(APPLICATION).items()
        if _within(module, STAGES)
    }
    assert offenders == {}


def _names_of_tests(tree: ast.Module) -> Iterator[str]:
    """Modules of ``tests`` that ``tree`` imports, or names as text (``python -m tests.x``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        else:
            continue
        yield from (f"line {node.lineno}: {name}" for name in names if _within(name, ("tests",)))


def test_no_benchmark_depends_on_the_tests() -> None:
    """CI runs the tests, not the benchmarks: a benchmark that used a test's helper would break
    unseen when that helper changes. What both drive lives in ``bench`` and the tests import
    it from there."""
    offenders = {
        module: names
        for module, tree in _trees()
        if _within(module, ("bench",))
        if (names := list(_names_of_tests(tree)))
    }
    assert offenders == {}


@pytest.mark.parametrize("stage", ["scheduler", "spark_jobs"])
def test_the_scheduler_and_the_spark_jobs_read_changelogs_through_the_contracts(
    stage: str,
) -> None:
    offenders = {
        module: names
        for module, names in _importers_of(("ingest",)).items()
        if _within(module, (stage,))
    }
    assert offenders == {}


def test_iceberg_snapshots_are_read_by_the_iceberg_implementation_of_the_seam_only() -> None:
    """Commit reports, status, the runner and the window's bound work on ``Commit`` records,
    so that a second lake format is one more implementation of ``tidemark.sinks``."""
    importers = sorted(_importers_of(("pyiceberg.table.snapshots",)))
    assert importers, "nothing imports pyiceberg.table.snapshots: the rule checks nothing"
    assert [module for module in importers if not _within(module, ICEBERG_COMMITS)] == []


@pytest.mark.parametrize("stage", ["scheduler", "spark_jobs"])
def test_the_scheduler_and_the_window_jobs_read_no_snapshot_summary_themselves(
    stage: str,
) -> None:
    """They read a changelog's commits through ``tidemark.sinks`` (``Commit.properties``)."""
    offenders = {
        module: lines
        for module, tree in _trees()
        if _within(module, (stage,))
        if (
            lines := [
                node.lineno
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr == "additional_properties"
            ]
        )
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "module",
    [
        "tidemark.sinks.commits",
        "tidemark.sinks.protocols",
        "ingest.changelog.catalogs",
        "ingest.stream.runner",
        "ingest.stream.background_commits",
        "spark_jobs.merge.bound",
    ],
)
def test_what_works_on_commits_names_no_lake_format_but_through_the_seam(module: str) -> None:
    """The seam, ingest's commit loop and the window's bound import no PyIceberg table or
    snapshot: a format's types stay in its implementation (the registry may name a catalog)."""
    formats = ("pyiceberg.table", "pyiceberg.io", "pyiceberg.expressions", "pypaimon")
    assert sorted(name for name in imports()[module] if _within(name, formats)) == []


@pytest.mark.parametrize(
    ("library", "home"),
    [
        ("pymysqlreplication", ("ingest.binlog",)),
        ("zstandard", ("ingest.binlog.transaction_payload",)),
        (
            "confluent_kafka",
            (
                "ingest.changelog.reports",
                "scheduler.reports_consumer",
                "tidemark.stack.kafka",
            ),
        ),
        # the Spark jobs are the only part that needs a JVM
        ("pyspark", ("spark_jobs",)),
        ("py4j", ("spark_jobs",)),
        ("apscheduler", ("scheduler.service",)),
        ("psycopg2", ("scheduler.state", "tidemark.stack.postgres")),
        ("MySQLdb", ("tidemark.bulk_reads",)),
        ("prometheus_client", ("tidemark.metrics",)),
        ("yaml", ("tidemark.config",)),
        # one output layer: the rest prints through it (the demo's view composes its picture)
        ("rich", ("tidemark.app.output", "tidemark.app.demo.live_view")),
        # its template escapes every value; a page built elsewhere might not
        ("jinja2", ("tidemark.app.output.status_page",)),
        # PyIceberg's commit protocol, its Avro files and its SQL catalog: what commits use
        # of them is private too, so only the fence (tidemark.lake) reaches them
        ("pyiceberg.table.update", LAKE),
        ("pyiceberg.avro", LAKE),
        ("pyiceberg.catalog.sql", LAKE),
        # pinned, and patched where it writes: one module (ingest's writer, Spark's reads)
        ("pypaimon", ("tidemark.lake.paimon",)),
    ],
)
def test_a_third_party_sdk_is_imported_by_its_own_modules_only(
    library: str, home: tuple[str, ...]
) -> None:
    importers = sorted(_importers_of((library,)))
    assert importers, f"nothing imports {library}: the rule checks nothing"
    assert [module for module in importers if not _within(module, home)] == []


#: the private attributes of PyIceberg's objects the fence uses (a table's commit, a
#: transaction's retry, a catalog's staging and row writes, the Avro writers' insides). Generic
#: names PyIceberg also has (``_table``, ``_writer``) are left out: Tidemark's own classes use
#: them for their own state, and the import rule catches the modules those come from.
PYICEBERG_PRIVATE_ATTRIBUTES = frozenset(
    {
        "_do_commit",
        "_rebuild_snapshot_updates",
        "_snapshot_producers",
        "_clean_all_uncommitted",
        "_updates",
        "_create_staged_table",
        "_create_table_row",
        "_update_and_stage_table",
        "_write_metadata",
        "_parse_metadata_version",
        "_meta",
        "_output_file",
        "_write_header",
    }
)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _trees() -> Iterator[tuple[str, ast.Module]]:
    """Every module of the code, its tests and its benchmarks, parsed."""
    for folder in (*PACKAGES, "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield _module_name(path), ast.parse(path.read_text())


def _private_pyiceberg_imports(tree: ast.Module) -> Iterator[str]:
    """``from pyiceberg... import _name``, and any import of a private PyIceberg module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "pyiceberg" and any(_private(part) for part in parts):
                    yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] != "pyiceberg":
                continue
            if any(_private(part) for part in parts):
                yield node.module
            yield from (
                f"{node.module}.{alias.name}" for alias in node.names if _private(alias.name)
            )


def _private_pyiceberg_attributes(tree: ast.Module) -> Iterator[str]:
    """Uses of ``PYICEBERG_PRIVATE_ATTRIBUTES``, read, written or overridden."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in PYICEBERG_PRIVATE_ATTRIBUTES:
            yield f"line {node.lineno}: .{node.attr}"
        elif isinstance(node, ast.FunctionDef) and node.name in PYICEBERG_PRIVATE_ATTRIBUTES:
            yield f"line {node.lineno}: def {node.name}"


def test_only_the_lake_fence_imports_pyicebergs_private_names() -> None:
    offenders = {
        module: names
        for module, tree in _trees()
        if not _within(module, LAKE)
        if (names := sorted(set(_private_pyiceberg_imports(tree))))
    }
    assert offenders == {}, (
        "PyIceberg's private API is used in tidemark/lake/ only, where its version is checked: "
        "add what you need there, behind a public function"
    )


def test_only_the_lake_fence_uses_pyicebergs_private_attributes() -> None:
    offenders = {
        module: names
        for module, tree in _trees()
        if not _within(module, LAKE)
        if (names := list(_private_pyiceberg_attributes(tree)))
    }
    assert offenders == {}, (
        "PyIceberg's private attributes are used in tidemark/lake/ only, where its version is "
        "checked: add what you need there, behind a public function"
    )


def test_the_private_attributes_checked_are_pyicebergs_and_the_fences() -> None:
    """Each name the rule forbids is one PyIceberg defines and the fence uses, so the rule
    follows the fence: a name it stops using comes off the list."""
    import pyiceberg

    defined = set()
    for path in Path(pyiceberg.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                defined.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                defined.add(node.target.id)
    used = {
        name
        for module, tree in _trees()
        if _within(module, LAKE)
        for name in _private_pyiceberg_attributes(tree)
    }
    assert sorted(PYICEBERG_PRIVATE_ATTRIBUTES - defined) == []
    assert (
        sorted(
            name
            for name in PYICEBERG_PRIVATE_ATTRIBUTES
            if not any(use.endswith((f".{name}", f"def {name}")) for use in used)
        )
        == []
    )
