"""Reading a Tidemark process's ``/metrics`` as Prometheus would."""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]


def labels(**values: str) -> Labels:
    """A sample's labels as ``scrape`` keys them."""
    return _sorted(values)


def scrape(port: int) -> Samples:
    """Every sample served at ``http://127.0.0.1:port/metrics``, by name and labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {
        (sample.name, _sorted(sample.labels)): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _sorted(values: Mapping[str, str]) -> Labels:
    return tuple(sorted(values.items()))
