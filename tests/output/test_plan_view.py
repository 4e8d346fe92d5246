"""``tidemark plan``'s view, from a plan made by hand (``tests/config/test_plan_against_mariadb``
runs the command against a server)."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

from tests.output.screen import screen
from tidemark.app.output.console import console_for, plain_text
from tidemark.app.output.plan import plan_view
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.config.plan import Onboarded, Plan, Refusal, SinkTable

PIPELINE = """\
source:
  type: mysql
  hostname: db
  username: cdc
  password: pw
  tables: shop.orders_\\d
sink:
  type: iceberg
  catalog.properties.type: rest
  catalog.properties.uri: http://catalog:8181
"""

PLAN = Plan(
    onboarded=(
        Onboarded("shop.orders_1", "shop.orders", ("id",), "primary key"),
        Onboarded("shop.orders_22", "shop.orders", ("id",), "primary key"),
    ),
    sinks=(
        SinkTable(
            "shop.orders",
            ("id",),
            "primary key",
            ("shop.orders_1", "shop.orders_22"),
            "shop.orders",
            timedelta(minutes=5),
            "shop.orders_changelog",
        ),
    ),
    refused=(Refusal("shop.audit_log", "no primary key, and no unique key given"),),
    skipped=(Refusal("shop._orders_1_gho", "a gh-ost table"),),
    blockers=(),
    notes=(),
)


def _config(tmp_path: Path) -> PipelineConfig:
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE)
    return load_pipeline(path)


def test_each_section_lists_its_tables_in_columns_two_spaces_apart(tmp_path: Path) -> None:
    config = _config(tmp_path)

    assert plain_text(plan_view(config, PLAN)).splitlines() == [
        f"plan for {config.path} (mysql cdc@db:3306)",
        "",
        "onboard: 2 tables -> 1 Iceberg table",
        "  shop.orders_1   -> shop.orders  key (id)  from primary key",
        "  shop.orders_22  -> shop.orders  key (id)  from primary key",
        "",
        "Iceberg tables:",
        "  shop.orders: key (id), 2 source tables, mirror shop.orders every 5 min, "
        "changelog shop.orders_changelog",
        "",
        "cannot onboard: 1 table",
        "  shop.audit_log  no primary key, and no unique key given",
        "",
        "skipped: 1 table",
        "  shop._orders_1_gho  a gh-ost table",
    ]


def test_on_a_narrow_terminal_a_reason_wraps_within_its_column(tmp_path: Path) -> None:
    terminal = io.StringIO()

    console_for(terminal, terminal=True, width=40).print(plan_view(_config(tmp_path), PLAN))

    shown = screen(terminal.getvalue())
    refused = shown.index("cannot onboard: 1 table")
    assert shown[refused + 1 : refused + 4] == [
        "  shop.audit_log  no primary key, and no",
        "                  unique key given",
        "",
    ]
