"""Pipeline files for ingest tests, pointed at the local stack and the test's own names."""

from __future__ import annotations

from pathlib import Path

from ingest.stream.runner import IngestRunner, StopWhen
from tidemark.source import BinlogPosition, current_position
from tidemark.stack.endpoints import CatalogEndpoint, SourceEndpoint
from tidemark.stack.pipeline_file import local_pipeline


def write_pipeline(
    path: Path,
    source: SourceEndpoint,
    catalog: CatalogEndpoint,
    *,
    database: str,
    tables: str,
    namespace: str,
    server_id: int,
    startup: str = "latest-offset",
    source_options: str = "",
    extra: str = "",
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
        )
    )
    return path


def run_to_end(
    runner: IngestRunner, source: SourceEndpoint, server_id: int, max_seconds: float
) -> BinlogPosition:
    """Run ``runner`` until it has committed everything ``source`` has written so far;
    returns that position."""
    end = current_position(source.cdc_source(server_id))
    summary = runner.run(StopWhen(until_position=end, max_seconds=max_seconds))
    assert summary.stopped_because == f"reached {end}"
    return end
