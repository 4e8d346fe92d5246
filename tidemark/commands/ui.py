"""``tidemark ui FILE...``: serve the status page of one or more pipelines until stopped."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tidemark.commands.command import Command, stop_on_signals

if TYPE_CHECKING:
    from tidemark.pipeline import Pipeline
    from tidemark.status_pages import PageServer


def add_page_arguments(parser: argparse.ArgumentParser) -> None:
    """What the page shows and how often it reloads (``tidemark ui``, ``tidemark run``)."""
    from tidemark.status_pages import DEFAULT_HOURS, DEFAULT_REFRESH_SECONDS

    parser.add_argument(
        "--ui-hours",
        type=float,
        default=DEFAULT_HOURS,
        help=f"hours of freshness and error rows the page shows (default {DEFAULT_HOURS:g})",
    )
    parser.add_argument(
        "--ui-refresh",
        type=int,
        default=DEFAULT_REFRESH_SECONDS,
        help=f"seconds between the page's reloads (default {DEFAULT_REFRESH_SECONDS})",
    )


def _configure(parser: argparse.ArgumentParser) -> None:
    from tidemark.status_pages import DEFAULT_PORT

    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="pipeline YAML files")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the page's port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1; 0.0.0.0: every interface)",
    )
    add_page_arguments(parser)
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (for scripts and tests)"
    )
    parser.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    from tidemark.pipeline import open_pipelines

    server = serve_page(
        open_pipelines(args.files), args.port, args.ui_hours, args.ui_refresh, args.host
    )
    stop = threading.Event()
    stop_on_signals(stop)
    try:
        stop.wait(args.max_seconds)
    finally:
        server.close()
    return 0


def serve_page(
    pipelines: Sequence[Pipeline],
    port: int,
    hours: float,
    refresh_seconds: int,
    host: str = "127.0.0.1",
) -> PageServer:
    from tidemark.status_pages import StatusPages, serve

    pages = StatusPages(pipelines, _utc_now, hours=hours, refresh_seconds=refresh_seconds)
    return serve(pages, port, host)


def _utc_now() -> datetime:
    return datetime.now(UTC)


COMMAND = Command("ui", "serve a status page: freshness, windows and error rows", _configure)
