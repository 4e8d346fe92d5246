"""``tidemark plan``: which tables a pipeline onboards, where to and what not, as a view (text
with tables of columns) or JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Column, Table
from rich.text import Text

from tidemark.app.output.tables import column_table
from tidemark.config import PipelineConfig
from tidemark.config.plan import Plan, Refusal
from tidemark.config.values import format_duration


def plan_view(config: PipelineConfig, plan: Plan) -> RenderableType:
    source = config.source
    parts: list[RenderableType] = [
        f"plan for {config.path} (mysql {source.username}@{source.hostname}:{source.port})"
    ]
    sinks = {sink.name for sink in plan.sinks}
    parts += [
        "",
        _heading(
            f"onboard: {_count(len({m.source for m in plan.onboarded}), 'table')} -> "
            f"{_count(len(sinks), 'Iceberg table')}"
        ),
    ]
    if plan.onboarded:
        parts.append(
            _columns(
                (m.source, f"-> {m.sink}", f"key ({', '.join(m.key)})", f"from {m.key_origin}")
                for m in plan.onboarded
            )
        )
    if plan.sinks:
        parts += ["", _heading("Iceberg tables:")]
        for sink in plan.sinks:
            mirror = (
                f"mirror {sink.mirror} every {format_duration(sink.mirror_window)}"
                if sink.mirror
                else "no mirror"
            )
            parts.append(
                f"  {sink.name}: key ({', '.join(sink.key)}), "
                f"{_count(len(sink.sources), 'source table')}, {mirror}, "
                f"changelog {sink.changelog}"
            )
    parts += _section("cannot onboard", plan.refused)
    parts += _section("skipped", plan.skipped)
    if plan.blockers:
        parts += ["", _heading("blocking problems:", "red"), *(f"  {b}" for b in plan.blockers)]
    if plan.notes:
        parts += ["", _heading("notes:"), *(f"  {n}" for n in plan.notes)]
    if config.tidemark.jobs:
        parts += ["", _heading("jobs:")]
        for job in config.tidemark.jobs:
            parts.append(
                f"  {job.name}: every {format_duration(job.window)} after "
                f"{', '.join(job.inputs)}; runs {', '.join(p.name for p in job.sql)}"
            )
    return Group(*(Text(part) if isinstance(part, str) else part for part in parts))


def _section(title: str, items: Sequence[Refusal]) -> list[RenderableType]:
    if not items:
        return []
    return [
        "",
        _heading(f"{title}: {_count(len(items), 'table')}", "yellow"),
        _columns((item.table, item.reason) for item in items),
    ]


def _heading(text: str, style: str = "") -> Text:
    return Text(text, style=f"bold {style}".strip())


def _columns(rows: Iterable[tuple[str, ...]]) -> Table:
    """Columns two spaces apart under a heading; on a narrow terminal the last one wraps."""
    rows = list(rows)
    table = column_table(*(Column() for _ in rows[0]), gap=2, indent=2, header=False)
    for row in rows:
        table.add_row(*row)
    return table


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def plan_json(config: PipelineConfig, plan: Plan) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            return [plain(item) for item in value]
        if hasattr(value, "total_seconds"):
            return format_duration(value)
        return value

    return {"version": 1, "file": str(config.path), "ok": plan.ok, **plain(plan)}
