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


def test_no_stage_imports_the_application_layer() -> None:
    """The application opens pipelines and calls the stages, giving them what they need (a
    display, a clock); a stage that imported it back would depend on its callers."""
    offenders = {
        module: names
        for module, names in _importers_of(APPLICATION).items()
        if _within(module, STAGES)
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
    ],
)
def test_a_third_party_sdk_is_imported_by_its_own_modules_only(
    library: str, home: tuple[str, ...]
) -> None:
    importers = sorted(_importers_of((library,)))
    assert importers, f"nothing imports {library}: the rule checks nothing"
    assert [module for module in importers if not _within(module, home)] == []
