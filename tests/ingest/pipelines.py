"""Pipeline files for ingest tests, pointed at the local stack and the test's own names."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ingest.stream.runner import IngestRunner, StopWhen
from tidemark.source import BinlogPosition, current_position
from tidemark.stack.endpoints import LakeEndpoint, SourceEndpoint
from tidemark.stack.pipeline_file import local_pipeline


def write_pipeline(
    path: Path,
    source: SourceEndpoint,
    catalog: LakeEndpoint,
    *,
    database: str,
    tables: str,
    namespace: str,
    server_id: int,
    startup: str = "latest-offset",
    source_options: str = "",
    extra: str = "",
    paimon_warehouse: str | None = None,
) -> Path:
    """A pipeline reading ``database``'s ``tables`` pattern on ``source`` into ``namespace``."""
    path.write_text(
        local_pipeline(
            source,
            catalog,
            database=database,
            tables=tables,
            namespace=namespace,
            server_id=server_id,
            startup=startup,
            source_options=source_options,
            extra=extra,
            paimon_warehouse=paimon_warehouse,
        )
    )
    return path


def orders_pipeline(
    folder: Path,
    source: SourceEndpoint,
    catalog: LakeEndpoint,
    *,
    database: str,
    namespace: str,
    server_id: int,
    extra: str = "",
) -> Path:
    """``folder``'s pipeline of ``database``'s ``orders`` table, bootstrapped and streamed."""
    return write_pipeline(
        folder / "p.yaml",
        source,
        catalog,
        database=database,
        tables="orders",
        namespace=namespace,
        server_id=server_id,
        startup="initial",
        extra=extra,
    )


def reports_block(topic: str, kafka: Mapping[str, str]) -> str:
    """A ``tidemark:`` block publishing commit reports to ``topic`` with these librdkafka
    properties (``bootstrap.servers`` at least)."""
    properties = "".join(f"    kafka.{key}: {value}\n" for key, value in kafka.items())
    return f"tidemark:\n  reports:\n    topic: {topic}\n{properties}"


def run_to_end(
    runner: IngestRunner, source: SourceEndpoint, server_id: int, max_seconds: float
) -> BinlogPosition:
    """Run ``runner`` until it has committed everything ``source`` has written so far;
    returns that position."""
    end = current_position(source.cdc_source(server_id))
    summary = runner.run(StopWhen(until_position=end, max_seconds=max_seconds))
    assert summary.stopped_because == f"reached {end}"
    return end
