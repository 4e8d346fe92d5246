"""Prometheus scrapes a process's metrics (``tidemark.metrics``) as text over HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request

from tidemark.metrics import SchedulerMetrics, serve


def test_metrics_are_served_in_the_prometheus_text_format() -> None:
    metrics = SchedulerMetrics("served")
    metrics.watermark_lag("shop.orders", 4.5)
    metrics.failed("job:gmv", held=False)
    metrics.failed("job:gmv", held=False)
    server = serve(0)
    try:
        url = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            content_type = response.headers["Content-Type"]
            body = response.read().decode()
    finally:
        server.close()

    assert content_type.startswith("text/plain; version=0.0.4")
    assert "# TYPE tidemark_scheduler_windows_total counter" in body.splitlines()
    assert (
        'tidemark_scheduler_watermark_lag_seconds{pipeline="served",table="shop.orders"} 4.5'
        in body
    )
    assert (
        'tidemark_scheduler_windows_total{outcome="failed",pipeline="served",task="job:gmv"} 2.0'
        in body
    )
