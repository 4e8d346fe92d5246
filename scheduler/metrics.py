"""Prometheus metrics of the scheduler, in the text exposition format, from a tiny HTTP server.

``prometheus_client`` is not a dependency, and the format is a few lines of text: each engine
updates a ``Metrics`` object, and ``serve`` answers ``GET /metrics`` with ``render()``.

- ``tidemark_watermark_lag_seconds{pipeline,table}``: the scheduler's clock minus the table's
  watermark, at the last tick;
- ``tidemark_window_delay_seconds{pipeline,task}``: for the last window that succeeded, the time
  from the window's end to the job being done (issue #8's "window end → job done");
- ``tidemark_window_failures_total{pipeline,task}``: failed attempts since the process started;
- ``tidemark_windows_held{pipeline,task}``: 1 while a window of the task is held;
- ``tidemark_late_rows{pipeline,table}``: changes the table received after a watermark already
  published had passed their commit time (a clock step back at the source), in all;
- ``tidemark_window_reruns_total{pipeline,task}``: earlier windows a job with
  ``rerun-late-windows`` ran again for late changes, since the process started.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HELP = {
    "tidemark_watermark_lag_seconds": ("gauge", "now minus the table's watermark"),
    "tidemark_window_delay_seconds": (
        "gauge",
        "from the end of the task's last succeeded window to its completion",
    ),
    "tidemark_window_failures_total": ("counter", "failed window attempts since start"),
    "tidemark_windows_held": ("gauge", "1 while a window of the task is held"),
    "tidemark_late_rows": (
        "counter",
        "changes received after a published watermark had passed their commit time, in all",
    ),
    "tidemark_window_reruns_total": (
        "counter",
        "earlier windows run again for late changes since start",
    ),
}

Labels = tuple[tuple[str, str], ...]


class Metrics:
    """Thread-safe values, keyed by metric name and labels."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, dict[Labels, float]] = {name: {} for name in _HELP}

    def set(self, name: str, value: float, **labels: str) -> None:
        with self._lock:
            self._values[name][tuple(sorted(labels.items()))] = value

    def add(self, name: str, value: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[name][key] = self._values[name].get(key, 0.0) + value

    def get(self, name: str, **labels: str) -> float | None:
        with self._lock:
            return self._values[name].get(tuple(sorted(labels.items())))

    def render(self) -> str:
        lines = []
        with self._lock:
            for name, (kind, text) in _HELP.items():
                lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
                for labels, value in sorted(self._values[name].items()):
                    shown = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                    lines.append(f"{name}{{{shown}}} {value:g}")
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass(frozen=True)
class MetricsServer:
    server: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve(metrics: Metrics, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
    """Answer ``GET /metrics`` on ``host:port`` (0: any free port) in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            body = metrics.render().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # a scrape every few seconds is not worth a log line

    server = ThreadingHTTPServer((host, port), Handler)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return MetricsServer(server, thread)
