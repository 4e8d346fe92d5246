"""The status page of one or more pipelines, served over HTTP from a thread (``tidemark ui``,
``tidemark run --ui-port``); docs/operations.md#the-status-page.

A page is built at most once per half refresh period, whoever asks: ten browsers reloading the
page of a thousand tables cost the catalog and the scheduler's state what one does. Each
pipeline's plan (which tables it has) is read from its source every ``REPLAN`` only, and kept
when the source cannot be read then. A pipeline whose state cannot be read (its catalog is
down, say) shows why, and the others still show.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tidemark.errors import TidemarkError, first_line
from tidemark.outages import OutageLogs

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

    from tidemark.app.output.status_page import Unavailable
    from tidemark.app.pipeline import Pipeline, PipelinePage, StateLocation
    from tidemark.config.plan import Plan

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8470
DEFAULT_HOURS, MAX_HOURS = 6.0, 24.0  # the scheduler keeps a day of samples
DEFAULT_REFRESH_SECONDS, MIN_REFRESH_SECONDS = 30, 5
#: how often a pipeline's tables are read again from its source
REPLAN = timedelta(minutes=5)
#: the page runs no script and loads nothing from elsewhere, and says so to the browser
_HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Cache-Control", "no-store"),
    ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"),
    ("X-Content-Type-Options", "nosniff"),
]


class StatusPages:
    """The page of ``pipelines``, rebuilt when a request finds it older than half ``refresh``."""

    def __init__(
        self,
        pipelines: Sequence[Pipeline],
        clock: Callable[[], datetime],
        hours: float = DEFAULT_HOURS,
        refresh_seconds: int = DEFAULT_REFRESH_SECONDS,
        location: StateLocation | None = None,
    ) -> None:
        self._pipelines = pipelines
        self._clock = clock
        self._history = timedelta(hours=hours)
        self._refresh = refresh_seconds
        self._location = location
        self._lock = threading.Lock()
        self._built: tuple[datetime, str] | None = None
        #: per pipeline (the object: two files may share a name), its plan and when read
        self._plans: dict[int, tuple[datetime, Plan]] = {}
        #: per pipeline (the same), the outages of the services its page reads
        self._outages: dict[int, OutageLogs] = {}

    def html(self) -> str:
        # imported here: every command's arguments name this module's defaults
        from tidemark.app.output.status_page import status_page

        with self._lock:  # one build at a time; the others wait for it and share it
            if self._built is None or self._clock() - self._built[0] >= self._max_age:
                now = self._clock()
                html = status_page(list(self._pages(now)), now, self._refresh)
                # stamped when done: a build slower than the period is not begun again at once
                self._built = (self._clock(), html)
            return self._built[1]

    @property
    def _max_age(self) -> timedelta:
        return timedelta(seconds=self._refresh / 2)

    def _pages(self, now: datetime) -> Iterable[PipelinePage | Unavailable]:
        from tidemark.app.output.status_page import Unavailable
        from tidemark.lake.outages import lake_outage

        for pipeline in self._pipelines:
            try:
                plan = self._plan(pipeline, now)
                page = pipeline.page(now, now - self._history, plan, self._location)
            except TidemarkError as error:
                yield Unavailable(pipeline.name, str(error))
                continue
            except Exception as error:  # a page shows what it can: the others still show
                outage = lake_outage(error)
                if outage is not None:  # said once, not at every build, while it lasts
                    log = self._outages_of(pipeline).of(outage.dependency)
                    log.down(outage.detail, "the status page shows what it can meanwhile")
                    yield Unavailable(pipeline.name, f"{log.waiting()}: {outage.detail}")
                    continue
                logger.exception("The status page could not read pipeline %s", pipeline.name)
                # the type only: a driver's message is for the log, not for any visitor
                yield Unavailable(pipeline.name, f"{type(error).__name__} (see the log)")
                continue
            self._outages_of(pipeline).up()
            yield page

    def _outages_of(self, pipeline: Pipeline) -> OutageLogs:
        logs = self._outages.get(id(pipeline))
        if logs is None:
            seconds = lambda: self._clock().timestamp()  # noqa: E731 - the page's clock
            logs = self._outages[id(pipeline)] = OutageLogs(
                pipeline.name, logger, clock=seconds, wall_clock=seconds
            )
        return logs

    def _plan(self, pipeline: Pipeline, now: datetime) -> Plan:
        """The pipeline's plan, read again every ``REPLAN``; the last one while its source
        cannot be read."""
        kept = self._plans.get(id(pipeline))
        if kept is not None and now - kept[0] < REPLAN:
            return kept[1]
        try:
            plan = pipeline.current_plan()
        except Exception as error:
            if kept is None:
                raise
            logger.warning(
                "The status page keeps %s's tables as they were: %s",
                pipeline.name,
                first_line(error),
            )
            return kept[1]
        self._plans[id(pipeline)] = (now, plan)
        return plan


@dataclass(frozen=True)
class PageServer:
    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve(pages: StatusPages, port: int, host: str = "127.0.0.1") -> PageServer:
    """Serve ``pages`` at ``http://host:port/`` (port 0: any free one) from a thread."""
    loopback = host in ("127.0.0.1", "localhost", "::1")

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        asked = environ.get("HTTP_HOST", "").rsplit(":", 1)[0].strip("[]")
        if loopback and asked not in ("127.0.0.1", "localhost", "::1"):
            # a page on loopback answers loopback names only: another site's page, whose
            # name was pointed at 127.0.0.1, cannot read it (DNS rebinding)
            return _plain(start_response, "421 Misdirected Request", "use http://127.0.0.1/\n")
        if environ.get("PATH_INFO", "/") not in ("/", "/index.html"):
            return _plain(start_response, "404 Not Found", "the status page is at /\n")
        body = pages.html().encode()
        start_response("200 OK", [*_HEADERS, ("Content-Length", str(len(body)))])
        return [body]

    server = make_server(host, port, application, _ThreadingServer, _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="status-page", daemon=True)
    thread.start()
    logger.info("Serving the status page at http://%s:%d/", host, server.server_port)
    return PageServer(server, thread)


def _plain(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
    return [text.encode()]


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        logger.debug("status page: %s", format % args)
