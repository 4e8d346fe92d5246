"""``tidemark ingest FILE``: stream the source's binlog into the pipeline's changelog tables."""

from __future__ import annotations

import argparse
import logging
import sys

from tidemark.app.commands.command import Command, add_file_argument
from tidemark.source import BinlogPosition

logger = logging.getLogger(__name__)


def _configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (for scripts and tests)"
    )
    parser.add_argument(
        "--until-position",
        type=_position,
        metavar="FILE:POS",
        help="stop once every transaction before this binlog position is committed",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics at http://127.0.0.1:PORT/metrics "
        "(docs/operations.md#metrics)",
    )
    # `tidemark run` starts ingest as its child: a run killed with SIGKILL must not leave it
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    parser.set_defaults(handler=_ingest)


def _ingest(args: argparse.Namespace) -> int:
    # Imported here: `tidemark validate` must not pay for pyarrow and the binlog library.
    from ingest.stream.runner import StopWhen
    from tidemark.app.output.bootstrap_progress import BootstrapProgress
    from tidemark.app.pipeline import Pipeline
    from tidemark.lifeline import end_with_parent

    if args.parent_pid is not None:
        end_with_parent(args.parent_pid)
    if args.metrics_port is not None:
        from tidemark.metrics import serve

        server = serve(args.metrics_port)
        logger.info("Metrics at http://127.0.0.1:%d/metrics", server.port)
    pipeline = Pipeline.open(args.file)
    # on a terminal the bootstrap's bars, else its log lines
    summary = pipeline.ingest(
        StopWhen(args.max_seconds, args.until_position), display=BootstrapProgress()
    )
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
