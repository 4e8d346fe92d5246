"""``tidemark ui FILE...``: serve the status page of one or more pipelines until stopped."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tidemark.app.commands.command import Command, add_state_arguments, stop_on_signals

if TYPE_CHECKING:
    from tidemark.app.page_server import PageServer
    from tidemark.app.pipeline import Pipeline, StateLocation


def add_page_arguments(parser: argparse.ArgumentParser) -> None:
    """What the page shows and how often it reloads (``tidemark ui``, ``tidemark run``)."""
    from tidemark.app.page_server import (
        DEFAULT_HOURS,
        DEFAULT_REFRESH_SECONDS,
        MAX_HOURS,
        MIN_REFRESH_SECONDS,
    )

    def hours(text: str) -> float:
        value = float(text)
        if not 0 < value <= MAX_HOURS:
            raise argparse.ArgumentTypeError(
                f"must be more than 0 and at most {MAX_HOURS:g} hours (the scheduler keeps a "
                f"day of samples), got: {text}"
            )
        return value

    def refresh(text: str) -> int:
        value = int(text)
        if value < MIN_REFRESH_SECONDS:
            raise argparse.ArgumentTypeError(
                f"must be {MIN_REFRESH_SECONDS} seconds or more, got: {text}"
            )
        return value

    parser.add_argument(
        "--ui-hours",
        type=hours,
        default=DEFAULT_HOURS,
        help=f"hours of freshness and error rows the page shows, at most {MAX_HOURS:g} "
        f"(default {DEFAULT_HOURS:g})",
    )
    parser.add_argument(
        "--ui-refresh",
        type=refresh,
        default=DEFAULT_REFRESH_SECONDS,
        help=f"seconds between the page's reloads, {MIN_REFRESH_SECONDS} or more "
        f"(default {DEFAULT_REFRESH_SECONDS})",
    )


def _configure(parser: argparse.ArgumentParser) -> None:
    from tidemark.app.page_server import DEFAULT_PORT

    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="pipeline YAML files")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"the page's port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1; 0.0.0.0: every interface, for a "
        "proxy of your own: the page has no login)",
    )
    add_page_arguments(parser)
    add_state_arguments(parser)
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this many seconds (for scripts and tests)"
    )
    parser.set_defaults(handler=_ui)


def _ui(args: argparse.Namespace) -> int:
    from tidemark.app.pipeline import StateLocation, open_pipelines

    location = StateLocation(args.state_dsn, args.state_schema)
    server = serve_page(
        open_pipelines(args.files), args.port, args.ui_hours, args.ui_refresh, args.host, location
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
    location: StateLocation | None = None,
) -> PageServer:
    from tidemark.app.page_server import StatusPages, serve

    pages = StatusPages(pipelines, _utc_now, hours, refresh_seconds, location)
    return serve(pages, port, host)


def _utc_now() -> datetime:
    return datetime.now(UTC)


COMMAND = Command("ui", "serve a status page: freshness, windows and error rows", _configure)
