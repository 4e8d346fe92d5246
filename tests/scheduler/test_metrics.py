"""Prometheus scrapes the scheduler's metrics as text over HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from scheduler.metrics import Metrics, serve


def test_metrics_are_served_in_the_prometheus_text_format() -> None:
    metrics = Metrics()
    metrics.set("tidemark_watermark_lag_seconds", 4.5, pipeline="p", table="shop.orders")
    metrics.add("tidemark_window_failures_total", 1.0, pipeline="p", task="job:gmv")
    metrics.add("tidemark_window_failures_total", 1.0, pipeline="p", task="job:gmv")
    server = serve(metrics)
    try:
        url = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            content_type = response.headers["Content-Type"]
            body = response.read().decode()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"{url}/other", timeout=10)
    finally:
        server.close()

    assert content_type.startswith("text/plain; version=0.0.4")
    assert "# TYPE tidemark_window_failures_total counter" in body.splitlines()
    assert 'tidemark_watermark_lag_seconds{pipeline="p",table="shop.orders"} 4.5' in body
    assert 'tidemark_window_failures_total{pipeline="p",task="job:gmv"} 2' in body
