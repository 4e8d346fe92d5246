"""configs/grafana/tidemark.json, the dashboard of the metrics: every series it plots is one a
Tidemark process serves (``tidemark.metrics``), so a renamed metric cannot leave a panel empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tidemark.metrics import REGISTRY

DASHBOARD = Path(__file__).parents[1] / "configs" / "grafana" / "tidemark.json"

#: the series each kind of metric is exposed as, after its family name
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def served() -> set[str]:
    return {
        family.name + suffix for family in REGISTRY.collect() for suffix in _SUFFIXES[family.type]
    }


def test_every_series_the_dashboard_plots_is_served() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    plotted = {name for expr in expressions for name in re.findall(r"\btidemark_\w+", expr)}

    assert plotted - served() == set()
    assert {"tidemark_ingest_watermark_lag_seconds", "tidemark_scheduler_windows_total"} <= plotted


def test_every_panel_has_an_id_and_a_place_of_its_own() -> None:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    places = [(p["gridPos"]["x"], p["gridPos"]["y"]) for p in panels]

    assert len({panel["id"] for panel in panels}) == len(panels)
    assert len(set(places)) == len(places)
