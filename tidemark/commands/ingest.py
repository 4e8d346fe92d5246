"""``tidemark ingest FILE``: stream the source's binlog into the pipeline's changelog tables."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from tidemark.commands import Command
from tidemark.source import BinlogPosition


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline YAML file")
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (for scripts and tests)"
    )
    parser.add_argument(
        "--until-position",
        type=_position,
        metavar="FILE:POS",
        help="stop once every transaction before this binlog position is committed",
    )
    parser.set_defaults(handler=_ingest)


def _ingest(args: argparse.Namespace) -> int:
    # Imported here: `tidemark validate` must not pay for pyarrow and the binlog library.
    from ingest.changelog.reports import CommitReportPublisher, KafkaReports, PublisherSettings
    from ingest.launch import build_runner
    from ingest.settings import IngestSettings
    from ingest.stream.runner import StopWhen
    from tidemark.catalog import load_catalog
    from tidemark.config import load_pipeline
    from tidemark.config.model import StartupMode, reveal

    config = load_pipeline(args.file)
    catalog = load_catalog(config.tidemark.catalog_name, reveal(config.sink.catalog_properties))
    settings = IngestSettings.from_options(config.tidemark.ingest)
    reports = None
    if config.tidemark.reports is None:
        logging.getLogger(__name__).warning(
            "The pipeline has no tidemark.reports block: commit reports are not published, "
            "and the scheduler cannot see this pipeline's progress"
        )
    else:
        publisher = CommitReportPublisher(PublisherSettings.from_reports(config.tidemark.reports))
        reports = KafkaReports(publisher, catalog)
    runner = build_runner(config, catalog, reports=reports, settings=settings)
    if reports is not None:
        reports.start(runner.changelog_identifiers())
    until = args.until_position
    if config.source.startup.mode is StartupMode.SNAPSHOT:
        # only the existing rows: stream just far enough to make the bootstrap consistent
        until = min(until or runner.consistent_from(), runner.consistent_from())
    try:
        summary = runner.run(StopWhen(args.max_seconds, until))
    finally:
        if reports is not None:
            reports.close()
    sys.stdout.write(
        f"ingest stopped ({summary.stopped_because}) at {summary.position}: {summary.rows} rows "
        f"in {summary.commits} commits, {summary.reconnects} reconnects\n"
    )
    return 0


def _position(text: str) -> BinlogPosition:
    file, _, offset = text.rpartition(":")
    if not file or not offset.isdigit():
        raise argparse.ArgumentTypeError(f"must look like mariadb-bin.000002:1234, got: {text!r}")
    return BinlogPosition(file, int(offset))


COMMAND = Command("ingest", "stream the binlog into the changelog tables", _configure)
