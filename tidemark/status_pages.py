"""The status page of one or more pipelines, served over HTTP from a thread (``tidemark ui``,
``tidemark run --ui-port``); docs/operations.md#the-status-page.

A page is built at most once per half refresh period, whoever asks: ten browsers reloading the
page of a thousand tables cost the catalog and the scheduler's state what one does. A pipeline
whose state cannot be read (its catalog is down, say) shows why, and the others still show.
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

from tidemark.errors import TidemarkError

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

    from tidemark.output.status_page import Unavailable
    from tidemark.pipeline import Pipeline, PipelinePage

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8470
DEFAULT_HOURS = 6.0
DEFAULT_REFRESH_SECONDS = 30


class StatusPages:
    """The page of ``pipelines``, rebuilt when a request finds it older than half ``refresh``."""

    def __init__(
        self,
        pipelines: Sequence[Pipeline],
        clock: Callable[[], datetime],
        hours: float = DEFAULT_HOURS,
        refresh_seconds: int = DEFAULT_REFRESH_SECONDS,
    ) -> None:
        self._pipelines = pipelines
        self._clock = clock
        self._history = timedelta(hours=hours)
        self._refresh = refresh_seconds
        self._lock = threading.Lock()
        self._built: tuple[datetime, str] | None = None

    def html(self) -> str:
        # imported here: every command's arguments name this module's defaults
        from tidemark.output.status_page import status_page

        with self._lock:  # one build at a time; the others wait for it and share it
            now = self._clock()
            if self._built is None or now - self._built[0] >= timedelta(seconds=self._refresh / 2):
                self._built = (now, status_page(list(self._pages(now)), now, self._refresh))
            return self._built[1]

    def _pages(self, now: datetime) -> Iterable[PipelinePage | Unavailable]:
        from tidemark.output.status_page import Unavailable

        for pipeline in self._pipelines:
            try:
                yield pipeline.page(now, now - self._history)
            except TidemarkError as error:
                yield Unavailable(pipeline.name, str(error))
            except Exception as error:  # a page shows what it can: the others still show
                logger.exception("The status page could not read pipeline %s", pipeline.name)
                yield Unavailable(pipeline.name, f"{type(error).__name__}: {error}")


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

    def application(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        if environ.get("PATH_INFO", "/") not in ("/", "/index.html"):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: the status page is at /\n"]
        body = pages.html().encode()
        start_response(
            "200 OK",
            [
                ("Content-Type", "text/html; charset=utf-8"),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
            ],
        )
        return [body]

    server = make_server(host, port, application, _ThreadingServer, _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="status-page", daemon=True)
    thread.start()
    logger.info("Serving the status page at http://%s:%d/", host, server.server_port)
    return PageServer(server, thread)


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        logger.debug("status page: %s", format % args)
